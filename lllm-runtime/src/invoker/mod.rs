//! Invokers: what sends a model call and brings its answer back.
#![doc = include_str!("../../../docs/fallback.md")]

mod dry_run;
mod error;
mod json;
mod models;
mod openai;
mod service;
mod stream;
mod wire;
mod wire_message;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use lllm_core::{DialogId, Message, MessageLog, ModelArgs, Profile, RequestFields, ToolSpec};
use serde_json::Value;

pub use crate::endpoints::Urgency;
pub use dry_run::DryRunInvoker;
pub use error::{InvokeError, WaitLimit};
pub use openai::OpenAiInvoker;
pub use service::ResponseLimits;
pub(crate) use wire::SentHints;
pub use wire::{PreparedRequest, ServerDefaults};

// The namespace's names defined elsewhere.
pub use crate::endpoints::{CallStats, Endpoints};

/// Per-request timeout when `model_args.timeout` is not set.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One model call, as an agent asks for it: what is sent (the model, the messages, the arguments,
/// the hint fields, the tools, `tool_choice`, `response_format`), and, in [`notes`](Self::notes),
/// what lllm keeps about it besides (never sent).
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Model name as configured; a provider prefix such as `hosted_vllm/` is stripped when sent.
    pub model: String,
    /// The dialog's messages (shared with the dialog, not copied).
    pub messages: MessageLog,
    /// The agent's model arguments.
    pub model_args: Arc<ModelArgs>,
    /// Header and body fields from the inference hints, to be merged under the user's explicit ones.
    pub hint_fields: RequestFields,
    /// Tools offered to the model (none: no `tools` field).
    pub tools: Vec<ToolSpec>,
    /// `tool_choice`, when set (lllm sets `"none"` for the final, tool-less turn of a respond).
    pub tool_choice: Option<Value>,
    /// `response_format`, when the answer must match a JSON Schema.
    pub response_format: Option<Value>,
    /// What lllm keeps about the request besides what it sends.
    pub notes: RequestNotes,
    /// The hints the request carries as sent, read once, when a layer first asks.
    sent: SentOnce,
}

/// What lllm keeps about a request besides what it sends (none of it is sent): whose dialog it
/// answers, how urgent it is, which of the agent's endpoints it goes to, and how its hint fields
/// read. Traces, spans, run events and the call counts record it.
#[derive(Debug, Clone, Default)]
pub struct RequestNotes {
    /// The profile `hint_fields` were shaped for, when the request comes from hints (traces, spans
    /// and the default key's rule read the hints back where that profile puts them).
    pub profile: Option<Profile>,
    /// The dialog being answered, when an agent sends the request.
    pub dialog: Option<DialogId>,
    /// The dialog it was forked from, if any.
    pub parent_dialog: Option<DialogId>,
    /// The dialog's alias in its agent, when a respond sends the request (for the run's events).
    pub dialog_alias: Option<String>,
    /// How many times the dialog's window was compacted.
    pub window: u32,
    /// How urgent the request is when it must wait for a slot (`model_args.max_in_flight`).
    pub urgency: Urgency,
    /// The hint fields for each endpoint of `model_args.fallback`, in order, shaped for its profile
    /// and arguments (empty: no hints).
    pub fallback_hints: Vec<RequestFields>,
    /// The endpoint this request goes to: 0 for the agent's own, n for `model_args.fallback[n-1]`.
    pub hop: u32,
    /// Retries of the call before this attempt (0: its first request), for its span.
    pub(crate) retry: u32,
    /// Endpoints the call moved past since its previous attempt, for the call counts.
    pub(crate) moved: u32,
}

/// [`SentHints`] read at most once per request. A clone starts empty, so a request copied and
/// changed is read afresh; layers only ever see a request by reference, so it cannot change between
/// the reads of one call.
#[derive(Default)]
struct SentOnce(OnceLock<SentHints>);

impl Clone for SentOnce {
    fn clone(&self) -> Self {
        SentOnce::default()
    }
}

impl std::fmt::Debug for SentOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SentOnce")
    }
}

impl ChatRequest {
    /// A request for these messages with nothing but the model, its arguments and the hint fields.
    pub fn new(
        model: impl Into<String>,
        messages: MessageLog,
        model_args: Arc<ModelArgs>,
        hint_fields: RequestFields,
    ) -> Self {
        ChatRequest {
            model: model.into(),
            messages,
            model_args,
            hint_fields,
            tools: Vec::new(),
            tool_choice: None,
            response_format: None,
            notes: RequestNotes::default(),
            sent: SentOnce::default(),
        }
    }

    /// This request sent to `model_args.fallback[index]` instead: that endpoint's arguments over
    /// the agent's (never its credentials), model name, profile and hints; `None` past the last.
    pub fn on_fallback(&self, index: usize) -> Option<ChatRequest> {
        let entry = self.model_args.fallback.get(index)?;
        let mut request = self.clone();
        request.model_args = Arc::new(entry.endpoint_over(&self.model_args.endpoint).into());
        if let Some(model) = &entry.model {
            request.model = model.clone();
        }
        let notes = &mut request.notes;
        if let Some(fields) = notes.fallback_hints.get(index) {
            request.hint_fields = fields.clone();
        }
        if entry.profile.is_some() && !notes.fallback_hints.is_empty() {
            notes.profile = entry.profile;
        }
        notes.hop = u32::try_from(index + 1).unwrap_or(u32::MAX);
        Some(request)
    }

    /// The session and parent session this request is recorded under (traces, run events): those
    /// it carries as sent, else its dialog's id and its parent dialog's.
    pub(crate) fn recorded_sessions(&self) -> (Option<String>, Option<String>) {
        let sent = self.sent_hints();
        let session = sent
            .session
            .clone()
            .or_else(|| self.notes.dialog.map(|d| d.to_string()));
        let parent = sent
            .parent_session
            .clone()
            .or_else(|| self.notes.parent_dialog.map(|d| d.to_string()));
        (session, parent)
    }

    /// The endpoint this request goes to, as it may be shown: its `api_base` without credentials
    /// (`None`: the default server of `OPENAI_BASE_URL`).
    pub fn endpoint(&self) -> Option<String> {
        self.model_args
            .endpoint
            .api_base
            .as_deref()
            .map(lllm_core::secret::redact_url)
    }

    /// The hints this request carries as it is sent (after the merge under the agent's parameters
    /// and the user's `extra_body`), read the first time a layer asks and kept for every attempt.
    pub(crate) fn sent_hints(&self) -> &SentHints {
        self.sent.0.get_or_init(|| SentHints::of(self))
    }
}

/// A piece of an answer as it streams in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Answer text.
    Text(&'a str),
    /// Reasoning text (`reasoning_content` / `reasoning`).
    Reasoning(&'a str),
}

/// The answer to one model call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The assistant message, with usage and finish reason when the server sent them.
    pub message: Message,
    /// The server's id for the completion, if any.
    pub id: Option<String>,
    /// The model that answered, as the server names it, if it says.
    pub model: Option<String>,
    /// The worker that served the answer, when the server reports it (Dynamo's
    /// `nvext.worker_id`, asked for with `nvext.extra_fields: ["worker_id"]`).
    pub worker: Option<String>,
}

impl ChatResponse {
    /// An answer with nothing but the message (no id, model or worker).
    pub fn new(message: Message) -> Self {
        ChatResponse {
            message,
            id: None,
            model: None,
            worker: None,
        }
    }
}

/// Sends model calls. Implementations must be cheap to share between agents and tasks.
///
/// An invoker makes exactly one attempt per call: an [`Agent`](crate::Agent) wraps it in its own layers
/// for retries, timeouts and tracing, so that every attempt of one respond carries the same dialog's
/// hints.
#[async_trait]
pub trait Invoker: Send + Sync + std::fmt::Debug {
    /// Sends `request` once.
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError>;

    /// Sends `request` once, streaming: `on_delta` gets each piece of text as it arrives, and the
    /// result is the whole answer. The default sends without streaming and reports the answer as one
    /// piece.
    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let response = self.invoke(request).await?;
        if let Some(reasoning) = response.message.reasoning.as_deref() {
            on_delta(Delta::Reasoning(reasoning));
        }
        if let Some(text) = response.message.content.as_deref() {
            on_delta(Delta::Text(text));
        }
        Ok(response)
    }

    /// The context length of the model `request` would be sent to, as its server reports it
    /// (`context: {window: auto}`); `None` when this invoker cannot tell (the default).
    async fn context_window(&self, request: &ChatRequest) -> Result<Option<u32>, InvokeError> {
        let _ = request;
        Ok(None)
    }
}

#[async_trait]
impl<T: Invoker + ?Sized> Invoker for Arc<T> {
    async fn context_window(&self, request: &ChatRequest) -> Result<Option<u32>, InvokeError> {
        (**self).context_window(request).await
    }

    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        (**self).invoke(request).await
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        (**self).invoke_stream(request, on_delta).await
    }
}

/// The parser of whole answers, for [`crate::testing::parse_completion`].
#[cfg(feature = "testing")]
pub(crate) fn parse_completion_for_tests(body: &[u8]) -> Result<ChatResponse, InvokeError> {
    wire::parse_completion(body, &error::Secrets::default())
}

/// The parser of streamed answers, for [`crate::testing::parse_event_stream`].
#[cfg(feature = "testing")]
pub(crate) fn parse_event_stream_for_tests(
    pieces: &[&[u8]],
    limits: &ResponseLimits,
) -> (Result<ChatResponse, InvokeError>, String) {
    let mut text = String::new();
    let mut answer = stream::SseAnswer::new(limits, error::Secrets::default());
    let mut on_delta = |delta: Delta<'_>| {
        if let Delta::Text(piece) = delta {
            text.push_str(piece);
        }
    };
    for piece in pieces {
        match answer.feed(piece, &mut on_delta) {
            Ok(true) => break,
            Ok(false) => {}
            Err(error) => return (Err(error), text),
        }
    }
    let result = answer.finish("http://127.0.0.1/v1/chat/completions");
    (result, text)
}
