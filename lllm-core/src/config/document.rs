//! Reading a tactic file: bytes to a checked YAML document with positions, and `base:` inheritance.

use std::path::{Path, PathBuf};

use serde_yaml::Value;

use super::error::{ConfigError, Position};
use super::positions::Positions;
use super::raw::RawTactic;
use crate::suggest::closest;

/// A tactic document, merged over its `base:` chain, with where each node came from.
pub(crate) struct Document {
    pub(crate) value: Value,
    pub(crate) positions: Positions,
}

impl Document {
    /// Reads `bytes` (from `path`) and, recursively, its bases. `chain` holds the files being read, to
    /// catch cycles.
    pub(crate) fn parse(
        bytes: &[u8],
        path: &Path,
        chain: &mut Vec<PathBuf>,
    ) -> Result<Document, ConfigError> {
        let text = std::str::from_utf8(bytes).map_err(|e| ConfigError::At {
            path: path.to_owned(),
            position: Position::of_offset(bytes, e.valid_up_to()),
            message: "the file is not valid UTF-8; save it as UTF-8".into(),
        })?;
        if text.trim().is_empty() {
            return Err(ConfigError::Field {
                path: path.to_owned(),
                field: "agent_configs".into(),
                message:
                    "the file is empty; a tactic needs at least `agent_configs` with one agent"
                        .into(),
            });
        }
        // Every key and type of this file is checked on its own, so errors point into the right file.
        serde_yaml::from_str::<RawTactic>(text).map_err(|e| yaml_error(path, text, &e))?;
        let mut value: Value =
            serde_yaml::from_str(text).map_err(|e| yaml_error(path, text, &e))?;
        let positions = Positions::of(text, path);
        let base = value
            .as_mapping_mut()
            .and_then(|m| m.remove("base"))
            .and_then(|b| b.as_str().map(str::to_owned));
        let Some(base) = base else {
            return Ok(Document { value, positions });
        };
        let at = |message: String| match positions.get("base") {
            Some((file, position)) => ConfigError::At {
                path: file.to_owned(),
                position,
                message: format!("base: {message}"),
            },
            None => ConfigError::Field {
                path: path.to_owned(),
                field: "base".into(),
                message,
            },
        };
        let base_path = path.parent().unwrap_or_else(|| Path::new(".")).join(&base);
        let canonical = base_path
            .canonicalize()
            .map_err(|e| at(format!("cannot read `{}`: {e}", base_path.display())))?;
        if chain.contains(&canonical) {
            let cycle: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
            return Err(at(format!(
                "`{base}` is already being read ({} → {}): bases may not form a cycle",
                cycle.join(" → "),
                canonical.display()
            )));
        }
        let bytes = std::fs::read(&base_path)
            .map_err(|e| at(format!("cannot read `{}`: {e}", base_path.display())))?;
        chain.push(canonical);
        let parent = Document::parse(&bytes, &base_path, chain)?;
        chain.pop();
        let mut merged = parent.value;
        merge(&mut merged, value);
        Ok(Document {
            value: merged,
            positions: parent.positions.overlay(positions),
        })
    }
}

/// Merges `over` into `base`: mappings merge key by key; lists and values are replaced.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(base), Value::Mapping(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// Turns a serde_yaml error into one with the position and, for an unknown key or variant, a suggestion.
pub(crate) fn yaml_error(path: &Path, text: &str, error: &serde_yaml::Error) -> ConfigError {
    let mut message = error.to_string();
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    message.push_str(&suggestion(&message));
    let Some(location) = error.location() else {
        return ConfigError::Field {
            path: path.to_owned(),
            field: "(document)".into(),
            message,
        };
    };
    // An error raised after a key was read (a model_args key) is located at its mapping; point at the
    // key itself when it can be found from there.
    let offset = first_backticked(&message)
        .and_then(|key| find_key(text, location.index(), key))
        .unwrap_or(location.index());
    ConfigError::At {
        path: path.to_owned(),
        position: Position::of_offset(text.as_bytes(), offset),
        message,
    }
}

fn first_backticked(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once('`')?;
    rest.split_once('`').map(|(word, _)| word)
}

/// The offset of `key` written as a mapping key (`key:`, `"key":`, `'key':`) at or after `from`.
fn find_key(text: &str, from: usize, key: &str) -> Option<usize> {
    let tail = text.get(from..)?;
    tail.match_indices(key).find_map(|(at, _)| {
        let before = tail[..at].chars().next_back();
        let quote = matches!(before, Some('"' | '\''));
        let start_ok =
            quote || before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
        let after = tail[at + key.len()..].trim_start_matches(['"', '\'']);
        let key_ok = after.trim_start_matches([' ', '\t']).starts_with(':');
        (start_ok && key_ok).then(|| from + at - usize::from(quote))
    })
}

/// For "unknown field `x`, expected one of `a`, `b`": " (did you mean `a`?)" when one is close.
fn suggestion(message: &str) -> String {
    let Some(rest) = message
        .split_once("unknown field `")
        .or_else(|| message.split_once("unknown variant `"))
        .map(|(_, rest)| rest)
    else {
        return String::new();
    };
    let Some((word, expected)) = rest.split_once('`') else {
        return String::new();
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    closest(word, candidates.iter().copied())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}
