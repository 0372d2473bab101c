//! Loading the skills of an agent's folders: each `DIR/NAME/SKILL.md`, checked, bounded.

use std::path::{Path, PathBuf};

use super::front::split;
use super::{
    Skill, SkillError, SkillProblem, SkillSet, MAX_FOLDER_ENTRIES, MAX_INDEX_BYTES, MAX_SKILLS,
    MAX_SKILL_BYTES,
};
use crate::files::read_regular;

/// Loads the skills of `dirs`, in name order.
pub(super) fn load<'p>(dirs: impl Iterator<Item = &'p Path>) -> Result<SkillSet, SkillError> {
    let mut skills: Vec<(Skill, PathBuf)> = Vec::new();
    for dir in dirs {
        for folder in folders(dir)? {
            if skills.len() >= MAX_SKILLS {
                return Err(at(dir, SkillProblem::TooMany));
            }
            let (skill, file) = one(&folder)?;
            if let Some((_, first)) = skills.iter().find(|(s, _)| s.name == skill.name) {
                let problem = SkillProblem::Duplicate {
                    name: skill.name.clone(),
                    first: first.clone(),
                };
                return Err(at(&file, problem));
            }
            skills.push((skill, file));
        }
    }
    skills.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let set = SkillSet {
        skills: skills.into_iter().map(|(s, _)| s).collect(),
    };
    let bytes = set.index().len();
    if bytes > MAX_INDEX_BYTES {
        let first = dirs_hint(&set);
        return Err(at(&first, SkillProblem::IndexTooLarge(bytes)));
    }
    Ok(set)
}

/// Where an index error is reported: the first skill's folder's parent.
fn dirs_hint(set: &SkillSet) -> PathBuf {
    set.skills
        .first()
        .and_then(|s| s.dir.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn at(file: &Path, problem: SkillProblem) -> SkillError {
    SkillError {
        file: file.to_path_buf(),
        position: None,
        problem,
    }
}

/// The skill folders of `dir` (its sub-folders with a `SKILL.md`), in name order; a link among
/// them is refused, other files are left (a README beside the skills).
fn folders(dir: &Path) -> Result<Vec<PathBuf>, SkillError> {
    let read = |e| at(dir, SkillProblem::Read(crate::ReadProblem::Io(e)));
    let mut found = Vec::new();
    for (n, entry) in std::fs::read_dir(dir).map_err(read)?.enumerate() {
        if n >= MAX_FOLDER_ENTRIES {
            return Err(at(dir, SkillProblem::TooManyEntries));
        }
        let entry = entry.map_err(read)?;
        let kind = entry.file_type().map_err(read)?;
        let path = entry.path();
        if kind.is_symlink() && path.join("SKILL.md").exists() {
            return Err(at(&path, SkillProblem::Link));
        }
        if kind.is_dir() && path.join("SKILL.md").symlink_metadata().is_ok() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// The skill of `folder`, and its `SKILL.md`.
fn one(folder: &Path) -> Result<(Skill, PathBuf), SkillError> {
    let file = folder.join("SKILL.md");
    let fail = |problem| at(&file, problem);
    let meta = file
        .symlink_metadata()
        .map_err(|e| fail(SkillProblem::Read(crate::ReadProblem::Io(e))))?;
    if meta.file_type().is_symlink() {
        return Err(fail(SkillProblem::Link));
    }
    let bytes = read_regular(&file, MAX_SKILL_BYTES).map_err(|e| fail(SkillProblem::Read(e)))?;
    let text = String::from_utf8(bytes).map_err(|_| fail(SkillProblem::NotUtf8))?;
    let (front, body) = split(&text).map_err(|(problem, position)| SkillError {
        file: file.clone(),
        position,
        problem,
    })?;
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name_at = |problem| SkillError {
        file: file.clone(),
        position: name_line(&text),
        problem,
    };
    if !valid_name(&front.name) {
        return Err(name_at(SkillProblem::BadName(front.name)));
    }
    if front.name != folder_name {
        return Err(name_at(SkillProblem::NameNotFolder {
            name: front.name,
            folder: folder_name,
        }));
    }
    let dir = folder
        .canonicalize()
        .map_err(|e| fail(SkillProblem::Read(crate::ReadProblem::Io(e))))?;
    let skill = Skill {
        name: front.name,
        description: front.description,
        allowed_tools: front.allowed_tools,
        dir,
        body: body.into(),
    };
    Ok((skill, file))
}

/// Lowercase letters, digits and hyphens, 1 to 64 of them (the Agent Skills format's rule).
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The line of the top-level `name:` key.
fn name_line(text: &str) -> Option<(usize, usize)> {
    text.lines()
        .position(|l| l.starts_with("name:") || l.starts_with("name :"))
        .map(|i| (i + 1, 1))
}
