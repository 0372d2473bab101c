//! A batch's output file: one JSON line per finished item, appended as each finishes.

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lllm_core::Usage;
use serde_json::{json, Value};

use super::{item_id, BatchError};

/// How one item ended: its answer and usage, or its error.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemOutcome {
    /// The item was answered.
    Answered {
        /// The answer.
        output: String,
        /// Tokens of its run.
        usage: Usage,
    },
    /// The item failed (the error, with secrets left out).
    Failed {
        /// Why.
        error: String,
    },
}

impl ItemOutcome {
    /// The output line: `{"id", "output", "usage", "seconds"}` or `{"id", "error", "seconds"}`.
    pub fn line(&self, id: &Value, seconds: f64) -> Value {
        let seconds = (seconds * 1000.0).round() / 1000.0;
        match self {
            ItemOutcome::Answered { output, usage } => json!({
                "id": id,
                "output": output,
                "usage": {
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "total_tokens": usage.total_tokens(),
                },
                "seconds": seconds,
            }),
            ItemOutcome::Failed { error } => json!({"id": id, "error": error, "seconds": seconds}),
        }
    }
}

/// The output file of a batch, open for appending: readable by its owner only when created (it
/// holds answers); a line a crash tore is ended first, so that the next result starts a line.
#[derive(Debug)]
pub struct BatchOutput {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl BatchOutput {
    /// Opens (or creates) the output in `path`.
    pub fn open(path: &Path) -> Result<BatchOutput, BatchError> {
        let cannot = |source| BatchError::Write {
            path: path.to_owned(),
            source,
        };
        let torn = last_byte(path).is_some_and(|b| b != b'\n');
        let mut file = crate::journal::private_append(path, true).map_err(cannot)?;
        if torn {
            file.write_all(b"\n").map_err(cannot)?;
        }
        Ok(BatchOutput {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line and writes it out.
    pub fn append(&self, line: &Value) -> Result<(), BatchError> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(|source| BatchError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// The ids the output in `path` already answers (failed ones are tried again); none when there
    /// is no such file.
    pub fn answered_ids(path: &Path) -> Result<HashSet<String>, BatchError> {
        let Ok(file) = std::fs::File::open(path) else {
            return Ok(HashSet::new());
        };
        let mut ids = HashSet::new();
        for line in std::io::BufReader::new(file).lines() {
            let line = line.map_err(|source| BatchError::Read {
                path: path.to_owned(),
                source,
            })?;
            // A line torn by a crash is no answer.
            let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if object.contains_key("output") {
                if let Some(id) = object.get("id").and_then(item_id) {
                    ids.insert(id);
                }
            }
        }
        Ok(ids)
    }
}

/// The last byte of a file, if it has one.
fn last_byte(path: &Path) -> Option<u8> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::End(-1)).ok()?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte).ok()?;
    Some(byte[0])
}
