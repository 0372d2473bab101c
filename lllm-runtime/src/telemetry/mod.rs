//! Spans after the OpenTelemetry GenAI semantic conventions: `invoke_workflow {tactic}` for a run,
//! `invoke_agent {agent}` for a respond, `chat {model}` for each attempt of a model call and
//! `execute_tool {tool}` for each tool call.
//!
//! They are plain [`tracing`] spans whose field names are the conventions' attribute names
//! (`gen_ai.request.model`, `gen_ai.conversation.id`, …) plus `lllm.*` facts only lllm knows (the
//! parent session, the profile, the priority as sent, the retry attempt, the serving worker). With no
//! subscriber they cost next to nothing; `tracing-opentelemetry` turns them into OpenTelemetry spans
//! (`otel.name` and `otel.kind` name and type them), which is what `lllm` does when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set. With the `otel` feature, a fork's first `invoke_agent` span
//! also links to the latest span of the dialog it was forked from.
//!
//! `gen_ai.conversation.id` is the session id the request carried (the dialog's id when the hints
//! send none), so the client's spans join the server's on the same key.
//!
//! Message content (prompts, answers, tool arguments and results) is recorded only when
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, as the conventions ask.
#![doc = include_str!("../../../docs/observability.md")]

mod content;
mod links;
mod outer;

use std::sync::OnceLock;

use lllm_core::{DialogId, Profile, ToolCall};
use tracing::field::Empty;
use tracing::Span;

use crate::invoker::{ChatRequest, ChatResponse, InvokeError, SentHints};

pub use content::CAPTURE_CONTENT_ENV;
pub(crate) use links::{follow_fork, remember};
pub use outer::join_outer_trace;

/// The target of every span made here, so that a subscriber can pick them out (`lllm::gen_ai`).
pub const TARGET: &str = "lllm::gen_ai";

/// Whether message content is recorded: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is
/// `true` (read once).
pub fn capture_content() -> bool {
    static CAPTURE: OnceLock<bool> = OnceLock::new();
    *CAPTURE.get_or_init(|| {
        std::env::var(CAPTURE_CONTENT_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    })
}

/// The span of one run of a tactic: `invoke_workflow {tactic}`. Run the tactic inside it
/// (`tactic.run(..).instrument(span)`) so that every agent's spans are its children.
pub fn workflow_span(tactic: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "invoke_workflow",
        otel.name = format!("invoke_workflow {tactic}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_workflow",
        gen_ai.workflow.name = tactic,
        lllm.tactic = tactic,
        lllm.batch.item = Empty,
        error.type = Empty,
    )
}

/// Marks a span as failed: status error, `error.type`, and a description safe to export (the
/// errors lllm makes never hold a secret).
pub fn record_failure(span: &Span, kind: &str, description: &str) {
    span.record("otel.status_code", "error");
    span.record("otel.status_description", description);
    span.record("error.type", kind);
}

/// What every span of one agent shares.
#[derive(Debug, Clone)]
pub(crate) struct AgentFacts {
    pub(crate) agent: String,
    pub(crate) model: String,
    pub(crate) profile: Option<Profile>,
}

impl AgentFacts {
    /// `gen_ai.provider.name`: the hints' profile when there is one (`dynamo`, `vllm`, `sglang`),
    /// else `openai`, the API every server here speaks.
    fn provider(&self) -> &'static str {
        self.profile.map_or("openai", Profile::as_str)
    }
}

/// The span of one respond: `invoke_agent {agent}`, kind INTERNAL.
pub(crate) fn agent_span(facts: &AgentFacts, alias: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = format!("invoke_agent {}", facts.agent),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = facts.agent.as_str(),
        gen_ai.provider.name = facts.provider(),
        gen_ai.request.model = lllm_core::strip_provider_prefix(&facts.model),
        gen_ai.conversation.id = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        lllm.dialog = alias,
        lllm.dialog.id = Empty,
        lllm.parent_session.id = Empty,
        lllm.profile = facts.profile.map(Profile::as_str),
        error.type = Empty,
    )
}

/// Records the dialog a respond works on, once its snapshot is taken.
pub(crate) fn record_dialog(span: &Span, dialog: DialogId) {
    if !span.is_disabled() {
        span.record("lllm.dialog.id", dialog.to_string());
    }
}

/// The span of one attempt of a model call: `chat {model}`, kind CLIENT, with the request's
/// parameters and hints as sent.
pub(crate) fn chat_span(facts: &AgentFacts, request: &ChatRequest, attempt: u32) -> Span {
    let model = lllm_core::strip_provider_prefix(&request.model);
    // What is read off the request is worked out only for a span someone records: the macro
    // evaluates its fields only then, and most runs export no span. The hints as sent are read once
    // per request (cached on it) and shared with the trace.
    let sent = || request.sent_hints();
    let session = std::cell::OnceCell::new();
    let conversation = || session.get_or_init(|| conversation_id(request, sent()));
    let endpoint = std::cell::OnceCell::new();
    let address = || endpoint.get_or_init(|| server(request));
    let params = &request.model_args.endpoint.params;
    let number = |key: &str| params.get(key).and_then(serde_json::Value::as_f64);
    let integer = |key: &str| params.get(key).and_then(serde_json::Value::as_i64);
    let span = tracing::info_span!(
        target: TARGET,
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = facts.provider(),
        gen_ai.agent.name = facts.agent.as_str(),
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = integer("max_completion_tokens").or_else(|| integer("max_tokens")),
        gen_ai.request.temperature = number("temperature"),
        gen_ai.request.top_p = number("top_p"),
        gen_ai.request.frequency_penalty = number("frequency_penalty"),
        gen_ai.request.presence_penalty = number("presence_penalty"),
        gen_ai.request.seed = integer("seed"),
        gen_ai.request.stop_sequences = params.get("stop").map(|v| v.to_string()),
        gen_ai.conversation.id = conversation().as_str(),
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        server.address = address().0.as_deref(),
        server.port = address().1.map(int),
        lllm.profile = request.notes.profile.or(facts.profile).map(Profile::as_str),
        lllm.parent_session.id = sent().parent_session.as_deref(),
        lllm.fallback.hop = int(request.notes.hop),
        lllm.priority = sent().wire.priority,
        lllm.strict_priority = sent().wire.strict_priority.map(int),
        lllm.osl = sent().wire.osl.map(int),
        lllm.retry.attempt = int(attempt),
        lllm.tools = int(request.tools.len()),
        lllm.context.window = request.notes.window,
        lllm.worker.id = Empty,
        error.type = Empty,
    );
    if capture_content() {
        span.record(
            "gen_ai.input.messages",
            content::messages(request.messages.iter()),
        );
    }
    // The enclosing respond learns its conversation from its first request.
    let parent = Span::current();
    if !parent.is_disabled() {
        parent.record("gen_ai.conversation.id", conversation().as_str());
        if let Some(session) = &sent().parent_session {
            parent.record("lllm.parent_session.id", session.as_str());
        }
    }
    span
}

/// The span of one attempt's wait for a slot of its endpoint (`model_args.max_in_flight`), inside
/// its `chat` span.
pub(crate) fn queue_span(request: &ChatRequest, limit: u32) -> Span {
    let address = server(request);
    tracing::info_span!(
        target: TARGET,
        "queue",
        otel.name = "queue",
        server.address = address.0.as_deref(),
        server.port = address.1.map(int),
        lllm.queue.max_in_flight = int(limit),
        lllm.queue.tier = int(request.notes.urgency.tier),
        lllm.queue.priority = request.notes.urgency.priority,
        lllm.queue.wait_ms = Empty,
    )
}

/// Records how long the attempt waited for its slot.
pub(crate) fn record_queue_wait(span: &Span, waited: std::time::Duration) {
    if !span.is_disabled() {
        span.record("lllm.queue.wait_ms", waited.as_secs_f64() * 1000.0);
    }
}

/// Records an answer on its `chat` span.
pub(crate) fn record_response(span: &Span, response: &ChatResponse) {
    if span.is_disabled() {
        return;
    }
    let message = &response.message;
    if let Some(id) = &response.id {
        span.record("gen_ai.response.id", id.as_str());
    }
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(worker) = &response.worker {
        span.record("lllm.worker.id", worker.as_str());
    }
    if let Some(reason) = &message.finish_reason {
        span.record(
            "gen_ai.response.finish_reasons",
            serde_json::json!([reason]).to_string(),
        );
    }
    if let Some(usage) = &message.usage {
        span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
        if let Some(cached) = usage.cached_tokens {
            span.record("gen_ai.usage.cache_read.input_tokens", int(cached));
        }
    }
    if capture_content() {
        span.record(
            "gen_ai.output.messages",
            content::messages(std::iter::once(message)),
        );
    }
}

/// Records a failed attempt on its `chat` span.
pub(crate) fn record_invoke_error(span: &Span, error: &InvokeError) {
    record_failure(span, &error_type(error), &error.to_string());
}

/// A respond's token totals on its `invoke_agent` span.
pub(crate) fn record_usage(span: &Span, input: u64, output: u64) {
    span.record("gen_ai.usage.input_tokens", int(input));
    span.record("gen_ai.usage.output_tokens", int(output));
}

/// The span of one tool call: `execute_tool {tool}`, kind INTERNAL.
pub(crate) fn tool_span(agent: &str, call: &ToolCall, source: Option<&str>) -> Span {
    let kind = match source {
        Some(source) if source.starts_with("MCP") => "extension",
        _ => "function",
    };
    let span = tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.agent.name = agent,
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = kind,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        lllm.tool.source = source,
        error.type = Empty,
    );
    if capture_content() {
        span.record(
            "gen_ai.tool.call.arguments",
            content::bounded(&call.arguments),
        );
    }
    span
}

/// Records what a tool call gave the model on its span.
pub(crate) fn record_tool_result(span: &Span, content: &str, is_error: bool) {
    if is_error {
        record_failure(
            span,
            "tool_error",
            "the tool call failed; the model reads why",
        );
    }
    if capture_content() {
        span.record("gen_ai.tool.call.result", content::bounded(content));
    }
}

/// An integer attribute. Unsigned values reach OpenTelemetry as text through `tracing`, so every
/// count is recorded as `i64` (saturating; no count here comes near it).
fn int<T: TryInto<i64>>(value: T) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// `gen_ai.conversation.id`: the session header the request carries, else its dialog's id.
fn conversation_id(request: &ChatRequest, sent: &SentHints) -> String {
    sent.session
        .clone()
        .or_else(|| request.notes.dialog.map(|d| d.to_string()))
        .unwrap_or_default()
}

/// `server.address` and `server.port` of the request's `api_base`, when it names one.
fn server(request: &ChatRequest) -> (Option<String>, Option<u16>) {
    let Some(base) = request.model_args.endpoint.api_base.as_deref() else {
        return (None, None);
    };
    match base.parse::<http::Uri>() {
        Ok(uri) => {
            let default_port = match uri.scheme_str() {
                Some("https") => Some(443),
                Some("http") => Some(80),
                _ => None,
            };
            (
                uri.host().map(str::to_owned),
                uri.port_u16().or(default_port),
            )
        }
        Err(_) => (None, None),
    }
}

/// `error.type`: the HTTP status when there is one, else a short class of the failure.
fn error_type(error: &InvokeError) -> String {
    match error {
        InvokeError::Http { status, .. } | InvokeError::RetryAfterTooLong { status, .. } => {
            status.as_u16().to_string()
        }
        InvokeError::Timeout(_) => "timeout".into(),
        InvokeError::Connection { .. } => "connection".into(),
        InvokeError::InvalidResponse { .. } => "invalid_response".into(),
        InvokeError::Halted => "halted".into(),
        _ => "_OTHER".into(),
    }
}
