//! The items of a batch: one JSON object a line, `{"id", "input", "vars"}`.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Read};
use std::path::Path;

use lllm_core::PromptVars;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::BatchError;

/// Longest input line: an item is one prompt and its variables.
const MAX_ITEM_BYTES: u64 = 16 * 1024 * 1024;

/// One item of a batch.
#[derive(Debug, Clone)]
pub struct BatchItem {
    /// Its id, as text: a string's value, or a number exactly as written (unique in the batch).
    pub id: String,
    /// The id as written in JSON (a number stays that number in the output, however large).
    pub id_json: Box<RawValue>,
    /// The input, if any.
    pub input: Option<String>,
    /// Its variables (over the batch's).
    pub vars: PromptVars,
}

/// Reads the items in `path`: one JSON object a line, `id` optional (the line number), ids unique.
/// An invalid line is an error naming the file and line.
pub fn read_items(path: &Path) -> Result<Vec<BatchItem>, BatchError> {
    let unreadable = |source| BatchError::Read {
        path: path.to_owned(),
        source,
    };
    // Never a FIFO or a device: opening one may wait, reading one may never end.
    if let Some(what) = lllm_core::not_regular(&std::fs::metadata(path).map_err(unreadable)?) {
        return Err(BatchError::NotAFile {
            path: path.to_owned(),
            what,
        });
    }
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut reader = std::io::BufReader::new(file);
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut number = 0;
    loop {
        let mut line = Vec::new();
        let read = (&mut reader)
            .take(MAX_ITEM_BYTES + 1)
            .read_until(b'\n', &mut line)
            .map_err(|source| BatchError::Read {
                path: path.to_owned(),
                source,
            })?;
        if read == 0 {
            break;
        }
        number += 1;
        let invalid = |problem: String| BatchError::Item {
            path: path.to_owned(),
            line: number,
            problem,
        };
        if read as u64 > MAX_ITEM_BYTES {
            return Err(invalid(format!(
                "an item is longer than {} MiB",
                MAX_ITEM_BYTES >> 20
            )));
        }
        let text = String::from_utf8(line).map_err(|_| invalid("not UTF-8".to_owned()))?;
        if text.trim().is_empty() {
            continue;
        }
        let item = parse_item(&text, number).map_err(invalid)?;
        if !seen.insert(item.id.clone()) {
            return Err(invalid(format!("the id `{}` is used twice", item.id)));
        }
        items.push(item);
    }
    Ok(items)
}

/// One line as an item; `number` is its line, the id when it has none. Its fields are read raw,
/// so that an id is kept exactly as written (a JSON number beyond 64 bits included).
fn parse_item(text: &str, number: usize) -> Result<BatchItem, String> {
    let mut object: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text).map_err(|e| {
        format!("each line must be a JSON object {{\"id\", \"input\", \"vars\"}}: {e}")
    })?;
    if let Some(key) = object
        .keys()
        .find(|k| !["id", "input", "vars"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key `{key}`; an item has `id`, `input` and `vars`"
        ));
    }
    let id_json = match object.remove("id") {
        Some(raw) => raw,
        None => RawValue::from_string(number.to_string()).map_err(|e| e.to_string())?,
    };
    let id = item_id(&id_json).ok_or("`id` must be a non-empty string or a number")?;
    let field = |name: &str| -> Result<Option<Value>, String> {
        object
            .get(name)
            .map(|raw| serde_json::from_str(raw.get()).map_err(|e| format!("`{name}`: {e}")))
            .transpose()
    };
    let input = match field("input")? {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err("`input` must be a string".to_owned()),
    };
    let vars = item_vars(field("vars")?)?;
    Ok(BatchItem {
        id,
        id_json,
        input,
        vars,
    })
}

/// An item's id as text: a non-empty string's value, or a number exactly as written.
pub(crate) fn item_id(raw: &RawValue) -> Option<String> {
    let text = raw.get().trim();
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text)
            .ok()
            .filter(|s| !s.is_empty());
    }
    let is_number = text.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    is_number.then(|| text.to_owned())
}

fn item_vars(vars: Option<Value>) -> Result<PromptVars, String> {
    match vars {
        None | Some(Value::Null) => Ok(PromptVars::new()),
        Some(Value::Object(map)) => {
            let map: Map<String, Value> = map;
            if let Some(bad) = map.keys().find(|k| !lllm_core::is_variable_name(k)) {
                return Err(format!("`{bad}` is not a variable name"));
            }
            Ok(map.into_iter().collect())
        }
        Some(_) => Err("`vars` must be an object".to_owned()),
    }
}
