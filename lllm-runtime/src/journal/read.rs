//! Reading a journal back, line by line, within bounds.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::event::Event;
use super::memory::Memory;
use super::{JournalError, RunStart, JOURNAL_VERSION, MAX_LINE_BYTES};

/// Reads a journal: its start, what it remembers, and whether its last line is whole.
pub(super) fn read(path: &Path) -> Result<(RunStart, Memory, bool), JournalError> {
    let invalid = |line: usize, problem: String| JournalError::Invalid {
        path: path.to_owned(),
        line,
        problem,
    };
    let mut lines = Lines::open(path)?;
    let mut memory = Memory::default();
    let mut start = None;
    // A line that does not parse is the crash's torn line only if a resume followed it, or if it
    // is the last line.
    let mut torn: Option<(usize, String)> = None;
    while let Some((number, text)) = lines.next()? {
        let event: Event = match serde_json::from_str(text.trim_end()) {
            Ok(event) => event,
            Err(e) => {
                if let Some((line, problem)) = torn.take() {
                    return Err(invalid(line, problem));
                }
                torn = Some((number, e.to_string()));
                continue;
            }
        };
        if let Some((line, problem)) = torn.take() {
            if event != Event::Resumed {
                return Err(invalid(line, problem));
            }
        }
        match event {
            Event::Start { version, start: s } => {
                if number != 1 {
                    return Err(invalid(number, "a second start".into()));
                }
                if version != JOURNAL_VERSION {
                    return Err(invalid(
                        number,
                        format!("version {version}; this lllm reads version {JOURNAL_VERSION}"),
                    ));
                }
                start = Some(s);
            }
            _ if start.is_none() => {
                return Err(invalid(
                    number,
                    "the first line must be the run's start".into(),
                ));
            }
            event => memory.remember(event),
        }
    }
    // The last line may be torn: ignored.
    let start = start.ok_or_else(|| invalid(1, "the journal is empty".into()))?;
    Ok((start, memory, lines.ends_cleanly))
}

/// The lines of a journal, each read within [`MAX_LINE_BYTES`], numbered from 1; blank ones
/// skipped.
struct Lines {
    path: PathBuf,
    reader: BufReader<File>,
    number: usize,
    /// Whether the last line read ends with a newline.
    ends_cleanly: bool,
}

impl Lines {
    fn open(path: &Path) -> Result<Lines, JournalError> {
        let file = File::open(path).map_err(|source| JournalError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(Lines {
            path: path.to_owned(),
            reader: BufReader::new(file),
            number: 0,
            ends_cleanly: true,
        })
    }

    fn next(&mut self) -> Result<Option<(usize, String)>, JournalError> {
        loop {
            let mut bytes = Vec::new();
            let read = (&mut self.reader)
                .take(MAX_LINE_BYTES)
                .read_until(b'\n', &mut bytes)
                .map_err(|source| JournalError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if read == 0 {
                return Ok(None);
            }
            self.number += 1;
            self.ends_cleanly = bytes.ends_with(b"\n");
            if !self.ends_cleanly && read as u64 == MAX_LINE_BYTES {
                return Err(JournalError::Invalid {
                    path: self.path.clone(),
                    line: self.number,
                    problem: format!("longer than {MAX_LINE_BYTES} bytes"),
                });
            }
            let text = String::from_utf8_lossy(&bytes);
            if !text.trim().is_empty() {
                return Ok(Some((self.number, text.into_owned())));
            }
        }
    }
}
