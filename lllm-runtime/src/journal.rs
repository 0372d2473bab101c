//! A run's journal: one JSON line per committed event, appended and written out before the run
//! builds on it, so that a run killed at any point can be resumed without sending an answered
//! request again or running a finished tool call again.
//!
//! Resuming runs the tactic again from its start with the journal as memory: each dialog gets back
//! the id it had (so the server sees the same sessions), each request already answered is answered
//! from the journal, each tool call already finished gets its journaled result. Where the journal
//! ends, the run goes on as usual, appending to the same file.
//!
//! A journal holds the conversation (it must, to resume it), but never an API key or a header.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lllm_core::{DialogId, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The journal format's version, in its first line.
pub const JOURNAL_VERSION: u32 = 1;
/// Longest line read back: one event holds one answer or one tool result.
const MAX_LINE_BYTES: u64 = 128 * 1024 * 1024;

/// How a run started: what `lllm resume` needs to start it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    /// The tactic file, as given.
    pub tactic: PathBuf,
    /// SHA-256 of the tactic file's bytes, hex.
    pub tactic_sha256: String,
    /// The input, when there was one.
    pub input: Option<String>,
    /// The `--var` variables.
    pub vars: serde_json::Map<String, Value>,
    /// Limits the run was started with over the tactic's (`--limit KEY=VALUE`), which a resume
    /// applies again before its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
}

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    /// The first line.
    Start {
        version: u32,
        #[serde(flatten)]
        start: RunStart,
    },
    /// A resume began here (a torn line just before it is the crash's and is ignored).
    Resumed,
    /// A dialog was opened or forked: the `nth` dialog of that alias in the agent.
    Dialog {
        agent: String,
        alias: String,
        nth: u32,
        id: DialogId,
    },
    /// The `n`-th answer of a dialog, as committed.
    Answer {
        dialog: DialogId,
        n: u32,
        message: Message,
    },
    /// A tool call is about to run.
    ToolStarted {
        dialog: DialogId,
        call: String,
        tool: String,
        arguments: Value,
    },
    /// A tool call's result, as the model reads it.
    ToolFinished {
        dialog: DialogId,
        call: String,
        content: String,
        is_error: bool,
    },
    /// A call waits for the user's confirmation: the run paused.
    Pending {
        dialog: DialogId,
        call: String,
        /// The agent whose model made the call (absent in journals of earlier versions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        tool: String,
        arguments: Value,
    },
    /// A step saved an answer as a variable.
    Saved { name: String, value: String },
    /// The run ended with this output.
    End { output: String },
}

/// Why a journal cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The file cannot be read or written (the cause says why).
    #[error("{}", path.display())]
    Io {
        /// The journal.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A run was asked to start a journal in a file that already holds one.
    #[error("{} already holds a journal: resume it with `lllm resume {}`, or give another file", path.display(), path.display())]
    Exists {
        /// The journal.
        path: PathBuf,
    },
    /// A line is not a journal event (and is not the torn last line of a crash).
    #[error("{}:{line}: not a journal event: {problem}", path.display())]
    Invalid {
        /// The journal.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        problem: String,
    },
}

/// A tool call that waits for the user's confirmation in a paused run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingCall {
    /// The dialog whose answer made the call.
    pub dialog: DialogId,
    /// The call's id (unique in its dialog).
    pub call: String,
    /// The agent whose model made it, when the journal knows.
    pub agent: Option<String>,
    /// The tool.
    pub tool: String,
    /// The arguments, as checked against the tool's parameters.
    pub arguments: Value,
}

/// What the journal remembers of the run so far, and what this process has used of it.
#[derive(Debug, Default)]
struct Memory {
    /// Calls that wait for a confirmation, in the order the run paused on them.
    pending: Vec<PendingCall>,
    dialogs: HashMap<(String, String, u32), DialogId>,
    answers: HashMap<(DialogId, u32), Message>,
    finished: HashMap<(DialogId, String), (String, bool)>,
    started: HashSet<(DialogId, String)>,
    end: Option<String>,
    /// Dialogs of each (agent, alias) opened by this process so far.
    opened: HashMap<(String, String), u32>,
    /// Answers asked of each dialog by this process so far.
    asked: HashMap<DialogId, u32>,
    /// Answers taken from the journal instead of the server.
    replayed: u64,
}

impl Memory {
    /// What an event of a journal read back says about the run.
    fn remember(&mut self, event: Event) {
        match event {
            Event::Start { .. } | Event::Resumed | Event::Saved { .. } => {}
            Event::Pending {
                dialog,
                call,
                agent,
                tool,
                arguments,
            } => self.remember_pending(PendingCall {
                dialog,
                call,
                agent,
                tool,
                arguments,
            }),
            Event::Dialog {
                agent,
                alias,
                nth,
                id,
            } => {
                self.dialogs.insert((agent, alias, nth), id);
            }
            Event::Answer { dialog, n, message } => {
                self.answers.insert((dialog, n), message);
            }
            Event::ToolStarted { dialog, call, .. } => {
                self.settle(dialog, &call);
                self.started.insert((dialog, call));
            }
            Event::ToolFinished {
                dialog,
                call,
                content,
                is_error,
            } => {
                self.settle(dialog, &call);
                self.finished.insert((dialog, call), (content, is_error));
            }
            Event::End { output } => self.end = Some(output),
        }
    }

    fn remember_pending(&mut self, pending: PendingCall) {
        self.settle(pending.dialog, &pending.call);
        self.pending.push(pending);
    }

    /// A call started, finished or was declined: it waits no more.
    fn settle(&mut self, dialog: DialogId, call: &str) {
        self.pending
            .retain(|p| !(p.dialog == dialog && p.call == call));
    }
}

/// An append-only journal of one run: one JSON line per committed event, written before the run
/// builds on it. A run resumed on it ([`Journal::resume`]) gets back its dialog ids, answers and tool
/// results from it, and goes on where it ends. It holds the conversation, never a key or a header.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    start: RunStart,
    memory: Mutex<Memory>,
    /// A resumed journal writes nothing until the run adds its first event: then the end of a torn
    /// line (when `Some(true)`) and a `resumed` marker go first. A refused resume leaves the file as
    /// it was.
    resume_marker: Mutex<Option<bool>>,
}

/// What a tool call should do, given the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolMemory {
    /// The journal has its result: use it, do not run the tool.
    Finished { content: String, is_error: bool },
    /// It started and never finished (the run crashed while it ran).
    Interrupted,
    /// The journal knows nothing of it: run it.
    New,
}

impl Journal {
    /// Starts a journal for a new run in `path`, which must not hold one already.
    pub fn create(path: impl Into<PathBuf>, start: RunStart) -> Result<Journal, JournalError> {
        let path = path.into();
        let io = |source| JournalError::Io {
            path: path.clone(),
            source,
        };
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            return Err(JournalError::Exists { path });
        }
        // The journal appears with its start line or not at all: it is written under a temporary
        // name beside it and renamed into place, so a run killed at any moment leaves either no
        // journal (and is started again) or one that can be resumed.
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let temporary = path.with_file_name(format!(
            ".{}.{}.new",
            name.as_deref().unwrap_or("journal"),
            std::process::id()
        ));
        let file = private_append(&temporary, true).map_err(io)?;
        let journal = Journal {
            path: temporary.clone(),
            file: Mutex::new(file),
            start: start.clone(),
            memory: Mutex::default(),
            resume_marker: Mutex::new(None),
        };
        let started = journal
            .append(&Event::Start {
                version: JOURNAL_VERSION,
                start,
            })
            .and_then(|()| std::fs::rename(&temporary, &path).map_err(io));
        if let Err(error) = started {
            std::fs::remove_file(&temporary).ok();
            return Err(error);
        }
        Ok(Journal { path, ..journal })
    }

    /// Opens the journal in `path` to resume its run: what it holds is remembered, and new events
    /// are appended after it.
    pub fn resume(path: impl Into<PathBuf>) -> Result<Journal, JournalError> {
        let path = path.into();
        let (start, memory, ends_cleanly) = read(&path)?;
        let file = private_append(&path, false).map_err(|source| JournalError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(Journal {
            path,
            file: Mutex::new(file),
            start,
            memory: Mutex::new(memory),
            resume_marker: Mutex::new(Some(!ends_cleanly)),
        })
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the run started.
    pub fn start(&self) -> &RunStart {
        &self.start
    }

    /// The run's output, when it finished.
    pub fn finished(&self) -> Option<String> {
        self.memory().end.clone()
    }

    /// How many answers came from the journal instead of the server so far.
    pub fn replayed_answers(&self) -> u64 {
        self.memory().replayed
    }

    /// Records the run's output.
    pub fn finish(&self, output: &str) -> Result<(), JournalError> {
        self.memory().end = Some(output.to_owned());
        self.append(&Event::End {
            output: output.to_owned(),
        })
    }

    /// Records a variable a step saved.
    pub fn saved(&self, name: &str, value: &str) -> Result<(), JournalError> {
        self.append(&Event::Saved {
            name: name.to_owned(),
            value: value.to_owned(),
        })
    }

    /// The id dialog `alias` of `agent` had in the journaled run, or `fresh` (recorded) when the
    /// journal does not go that far.
    pub(crate) fn dialog_id(
        &self,
        agent: &str,
        alias: &str,
        fresh: DialogId,
    ) -> Result<DialogId, JournalError> {
        let (nth, known) = {
            let mut memory = self.memory();
            let count = memory
                .opened
                .entry((agent.to_owned(), alias.to_owned()))
                .or_insert(0);
            let nth = *count;
            *count += 1;
            let known = memory
                .dialogs
                .get(&(agent.to_owned(), alias.to_owned(), nth))
                .copied();
            (nth, known)
        };
        if let Some(id) = known {
            return Ok(id);
        }
        self.append(&Event::Dialog {
            agent: agent.to_owned(),
            alias: alias.to_owned(),
            nth,
            id: fresh,
        })?;
        Ok(fresh)
    }

    /// The journaled answer to the next request of `dialog`, if the journal has it; either way, the
    /// request is counted. Returns the request's number too, for [`answered`](Self::answered).
    pub(crate) fn next_answer(&self, dialog: DialogId) -> (u32, Option<Message>) {
        let mut memory = self.memory();
        let count = memory.asked.entry(dialog).or_insert(0);
        let n = *count;
        *count += 1;
        let answer = memory.answers.get(&(dialog, n)).cloned();
        if answer.is_some() {
            memory.replayed += 1;
        }
        (n, answer)
    }

    /// Records the `n`-th answer of `dialog`.
    pub(crate) fn answered(
        &self,
        dialog: DialogId,
        n: u32,
        message: &Message,
    ) -> Result<(), JournalError> {
        self.append(&Event::Answer {
            dialog,
            n,
            message: message.clone(),
        })
    }

    /// What the journal knows of tool call `call` of `dialog`.
    pub(crate) fn tool(&self, dialog: DialogId, call: &str) -> ToolMemory {
        let memory = self.memory();
        let key = (dialog, call.to_owned());
        match memory.finished.get(&key) {
            Some((content, is_error)) => ToolMemory::Finished {
                content: content.clone(),
                is_error: *is_error,
            },
            None if memory.started.contains(&key) => ToolMemory::Interrupted,
            None => ToolMemory::New,
        }
    }

    /// Records that a tool call is about to run.
    pub(crate) fn tool_started(
        &self,
        dialog: DialogId,
        call: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<(), JournalError> {
        self.append(&Event::ToolStarted {
            dialog,
            call: call.to_owned(),
            tool: tool.to_owned(),
            arguments: arguments.clone(),
        })?;
        self.memory().settle(dialog, call);
        Ok(())
    }

    /// Records a tool call's result.
    pub(crate) fn tool_finished(
        &self,
        dialog: DialogId,
        call: &str,
        content: &str,
        is_error: bool,
    ) -> Result<(), JournalError> {
        self.append(&Event::ToolFinished {
            dialog,
            call: call.to_owned(),
            content: content.to_owned(),
            is_error,
        })?;
        self.memory().settle(dialog, call);
        Ok(())
    }

    /// Records a call that waits for confirmation.
    pub(crate) fn pending(&self, pending: PendingCall) -> Result<(), JournalError> {
        self.append(&Event::Pending {
            dialog: pending.dialog,
            call: pending.call.clone(),
            agent: pending.agent.clone(),
            tool: pending.tool.clone(),
            arguments: pending.arguments.clone(),
        })?;
        self.memory().remember_pending(pending);
        Ok(())
    }

    /// The calls that wait for a confirmation: those the run paused on that have not run or been
    /// declined since.
    pub fn pending_calls(&self) -> Vec<PendingCall> {
        self.memory().pending.clone()
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes one event as one line, with a single write, before returning: a crash after this
    /// point cannot lose it (the file is not synced per line; see the docs).
    fn append(&self, event: &Event) -> Result<(), JournalError> {
        let marker = self
            .resume_marker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(torn) = marker {
            if torn {
                // The crash tore the last line: end it, so that what follows starts a line.
                self.write_raw(b"\n")?;
            }
            self.write_line(&Event::Resumed)?;
        }
        self.write_line(event)
    }

    fn write_line(&self, event: &Event) -> Result<(), JournalError> {
        let mut line = serde_json::to_vec(event).map_err(|e| JournalError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.write_raw(&line)
    }

    fn write_raw(&self, bytes: &[u8]) -> Result<(), JournalError> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(bytes)
            .and_then(|()| file.flush())
            .map_err(|source| JournalError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// Reads a journal: its start, what it remembers, and whether its last line is whole.
fn read(path: &Path) -> Result<(RunStart, Memory, bool), JournalError> {
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

/// Opens `path` for appending; a file it creates is readable by its owner only (it holds the
/// conversation).
pub(crate) fn private_append(path: &Path, create: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// The SHA-256 of `bytes`, hex: how a journal tells whether its tactic file changed.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> RunStart {
        RunStart {
            tactic: "t.yaml".into(),
            tactic_sha256: content_hash(b"x"),
            input: Some("hi".into()),
            vars: serde_json::Map::new(),
            limits: Vec::new(),
        }
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("lllm-journal-{name}-{}", std::process::id()))
    }

    #[test]
    fn a_journal_remembers_dialogs_answers_and_tools_across_a_resume() {
        let path = temp("remember");
        std::fs::remove_file(&path).ok();
        let fresh = DialogId::new();
        {
            let journal = Journal::create(&path, start()).expect("create");
            assert_eq!(journal.dialog_id("a", "main", fresh).expect("id"), fresh);
            let (n, none) = journal.next_answer(fresh);
            assert_eq!((n, none), (0, None));
            journal
                .answered(fresh, 0, &Message::assistant("first"))
                .expect("answer");
            journal
                .tool_started(fresh, "c1", "t", &serde_json::json!({}))
                .expect("started");
            journal
                .tool_finished(fresh, "c1", "result", false)
                .expect("finished");
            journal
                .tool_started(fresh, "c2", "t", &serde_json::json!({}))
                .expect("started");
            assert!(matches!(
                Journal::create(&path, start()),
                Err(JournalError::Exists { .. })
            ));
        }
        // A torn line from a crash.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"{\"event\":\"answ"))
            .expect("tear");
        let journal = Journal::resume(&path).expect("resume");
        assert_eq!(journal.start(), &start());
        assert_eq!(
            journal.dialog_id("a", "main", DialogId::new()).expect("id"),
            fresh
        );
        assert_eq!(
            journal.next_answer(fresh).1.map(|m| m.text().to_owned()),
            Some("first".into())
        );
        assert_eq!(journal.next_answer(fresh).1, None, "not answered yet");
        assert_eq!(
            journal.tool(fresh, "c1"),
            ToolMemory::Finished {
                content: "result".into(),
                is_error: false
            }
        );
        assert_eq!(journal.tool(fresh, "c2"), ToolMemory::Interrupted);
        assert_eq!(journal.tool(fresh, "c3"), ToolMemory::New);
        journal.finish("done").expect("finish");
        drop(journal);
        // The torn line, followed by a resume, is no error; the run is finished.
        let again = Journal::resume(&path).expect("resume again");
        assert_eq!(again.finished().as_deref(), Some("done"));
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_broken_line_in_the_middle_is_an_error_naming_it() {
        let path = temp("broken");
        let good = serde_json::to_string(&Event::Start {
            version: JOURNAL_VERSION,
            start: start(),
        })
        .expect("json");
        std::fs::write(
            &path,
            format!("{good}\nnot json\n{{\"event\":\"end\",\"output\":\"x\"}}\n"),
        )
        .expect("write");
        let error = Journal::resume(&path).expect_err("broken");
        assert!(
            error.to_string().contains(":2: not a journal event"),
            "{error}"
        );
        std::fs::write(&path, "").expect("write");
        assert!(Journal::resume(&path).is_err());
        std::fs::remove_file(&path).ok();
    }
}
