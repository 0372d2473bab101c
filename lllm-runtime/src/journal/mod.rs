//! A run's journal: one JSON line per committed event, appended and written out before the run
//! builds on it, so that a run killed at any point can be resumed without sending an answered
//! request again or running a finished tool call again.
//!
//! Resuming runs the tactic again from its start with the journal as memory: each dialog gets back
//! the id it had (so the server sees the same sessions), each request already answered is answered
//! from the journal, each tool call already finished gets its journaled result. Where the journal
//! ends, the run goes on as usual, appending to the same file.
//!
//! A journal holds the conversation (it must, to resume it), but never a header, and never a credential
//! of its run that it was told of ([`Journal::redact`]): a key a server echoes into an answer is
//! written as `[redacted]`.
#![doc = include_str!("../../../docs/durable.md")]

mod event;
mod file;
mod memory;
mod read;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lllm_core::secret::Secrets;
use lllm_core::{DialogId, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use event::Event;
use memory::Memory;

pub(crate) use file::private_append;
pub use memory::PendingCall;

/// The journal format's version, in its first line.
pub const JOURNAL_VERSION: u32 = 1;
/// Longest line read back: one event holds one answer or one tool result.
const MAX_LINE_BYTES: u64 = 128 * 1024 * 1024;

/// How a run started: what `lllm resume` needs to start it again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// applies again before its own. Written as `[{"max_requests": 5}]`; older journals' text
    /// (`["max_requests=5"]`) reads the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<lllm_core::LimitSetting>,
    /// The caller's conversation id the run answered under (`lllm serve`), which names its dialogs'
    /// sessions again on a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The parent conversation the caller named, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// The caller's earlier messages the run's first dialog started with, after its system prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seed: Vec<lllm_core::Message>,
    /// The dialogs the run continued (a served conversation's earlier turns), per agent: a resume
    /// starts from them again. Absent in journals of earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dialogs: Vec<(String, lllm_core::DialogTree)>,
    /// The caller's function tools the run offered (a served request's `tools`). Absent in journals
    /// of earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caller_tools: Vec<lllm_core::ToolSpec>,
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
    #[error("{} already holds a journal: resume it, or give another file", path.display())]
    Exists {
        /// The journal.
        path: PathBuf,
    },
    /// Another run holds the journal (a run journaled in it, or resumed from it, now).
    #[error("{} is in use by another run of it: one journal has one runner at a time; wait for that run to end", path.display())]
    Busy {
        /// The journal.
        path: PathBuf,
    },
    /// The file is not a regular file.
    #[error("{} is {what}, not a journal file: give a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is (`a directory`, `a named pipe (FIFO)`, `a device`).
        what: &'static str,
    },
    /// The file holds something that is not a journal.
    #[error("{} is not empty and holds no journal (its first line is not a run's start): give another file", path.display())]
    NotAJournal {
        /// The path.
        path: PathBuf,
    },
    /// A symbolic link to nothing: following it would create a file elsewhere.
    #[error("{} is a symbolic link to a file that does not exist: give the file itself", path.display())]
    DanglingLink {
        /// The path.
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
    /// Credentials of the run, left out of every line written (a server may echo a key back).
    secrets: Mutex<Secrets>,
    /// Where every line goes besides the file, once set (a queue worker's copy in JetStream).
    tap: Mutex<Option<JournalTap>>,
}

/// What a [`JournalTap`] calls with each line.
pub type LineSink = dyn Fn(&[u8]) + Send + Sync;

/// Receives every line a journal writes, right after it is written to the file.
#[derive(Clone)]
pub struct JournalTap(pub Arc<LineSink>);

impl std::fmt::Debug for JournalTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JournalTap")
    }
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
    /// Starts a journal for a new run in `path`, which must not hold one already. The journal appears
    /// whole or not at all (its start line is written under a temporary name beside it, then linked
    /// into place), and it is locked for this run until the journal is dropped.
    pub fn create(path: impl Into<PathBuf>, start: RunStart) -> Result<Journal, JournalError> {
        let path = path.into();
        let new = file::NewJournal::prepare(&path)?;
        let mut journal = Journal {
            path: new.temporary().to_owned(),
            file: Mutex::new(new.file()?),
            start: start.clone(),
            memory: Mutex::default(),
            resume_marker: Mutex::new(None),
            secrets: Mutex::default(),
            tap: Mutex::default(),
        };
        let started = journal.append(&Event::Start {
            version: JOURNAL_VERSION,
            start,
        });
        journal.path = new.publish(started)?;
        Ok(journal)
    }

    /// Opens the journal in `path` to resume its run: what it holds is remembered, and new events
    /// are appended after it. The journal is locked for this run until it is dropped: a second run
    /// of it at the same time is refused ([`JournalError::Busy`]).
    pub fn resume(path: impl Into<PathBuf>) -> Result<Journal, JournalError> {
        let path = path.into();
        let file = file::open_to_resume(&path)?;
        let (start, memory, ends_cleanly) = read::read(&path)?;
        Ok(Journal {
            path,
            file: Mutex::new(file),
            start,
            memory: Mutex::new(memory),
            resume_marker: Mutex::new(Some(!ends_cleanly)),
            secrets: Mutex::default(),
            tap: Mutex::default(),
        })
    }

    /// Sends every line written from now on to `tap` as well, right after it reached the file (the
    /// lines written before are in the file).
    pub fn tap(&self, tap: JournalTap) {
        *self.tap.lock().unwrap_or_else(|p| p.into_inner()) = Some(tap);
    }

    /// Records in the journal in `path` that its run was cancelled, once the run let go of it (a
    /// journal in use by a run is [`JournalError::Busy`]). A resume may still continue the run.
    pub fn record_cancel(path: impl Into<PathBuf>) -> Result<(), JournalError> {
        let journal = Self::resume(path)?;
        let torn = journal
            .resume_marker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if torn == Some(true) {
            journal.write_raw(b"\n")?;
        }
        journal.write_line(&Event::Cancelled)
    }

    /// Whether the run was cancelled, and not resumed since.
    pub fn was_cancelled(&self) -> bool {
        self.memory().cancelled
    }

    /// From now on, every line written leaves out these credentials (`[redacted]` in their place),
    /// wherever they appear: in answers a server echoed them into, in tool arguments and results.
    /// The engine gives a run's journal its tactic's credentials.
    pub fn redact(&self, secrets: &Secrets) {
        self.secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .merge(secrets);
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
        })?;
        // Remembered as a read journal would: a pause reports the text beside its calls.
        self.memory().answers.insert((dialog, n), message.clone());
        Ok(())
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

    /// Records the caller's result of a call the run handed to it (a caller's tool): a resume gives
    /// it to the model where the call was. `Err` is a problem the model reads as `error: ...`.
    pub fn caller_result(
        &self,
        dialog: DialogId,
        call: &str,
        result: Result<&str, &str>,
    ) -> Result<(), JournalError> {
        let (content, is_error) = match result {
            Ok(content) => (content.to_owned(), false),
            Err(problem) => (format!("error: {problem}"), true),
        };
        self.tool_finished(dialog, call, &content, is_error)?;
        // The run about to resume on this journal answers the call from memory, as a resume of
        // the file would.
        self.memory()
            .finished
            .insert((dialog, call.to_owned()), (content, is_error));
        Ok(())
    }

    /// Records the caller's new user message, given instead of results: a resume gives it to
    /// `dialog` right after the results of the round that made call `after` (answered "not run").
    pub fn caller_turn(
        &self,
        dialog: DialogId,
        after: &str,
        text: &str,
    ) -> Result<(), JournalError> {
        self.append(&Event::CallerTurn {
            dialog,
            after: after.to_owned(),
            text: text.to_owned(),
        })?;
        self.memory()
            .caller_turns
            .insert((dialog, after.to_owned()), text.to_owned());
        Ok(())
    }

    /// The caller's user message that follows the round of call `call` of `dialog`, if it sent one.
    pub(crate) fn caller_turn_after(&self, dialog: DialogId, call: &str) -> Option<String> {
        self.memory()
            .caller_turns
            .get(&(dialog, call.to_owned()))
            .cloned()
    }

    /// The latest journaled answer of `dialog`.
    pub(crate) fn last_answer(&self, dialog: DialogId) -> Option<Message> {
        let memory = self.memory();
        memory
            .answers
            .iter()
            .filter(|((d, _), _)| *d == dialog)
            .max_by_key(|((_, n), _)| *n)
            .map(|(_, message)| message.clone())
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
        let unwritable = |e: serde_json::Error| JournalError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        };
        let secrets = self.secrets.lock().unwrap_or_else(|p| p.into_inner());
        let mut line = if secrets.is_empty() {
            serde_json::to_vec(event).map_err(unwritable)?
        } else {
            let mut value = serde_json::to_value(event).map_err(unwritable)?;
            secrets.redact_json(&mut value);
            serde_json::to_vec(&value).map_err(unwritable)?
        };
        drop(secrets);
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
            })?;
        // Still under the file's lock, so the tap sees the lines in the file's order.
        if let Some(JournalTap(tap)) = &*self.tap.lock().unwrap_or_else(|p| p.into_inner()) {
            tap(bytes);
        }
        Ok(())
    }
}

/// The SHA-256 of `bytes`, hex: how a journal tells whether its tactic file changed.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
