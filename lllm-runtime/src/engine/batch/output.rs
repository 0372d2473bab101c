//! A batch's output file: one JSON line per finished item, appended as each finishes.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lllm_core::Usage;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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
    /// How an item's run of `tactic` ended: its answer and usage, or its error with the tactic's
    /// secrets left out.
    pub(crate) fn of(
        run: Result<crate::engine::RunOutput, crate::engine::RunError>,
        tactic: &crate::engine::PreparedTactic,
    ) -> ItemOutcome {
        match run {
            Ok(output) => ItemOutcome::Answered {
                output: output.answer,
                usage: output.usage,
            },
            Err(error) => ItemOutcome::Failed {
                error: tactic.secrets().redact(&lllm_core::full_message(&error)),
            },
        }
    }

    /// The output line: `{"id", "output", "usage", "seconds"}` or `{"id", "error", "seconds"}`, the
    /// id exactly as the item wrote it.
    pub fn line(&self, id: &RawValue, seconds: f64) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            id: &'a RawValue,
            #[serde(skip_serializing_if = "Option::is_none")]
            output: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            usage: Option<Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a str>,
            seconds: f64,
        }
        let seconds = (seconds * 1000.0).round() / 1000.0;
        let line = match self {
            ItemOutcome::Answered { output, usage } => Line {
                id,
                output: Some(output),
                usage: Some(json!({
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "total_tokens": usage.total_tokens(),
                })),
                error: None,
                seconds,
            },
            ItemOutcome::Failed { error } => Line {
                id,
                output: None,
                usage: None,
                error: Some(error),
                seconds,
            },
        };
        // A line of strings, numbers and a raw value always serialises.
        serde_json::to_string(&line).unwrap_or_default()
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
    /// Opens (or creates) the output in `path`, a regular file or a new one, and locks it for this
    /// batch: a second batch writing the same output at once is refused ([`BatchError::Busy`]).
    pub fn open(path: &Path) -> Result<BatchOutput, BatchError> {
        let cannot = |source| BatchError::Write {
            path: path.to_owned(),
            source,
        };
        regular_or_new(path)?;
        let mut file = crate::journal::private_append(path, true).map_err(cannot)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(BatchError::Busy {
                    path: path.to_owned(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(cannot(e)),
        }
        if last_byte(path).is_some_and(|b| b != b'\n') {
            // A line a crash tore is ended first, so that the next result starts a line.
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
    pub fn append(&self, line: &str) -> Result<(), BatchError> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(|source| BatchError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// The ids the output in `path` already answers (failed ones are tried again); none when there
    /// is no such file. Each line is read within [`MAX_OUTPUT_LINE_BYTES`]: a longer one (or a line a
    /// crash tore) is no answer.
    pub fn answered_ids(path: &Path) -> Result<HashSet<String>, BatchError> {
        Self::results(path).map(|(answered, _)| answered)
    }

    /// The ids the output in `path` answers, and how many error lines each failed id has (a queue
    /// counts its attempts by them).
    pub fn results(path: &Path) -> Result<(HashSet<String>, HashMap<String, u32>), BatchError> {
        let unreadable = |source| BatchError::Read {
            path: path.to_owned(),
            source,
        };
        let (mut answered, mut failed) = (HashSet::new(), HashMap::new());
        if !regular_or_new(path)? {
            return Ok((answered, failed));
        }
        let file = std::fs::File::open(path).map_err(unreadable)?;
        let mut reader = std::io::BufReader::new(file);
        let mut line = Vec::new();
        while let Some(whole) = read_line_within(&mut reader, &mut line).map_err(unreadable)? {
            match whole.then(|| line_id(&line)).flatten() {
                Some((id, true)) => {
                    answered.insert(id);
                }
                Some((id, false)) => *failed.entry(id).or_insert(0) += 1,
                None => {}
            }
        }
        Ok((answered, failed))
    }
}

/// Longest line of an output read back: an answer is bounded by what lllm reads of a server's answer.
pub const MAX_OUTPUT_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Reads the next line into `line` (without its newline), keeping at most
/// [`MAX_OUTPUT_LINE_BYTES`]: `Some(true)` a whole line, `Some(false)` one that was cut, `None` the
/// end of the file.
fn read_line_within(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut whole = true;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(whole));
        }
        any = true;
        let (piece, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(end) => (&chunk[..end], Some(end + 1)),
            None => (chunk, None),
        };
        if line.len() + piece.len() > MAX_OUTPUT_LINE_BYTES {
            whole = false;
        } else if whole {
            line.extend_from_slice(piece);
        }
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(whole));
        }
    }
}

/// The id of an output line, and whether it holds an answer (else an error).
fn line_id(line: &[u8]) -> Option<(String, bool)> {
    #[derive(Deserialize)]
    struct Answered<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        output: Option<serde::de::IgnoredAny>,
    }
    let answered: Answered<'_> = serde_json::from_slice(line).ok()?;
    Some((item_id(answered.id?)?, answered.output.is_some()))
}

/// Whether `path` is a regular file (`false`: there is none yet); anything else is refused.
fn regular_or_new(path: &Path) -> Result<bool, BatchError> {
    match std::fs::metadata(path) {
        Ok(meta) => match lllm_core::not_regular(&meta) {
            Some(what) => Err(BatchError::NotAFile {
                path: path.to_owned(),
                what,
            }),
            None => Ok(true),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(BatchError::Read {
            path: path.to_owned(),
            source,
        }),
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
