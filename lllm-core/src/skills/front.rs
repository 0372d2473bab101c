//! `SKILL.md`'s front matter: the YAML between the opening `---` line and the next one.

use serde_json::{Map, Value};

use super::{SkillProblem, MAX_DESCRIPTION_CHARS};

/// What the front matter says; its other keys (`license`, `metadata`, ...) are read and left.
#[derive(Debug)]
pub(super) struct Front {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) allowed_tools: Option<Vec<String>>,
}

/// Where a problem sits: a 1-based line and column of `SKILL.md`, when known.
pub(super) type Located = (SkillProblem, Option<(usize, usize)>);

/// Splits `text` into its front matter (parsed) and its body.
pub(super) fn split(text: &str) -> Result<(Front, &str), Located> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_line = text.lines().next().unwrap_or("");
    if first_line.trim_end() != "---" {
        return Err((SkillProblem::NoFrontMatter, Some((1, 1))));
    }
    let after = &text[first_line.len()..];
    let after = after
        .strip_prefix("\r\n")
        .or(after.strip_prefix('\n'))
        .unwrap_or(after);
    let mut offset = 0;
    let mut end = None;
    for line in after.split_inclusive('\n') {
        if line.trim_end() == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = end else {
        return Err((SkillProblem::NoFrontMatter, Some((1, 1))));
    };
    let front = parse(&after[..yaml_end])?;
    Ok((front, after[body_start..].trim_start_matches(['\r', '\n'])))
}

/// The front matter's keys, checked.
fn parse(yaml: &str) -> Result<Front, Located> {
    let value: Value = serde_saphyr::from_str(yaml).map_err(|e| {
        // The YAML starts on the file's second line.
        let at = e
            .location()
            .filter(|l| l.line() > 0)
            .map(|l| (l.line() as usize + 1, l.column() as usize));
        let message = e.without_snippet().to_string();
        let message = message.lines().next().unwrap_or("");
        // The parser counts lines from the front matter's first; the error's own position is the
        // file's, so its words keep only what is wrong.
        let message = match message.rfind(" at line ") {
            Some(i) if at.is_some() => message[..i].to_owned(),
            _ => message.to_owned(),
        };
        (SkillProblem::NotYaml(message), at)
    })?;
    let at_top = Some((2, 1));
    let Value::Object(map) = value else {
        return Err((SkillProblem::NotAMapping, at_top));
    };
    let line_of = |key: &str| line_of(yaml, key).or(at_top);
    let name = text(&map, "name").map_err(|p| (p, line_of("name")))?;
    let description = text(&map, "description").map_err(|p| (p, line_of("description")))?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err((SkillProblem::LongDescription(chars), line_of("description")));
    }
    let allowed_tools = allowed(&map).map_err(|p| (p, line_of("allowed-tools")))?;
    Ok(Front {
        name,
        description,
        allowed_tools,
    })
}

/// A required key's text.
fn text(map: &Map<String, Value>, key: &'static str) -> Result<String, SkillProblem> {
    match map.get(key) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        None | Some(Value::Null) | Some(Value::String(_)) => Err(SkillProblem::Missing(key)),
        Some(_) => Err(SkillProblem::WrongType {
            key,
            expected: "text",
        }),
    }
}

/// `allowed-tools`: a list of names, or one text of names separated by commas or spaces.
fn allowed(map: &Map<String, Value>) -> Result<Option<Vec<String>>, SkillProblem> {
    let wrong = SkillProblem::WrongType {
        key: "allowed-tools",
        expected: "a list of tool names, or text of names separated by commas or spaces",
    };
    match map.get("allowed-tools") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let separated: Vec<String> = if text.contains(',') {
                text.split(',').map(|t| t.trim().to_owned()).collect()
            } else {
                text.split_whitespace().map(str::to_owned).collect()
            };
            Ok(Some(
                separated.into_iter().filter(|t| !t.is_empty()).collect(),
            ))
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(|s| s.trim().to_owned()))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or(wrong),
        Some(_) => Err(wrong),
    }
}

/// The 1-based line and column of `key` at the top level of the front matter (on the file's
/// lines: the YAML starts on the second).
fn line_of(yaml: &str, key: &str) -> Option<(usize, usize)> {
    yaml.lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| (i + 2, 1))
}
