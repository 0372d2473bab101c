//! A trial's tape: every model answer of one trial with the messages that asked for it, written by
//! [`Recorder`] (`--record DIR`) and served by [`Replayer`] (`--replay DIR`) with no server.
//!
//! One JSON line per answered request: `{"messages": [...], "answer": {...}}`, the messages in the
//! wire's terms (role, content, tool calls, the call answered) and the answer as lllm keeps it
//! (text, tool calls, usage, finish reason). A replayed request takes the first unused answer whose
//! messages are the request's: order-free, so concurrent agents of one tactic replay however their
//! requests interleave. A request no answer fits is *drift*.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lllm_core::{Message, Role, ToolCall};
use serde::{Deserialize, Serialize};

use crate::invoker::{ChatRequest, ChatResponse, InvokeError, Invoker};

/// Largest tape read back: far more than a trial's answers hold.
const MAX_TAPE_BYTES: u64 = 64 * 1024 * 1024;

/// A message as the wire carries it: what a replayed request is compared on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: Role,
    /// Its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// An assistant message's tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A tool message's call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl From<&Message> for WireMessage {
    fn from(m: &Message) -> Self {
        WireMessage {
            role: m.role,
            content: m.content.clone(),
            tool_calls: m.tool_calls.clone(),
            tool_call_id: m.tool_call_id.clone(),
        }
    }
}

/// One line of a tape.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    messages: Vec<WireMessage>,
    answer: Message,
}

fn wire(request: &ChatRequest) -> Vec<WireMessage> {
    request.messages.iter().map(WireMessage::from).collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends through `inner` and appends every answer to a tape file.
#[derive(Debug)]
pub struct Recorder {
    inner: Arc<dyn Invoker>,
    file: Mutex<std::fs::File>,
}

impl Recorder {
    /// Records into `path` (created, or truncated), sending through `inner`.
    pub fn create(path: &Path, inner: Arc<dyn Invoker>) -> std::io::Result<Recorder> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::File::create(path)?;
        Ok(Recorder {
            inner,
            file: Mutex::new(file),
        })
    }
}

#[async_trait]
impl Invoker for Recorder {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let response = self.inner.invoke(request).await?;
        let entry = Entry {
            messages: wire(request),
            answer: response.message.clone(),
        };
        let mut line = serde_json::to_vec(&entry).map_err(|e| InvokeError::Request {
            problem: format!("cannot record the answer: {e}"),
        })?;
        line.push(b'\n');
        lock(&self.file)
            .write_all(&line)
            .map_err(|e| InvokeError::Request {
                problem: format!("cannot record the answer: {e}"),
            })?;
        Ok(response)
    }
}

/// A request the tape has no answer for: the first message that differs from the closest recorded
/// request, both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// The index of the first differing message (0 is the system prompt's).
    pub index: usize,
    /// That message as recorded (`None`: the recording has fewer messages, or no request left).
    pub recorded: Option<WireMessage>,
    /// That message as sent now (`None`: the request has fewer messages).
    pub sent: Option<WireMessage>,
}

/// Answers from a tape, with no server.
#[derive(Debug)]
pub struct Replayer {
    file: PathBuf,
    entries: Mutex<Vec<Option<Entry>>>,
    drift: Mutex<Option<Drift>>,
}

impl Replayer {
    /// Reads the tape at `path`.
    pub fn open(path: &Path) -> std::io::Result<Replayer> {
        let bytes = lllm_core::read_regular(path, MAX_TAPE_BYTES).map_err(|p| {
            std::io::Error::other(format!("cannot read the recording {}: {p}", path.display()))
        })?;
        let mut entries = Vec::new();
        for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let entry: Entry = serde_json::from_slice(line).map_err(|e| {
                std::io::Error::other(format!(
                    "{}:{}: not a recorded answer: {e}",
                    path.display(),
                    n + 1
                ))
            })?;
            entries.push(Some(entry));
        }
        Ok(Replayer {
            file: path.to_owned(),
            entries: Mutex::new(entries),
            drift: Mutex::new(None),
        })
    }

    /// The first drift of the trial, if any.
    pub fn drift(&self) -> Option<Drift> {
        lock(&self.drift).clone()
    }

    /// The drift of `sent` against the first unused recorded request (the one it most likely
    /// stands for: the one sharing the longest prefix, the earliest among equals).
    fn drift_of(entries: &[Option<Entry>], sent: &[WireMessage]) -> Drift {
        let common = |recorded: &[WireMessage]| {
            recorded
                .iter()
                .zip(sent)
                .take_while(|(a, b)| a == b)
                .count()
        };
        let best_len = entries
            .iter()
            .flatten()
            .map(|e| common(&e.messages))
            .max()
            .unwrap_or(0);
        let recorded = entries
            .iter()
            .flatten()
            .find(|e| common(&e.messages) == best_len)
            .map(|e| &e.messages);
        Drift {
            index: best_len,
            recorded: recorded.and_then(|m| m.get(best_len).cloned()),
            sent: sent.get(best_len).cloned(),
        }
    }
}

#[async_trait]
impl Invoker for Replayer {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let sent = wire(request);
        let mut entries = lock(&self.entries);
        let found = entries
            .iter()
            .position(|e| e.as_ref().is_some_and(|e| e.messages == sent));
        if let Some(i) = found {
            let entry = entries[i].take().expect("found unused");
            return Ok(ChatResponse::new(entry.answer));
        }
        let drift = Self::drift_of(&entries, &sent);
        let index = drift.index;
        lock(&self.drift).get_or_insert(drift);
        Err(InvokeError::Request {
            problem: format!(
                "drift: no recorded answer in {} fits this request (message {index} differs)",
                self.file.display()
            ),
        })
    }
}
