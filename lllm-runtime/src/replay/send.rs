//! Sending one replayed request: a synthetic prompt of the recorded blocks, the recorded session,
//! and the recorded hints as the replay's profile sends them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_core::{
    Demand, HintsError, InferenceHints, Message, MessageLog, ModelArgs, RequestFields, WireHints,
};

use super::plan::Step;
use super::request::Request;
use super::{ReplayOptions, Replayed};
use crate::invoker::{ChatRequest, Invoker};

/// Words synthetic prompts are made of: common short English words, about one token each in most
/// tokenizers, so a block of N tokens becomes about N tokens again.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "it", "that", "for", "on", "with", "as", "was", "be",
    "at", "by", "from", "or", "not", "but", "what", "all", "when", "we", "you", "can", "will",
    "day", "time", "way", "make", "find", "good", "first", "next", "last", "more", "less", "plan",
    "step", "part",
];

/// An upper bound of the bytes of a synthetic prompt: the longest word and its separator per token.
pub(super) fn prompt_bytes(request: &Request, block: usize) -> u64 {
    let longest = WORDS.iter().map(|w| w.len()).max().unwrap_or(0) as u64 + 1;
    (request.hash_ids.len() as u64)
        .saturating_mul(block as u64)
        .saturating_mul(longest)
}

/// Appends the text of block `id`: the same text for the same id, every time, `tokens` words long.
pub(super) fn push_block(out: &mut String, id: u64, tokens: usize) {
    let mut rng = fastrand::Rng::with_seed(id);
    for i in 0..tokens.max(1) {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.usize(..WORDS.len())]);
    }
}

/// The synthetic prompt of a request: its blocks' texts, one a line (the last block as long as the
/// trace says, when it says).
pub(super) fn prompt(request: &Request, block: usize) -> String {
    // The capacity is bounded: hash_ids × block ≤ MAX_PROMPT_TOKENS, checked when read.
    let bound = usize::try_from(prompt_bytes(request, block)).unwrap_or(0);
    let mut out = String::with_capacity(bound.min(8 * 1024 * 1024));
    let last = request.hash_ids.len().saturating_sub(1);
    for (i, id) in request.hash_ids.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let tokens = match request.last_block {
            Some(tokens) if i == last => tokens.min(block),
            _ => block,
        };
        push_block(&mut out, *id, tokens);
    }
    out
}

/// Sends `step` (step `i` of the plan, `bytes` of prompt text at most) and reports it with its place
/// in the plan, sent `dispatched_at` from the replay's start.
pub(super) async fn dispatch(
    invoker: &dyn Invoker,
    step: &Step<'_>,
    i: usize,
    bytes: u64,
    block: usize,
    options: &ReplayOptions,
    dispatched_at: Duration,
) -> (usize, u64, Replayed) {
    let mut replayed = send(invoker, step.session, step.request, block, options).await;
    replayed.request_id = step.request_id.map(str::to_owned);
    replayed.play_id = step.play_id.map(str::to_owned);
    replayed.dispatched_at = dispatched_at;
    (i, bytes, replayed)
}

/// Sends `request` of session `session_id` once and reports how it went.
async fn send(
    invoker: &dyn Invoker,
    session_id: &str,
    request: &Request,
    block: usize,
    options: &ReplayOptions,
) -> Replayed {
    let messages: MessageLog = [Message::user(prompt(request, block))]
        .into_iter()
        .collect();
    let args = ModelArgs::new()
        .api_base(options.api_base.clone())
        .param("max_tokens", request.output_length.max(1));
    let fields = request_fields(session_id, request, &args, options);
    let failed = |error: String, latency: Duration| Replayed {
        session_id: session_id.to_owned(),
        request_id: None,
        play_id: None,
        dispatched_at: Duration::ZERO,
        response_id: None,
        prompt_tokens: 0,
        cached_tokens: 0,
        latency,
        error: Some(error),
    };
    let fields = match fields {
        Ok(fields) => fields,
        Err(error) => return failed(error.to_string(), Duration::ZERO),
    };
    let mut request = ChatRequest::new(options.model.clone(), messages, Arc::new(args), fields);
    request.notes.profile = Some(options.profile);
    let sent = Instant::now();
    let result = invoker.invoke(&request).await;
    let latency = sent.elapsed();
    match result {
        Ok(response) => {
            let usage = response.message.usage.unwrap_or_default();
            Replayed {
                session_id: session_id.to_owned(),
                request_id: None,
                play_id: None,
                dispatched_at: Duration::ZERO,
                response_id: response.id,
                prompt_tokens: usage.prompt_tokens,
                cached_tokens: usage.cached_tokens.unwrap_or(0),
                latency,
                error: None,
            }
        }
        Err(error) => failed(error.to_string(), latency),
    }
}

/// The fields of a replayed request: the recorded session and parent (unless `--no-session`), and
/// the recorded hints as the replay's profile sends them. Values recorded with that same profile (or
/// with an unknown one) go out unchanged; values recorded with another are converted through what
/// they mean (a vLLM `-5` is a Dynamo `5`). Fields the profile cannot send are left out; an `osl` the
/// trace does not give defaults to `max_tokens`, as `lllm run` sends it.
fn request_fields(
    session_id: &str,
    request: &Request,
    args: &ModelArgs,
    options: &ReplayOptions,
) -> Result<RequestFields, HintsError> {
    let hints = InferenceHints::builder()
        .profile(options.profile)
        .session(options.session)
        .build()?;
    let recorded = WireHints {
        priority: request.priority.map(i64::from),
        strict_priority: request.strict_priority.map(u64::from),
        osl: request.osl.map(u64::from),
        ..WireHints::default()
    };
    let wire = options
        .profile
        .shape()
        .reshape(&recorded, request.sent_with)
        .or(hints.wire_hints(args, &Demand::default()));
    hints.request_fields_with(
        options.session.then_some(session_id),
        request.parent.as_deref().filter(|_| options.session),
        &wire,
    )
}
