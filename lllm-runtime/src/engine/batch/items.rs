//! The items of a batch: one JSON object a line, `{"id", "input", "vars"}`.

use std::collections::HashSet;
use std::io::{BufRead, Read};
use std::path::Path;

use lllm_core::PromptVars;
use serde_json::{Map, Value};

use super::BatchError;

/// Longest input line: an item is one prompt and its variables.
const MAX_ITEM_BYTES: u64 = 16 * 1024 * 1024;

/// One item of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchItem {
    /// Its id, as text (unique in the batch).
    pub id: String,
    /// The id as written (a number stays a number in the output).
    pub id_value: Value,
    /// The input, if any.
    pub input: Option<String>,
    /// Its variables (over the batch's).
    pub vars: PromptVars,
}

/// Reads the items in `path`: one JSON object a line, `id` optional (the line number), ids unique.
/// An invalid line is an error naming the file and line.
pub fn read_items(path: &Path) -> Result<Vec<BatchItem>, BatchError> {
    let file = std::fs::File::open(path).map_err(|source| BatchError::Read {
        path: path.to_owned(),
        source,
    })?;
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

/// One line as an item; `number` is its line, the id when it has none.
fn parse_item(text: &str, number: usize) -> Result<BatchItem, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?;
    let Value::Object(mut object) = value else {
        return Err("each line must be a JSON object {\"id\", \"input\", \"vars\"}".to_owned());
    };
    if let Some(key) = object
        .keys()
        .find(|k| !["id", "input", "vars"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key `{key}`; an item has `id`, `input` and `vars`"
        ));
    }
    let id_value = object.remove("id").unwrap_or_else(|| Value::from(number));
    let id = item_id(&id_value).ok_or("`id` must be a non-empty string or a number")?;
    let input = match object.remove("input") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err("`input` must be a string".to_owned()),
    };
    let vars = item_vars(object.remove("vars"))?;
    Ok(BatchItem {
        id,
        id_value,
        input,
        vars,
    })
}

/// An item's id as text: a non-empty string, or a number as written.
pub(crate) fn item_id(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
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
