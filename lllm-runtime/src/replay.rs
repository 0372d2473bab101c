//! Replaying a trace against a server (`lllm replay`): the recorded sessions, forks, timing and prompt
//! structure, with synthetic text, and the hints of a chosen profile.
//!
//! Each block id becomes the same pseudo-text every time, so requests that shared a prefix when they
//! were recorded share it again. An `lllm-trace/1` trace sends each session's requests one after the
//! other with the recorded delays (scaled by the speed), sessions running concurrently from their
//! recorded start. An agentic trace (NVIDIA Dynamo's `dynamo.agentic_mooncake` version 2) sends
//! each request when what it waits for is done: its dependencies' answers (or, for a `spawn` edge
//! triggered by dispatch, their sending) plus each edge's `delay_ms`, and not before its
//! `not_before_ms`, every time divided by the speed.

mod agentic;
pub mod limits;
mod read;
mod request;
mod text;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use lllm_core::internal::redact_url;
use lllm_core::{
    Demand, HintsError, InferenceHints, Message, MessageLog, ModelArgs, Profile, RequestFields,
    Trigger, WireHints,
};

use crate::invoker::{ChatRequest, Invoker, OpenAiInvoker, ServerDefaults};
pub use read::Trace;
use request::Request;

/// Words synthetic prompts are made of: common short English words, about one token each in most
/// tokenizers, so a block of N tokens becomes about N tokens again.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "it", "that", "for", "on", "with", "as", "was", "be",
    "at", "by", "from", "or", "not", "but", "what", "all", "when", "we", "you", "can", "will",
    "day", "time", "way", "make", "find", "good", "first", "next", "last", "more", "less", "plan",
    "step", "part",
];

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The server's API base.
    pub api_base: String,
    /// The model to ask.
    pub model: String,
    /// The hints' profile.
    pub profile: Profile,
    /// Send session identity (the recorded session ids and parents).
    pub session: bool,
    /// Time factor: 2.0 replays twice as fast; from [`limits::MIN_SPEED`] to [`limits::MAX_SPEED`].
    pub speed: f64,
    /// Tokens per block for a trace written without a header, from 1 to
    /// [`limits::MAX_BLOCK_TOKENS`].
    pub block_size: usize,
}

/// A trace cannot be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A line is not what the format says, or a value is beyond its [`limits`].
    #[error("line {line}: {message}")]
    Format {
        /// 1-based line number.
        line: usize,
        /// What is wrong, the field, and what is allowed.
        message: String,
    },
    /// The trace file cannot be read: missing, not a regular file, or too large.
    #[error("{message}")]
    File {
        /// What is wrong and what to do.
        message: String,
        /// The system's error, when there is one.
        #[source]
        source: Option<std::io::Error>,
    },
    /// An option is out of range (see [`ReplayOptions::check`]).
    #[error("{0}")]
    Options(String),
}

/// One replayed request.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The recorded session.
    pub session_id: String,
    /// The recorded request id (agentic traces; `None` for `lllm-trace/1`).
    pub request_id: Option<String>,
    /// The recorded play, the trajectory the request belongs to (agentic traces).
    pub play_id: Option<String>,
    /// When it was sent, from the replay's start.
    pub dispatched_at: Duration,
    /// The server's id of the answer.
    pub response_id: Option<String>,
    /// Prompt tokens the server counted.
    pub prompt_tokens: u64,
    /// Of those, served from its cache.
    pub cached_tokens: u64,
    /// Time to the whole answer.
    pub latency: Duration,
    /// The failure, if the request failed.
    pub error: Option<String>,
}

/// Everything a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplayReport {
    /// Every request: for an `lllm-trace/1` trace grouped by session in trace order, for an agentic
    /// trace in trace order.
    pub requests: Vec<Replayed>,
    /// The replay's wall time.
    pub elapsed: Duration,
}

impl ReplayReport {
    /// Per-session and total figures, as text for a terminal. An agentic trace of several plays
    /// counts each play's sessions apart, shown as `session (play)`.
    pub fn summary(&self) -> String {
        let plays: BTreeSet<Option<&str>> =
            self.requests.iter().map(|r| r.play_id.as_deref()).collect();
        // (session, play) → (requests, errors, prompt tokens, cached tokens).
        type Figures = (usize, usize, u64, u64);
        let mut sessions: BTreeMap<(&str, Option<&str>), Figures> = BTreeMap::new();
        for r in &self.requests {
            let play = r.play_id.as_deref().filter(|_| plays.len() > 1);
            let entry = sessions.entry((&r.session_id, play)).or_default();
            entry.0 += 1;
            entry.1 += usize::from(r.error.is_some());
            entry.2 += r.prompt_tokens;
            entry.3 += r.cached_tokens;
        }
        let mut out = String::from(
            "session                                     requests errors   prompt   cached\n",
        );
        for ((session, play), (requests, errors, prompt, cached)) in &sessions {
            let session = match play {
                Some(play) => format!("{session} ({play})"),
                None => (*session).to_owned(),
            };
            out.push_str(&format!(
                "{session:<44}{requests:>8}{errors:>7}{prompt:>9}{cached:>9}\n"
            ));
        }
        let mut latencies: Vec<Duration> = self.requests.iter().map(|r| r.latency).collect();
        latencies.sort();
        let pct = |p: f64| {
            latencies
                .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let prompt: u64 = self.requests.iter().map(|r| r.prompt_tokens).sum();
        let cached: u64 = self.requests.iter().map(|r| r.cached_tokens).sum();
        let errors = self.requests.iter().filter(|r| r.error.is_some()).count();
        out.push_str(&format!(
            "total: {} requests in {} sessions, {errors} errors, {cached} of {prompt} prompt tokens cached ({:.1} %), latency p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, {:.1} s\n",
            self.requests.len(),
            sessions.len(),
            if prompt > 0 { 100.0 * cached as f64 / prompt as f64 } else { 0.0 },
            pct(0.5),
            pct(0.9),
            pct(0.99),
            self.elapsed.as_secs_f64()
        ));
        out
    }
}

/// Whether `url` can be an API base: an `http` or `https` URL with a host. The error shows the URL
/// with any user name, password and query redacted.
pub fn check_api_base(url: &str) -> Result<(), ReplayError> {
    let problem = match reqwest::Url::parse(url) {
        Err(e) => Some(e.to_string()),
        Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => Some(format!(
            "the scheme is `{}`, not http or https",
            parsed.scheme()
        )),
        Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => Some("it has no host".into()),
        Ok(_) => None,
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ReplayError::Options(format!(
            "--api-base `{}` is not a server URL ({problem}); write it like \
             http://127.0.0.1:8000/v1",
            redact_url(url)
        ))),
    }
}

/// Whether `speed` is a replay speed: a number from [`limits::MIN_SPEED`] to [`limits::MAX_SPEED`].
pub fn check_speed(speed: f64) -> Result<(), ReplayError> {
    if (limits::MIN_SPEED..=limits::MAX_SPEED).contains(&speed) {
        Ok(())
    } else {
        Err(ReplayError::Options(format!(
            "--speed {speed} is out of range; use a number from {} to {} (2 replays twice as \
             fast, 0.5 half as fast)",
            limits::MIN_SPEED,
            limits::MAX_SPEED
        )))
    }
}

impl ReplayOptions {
    /// Checks every option: the API base, the model, the speed and the block size.
    pub fn check(&self) -> Result<(), ReplayError> {
        check_api_base(&self.api_base)?;
        if self.model.trim().is_empty() {
            return Err(ReplayError::Options(
                "--model is empty; name the model to ask".into(),
            ));
        }
        check_speed(self.speed)?;
        if !(1..=limits::MAX_BLOCK_TOKENS).contains(&self.block_size) {
            return Err(ReplayError::Options(format!(
                "--block-size {} is out of range; use a whole number of tokens from 1 to {}",
                self.block_size,
                limits::MAX_BLOCK_TOKENS
            )));
        }
        Ok(())
    }
}

/// `ms` of the recording (a fraction, as agentic traces may give) at `speed`, without overflow:
/// `ms` and `speed` are within their limits, and anything beyond a year and a day is cut there.
fn scaled(ms: f64, speed: f64) -> Duration {
    const CEILING: Duration = Duration::from_secs(366 * 24 * 60 * 60);
    let secs = ms / 1000.0 / speed;
    if secs.is_nan() || secs <= 0.0 {
        // Nothing to wait (and NaN, from speeds the options refuse).
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).map_or(CEILING, |d| d.min(CEILING))
}

/// An upper bound of the bytes of a synthetic prompt: the longest word and its separator per token.
fn prompt_bytes(request: &Request, block: usize) -> u64 {
    let longest = WORDS.iter().map(|w| w.len()).max().unwrap_or(0) as u64 + 1;
    (request.hash_ids.len() as u64)
        .saturating_mul(block as u64)
        .saturating_mul(longest)
}

/// Appends the text of block `id`: the same text for the same id, every time, `tokens` words long.
fn push_block(out: &mut String, id: u64, tokens: usize) {
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
fn prompt(request: &Request, block: usize) -> String {
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

/// Replays `text` (a trace) as `options` say: see [`Trace::read`] for what a trace may hold.
pub async fn replay(text: &str, options: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    options.check()?;
    let trace = Trace::parse(text, options.block_size)?;
    replay_trace(&trace, options).await
}

/// One request to send.
struct Step<'t> {
    session: &'t str,
    request: &'t Request,
    request_id: Option<&'t str>,
    play_id: Option<&'t str>,
    not_before_ms: f64,
}

/// A trace as requests and the edges between them, whatever its format: an `lllm-trace/1` session
/// is a chain in which each request waits for the previous one's answer and then its `delay`.
struct Plan<'t> {
    steps: Vec<Step<'t>>,
    /// How many requests each step waits for.
    waits: Vec<usize>,
    /// The steps waiting for step `i`: `edges[starts[i]..starts[i + 1]]`, as (step, trigger, delay
    /// in ms).
    starts: Vec<usize>,
    edges: Vec<(usize, Trigger, f64)>,
}

impl<'t> Plan<'t> {
    fn of(trace: &'t Trace) -> Plan<'t> {
        match &trace.graph {
            Some(graph) => {
                let steps = graph
                    .nodes
                    .iter()
                    .map(|node| Step {
                        session: &node.session_id,
                        request: &node.request,
                        request_id: Some(&node.request_id),
                        play_id: Some(&node.play_id),
                        not_before_ms: node.not_before_ms,
                    })
                    .collect();
                let waits = graph.nodes.iter().map(|n| n.dependencies.len()).collect();
                // The edges grouped by the request waited for (a counting sort).
                let mut starts = vec![0usize; graph.nodes.len() + 1];
                for node in &graph.nodes {
                    for edge in &node.dependencies {
                        starts[edge.from + 1] += 1;
                    }
                }
                for i in 0..graph.nodes.len() {
                    starts[i + 1] += starts[i];
                }
                let mut next = starts.clone();
                let mut edges = vec![(0, Trigger::Completion, 0.0); starts[graph.nodes.len()]];
                for (j, node) in graph.nodes.iter().enumerate() {
                    for edge in &node.dependencies {
                        edges[next[edge.from]] = (j, edge.trigger, edge.delay_ms);
                        next[edge.from] += 1;
                    }
                }
                Plan {
                    steps,
                    waits,
                    starts,
                    edges,
                }
            }
            None => {
                let mut plan = Plan {
                    steps: Vec::with_capacity(trace.requests()),
                    waits: Vec::with_capacity(trace.requests()),
                    starts: Vec::with_capacity(trace.requests() + 1),
                    edges: Vec::with_capacity(trace.requests()),
                };
                for session in &trace.sessions {
                    for (r, request) in session.requests.iter().enumerate() {
                        let i = plan.steps.len();
                        plan.steps.push(Step {
                            session: &session.id,
                            request,
                            request_id: None,
                            play_id: None,
                            not_before_ms: if r == 0 {
                                request.timestamp as f64
                            } else {
                                0.0
                            },
                        });
                        plan.waits.push(usize::from(r > 0));
                        plan.starts.push(plan.edges.len());
                        if let Some(next) = session.requests.get(r + 1) {
                            plan.edges
                                .push((i + 1, Trigger::Completion, next.delay as f64));
                        }
                    }
                }
                plan.starts.push(plan.edges.len());
                plan
            }
        }
    }
}

/// Replays a trace that was read. Each request is sent when it is due:
///
/// - `lllm-trace/1`: a session's first request at its recorded time, each next one its recorded
///   delay after the previous answer;
/// - agentic: at the latest of its `not_before_ms` and, for each dependency, the dependency's answer
///   (its sending, for a `spawn` edge triggered by `dispatch`) plus the edge's `delay_ms`. A failed
///   request counts as answered.
///
/// Times are divided by the speed. At most [`limits::MAX_IN_FLIGHT`] requests and
/// [`limits::MAX_IN_FLIGHT_PROMPT_BYTES`] of prompt text are in flight at once; a request beyond that
/// waits for an answer, and its latency counts from when it is sent.
pub async fn replay_trace(
    trace: &Trace,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    options.check()?;
    let invoker = OpenAiInvoker::with_defaults(ServerDefaults::none());
    let block = trace.block_size;
    let plan = Plan::of(trace);
    let total = plan.steps.len();
    let mut results: Vec<Option<Replayed>> = Vec::new();
    results.resize_with(total, || None);
    let mut waits = plan.waits.clone();
    let mut ready_at: Vec<Duration> = plan
        .steps
        .iter()
        .map(|s| scaled(s.not_before_ms, options.speed))
        .collect();
    // What is due next: (time from the start, step), earliest first.
    let mut due: BinaryHeap<Reverse<(Duration, usize)>> = (0..total)
        .filter(|i| waits[*i] == 0)
        .map(|i| Reverse((ready_at[i], i)))
        .collect();
    // Step `i` is done (`trigger`) at `now`: the steps waiting for that may become due.
    let mut release = |i: usize,
                       trigger: Trigger,
                       now: Duration,
                       waits: &mut Vec<usize>,
                       due: &mut BinaryHeap<Reverse<(Duration, usize)>>| {
        for &(j, on, delay) in &plan.edges[plan.starts[i]..plan.starts[i + 1]] {
            if on != trigger {
                continue;
            }
            ready_at[j] = ready_at[j].max(now.saturating_add(scaled(delay, options.speed)));
            waits[j] -= 1;
            if waits[j] == 0 {
                due.push(Reverse((ready_at[j], j)));
            }
        }
    };
    let started = Instant::now();
    let mut running = FuturesUnordered::new();
    let mut bytes_in_flight = 0u64;
    loop {
        let next = due.peek().map(|Reverse(entry)| *entry);
        let startable = next.filter(|(_, i)| {
            let bytes = prompt_bytes(plan.steps[*i].request, block);
            running.is_empty()
                || (running.len() < limits::MAX_IN_FLIGHT
                    && bytes_in_flight.saturating_add(bytes) <= limits::MAX_IN_FLIGHT_PROMPT_BYTES)
        });
        if next.is_none() && running.is_empty() {
            break;
        }
        tokio::select! {
            Some::<(usize, u64, Replayed)>((i, bytes, replayed)) = running.next(), if !running.is_empty() => {
                bytes_in_flight -= bytes;
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(replayed);
                }
                release(i, Trigger::Completion, started.elapsed(), &mut waits, &mut due);
            }
            () = tokio::time::sleep(
                startable.map_or(Duration::ZERO, |(at, _)| at.saturating_sub(started.elapsed()))
            ), if startable.is_some() => {
                due.pop();
                let Some((_, i)) = startable else { continue };
                let step = &plan.steps[i];
                let bytes = prompt_bytes(step.request, block);
                bytes_in_flight += bytes;
                let invoker = &invoker;
                let dispatched_at = started.elapsed();
                running.push(async move {
                    let mut replayed = send(invoker, step.session, step.request, block, options).await;
                    replayed.request_id = step.request_id.map(str::to_owned);
                    replayed.play_id = step.play_id.map(str::to_owned);
                    replayed.dispatched_at = dispatched_at;
                    (i, bytes, replayed)
                });
                release(i, Trigger::Dispatch, dispatched_at, &mut waits, &mut due);
            }
        }
    }
    let elapsed = started.elapsed();
    // Every step is sent once what it waits for is done, and the graph has no cycle; a step left
    // unsent would be a bug, reported rather than dropped.
    let requests = results
        .into_iter()
        .zip(&plan.steps)
        .map(|(result, step)| {
            result.unwrap_or_else(|| Replayed {
                session_id: step.session.to_owned(),
                request_id: step.request_id.map(str::to_owned),
                play_id: step.play_id.map(str::to_owned),
                dispatched_at: elapsed,
                response_id: None,
                prompt_tokens: 0,
                cached_tokens: 0,
                latency: Duration::ZERO,
                error: Some("not sent: what it waits for never happened".into()),
            })
        })
        .collect();
    Ok(ReplayReport { requests, elapsed })
}

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
    request.profile = Some(options.profile);
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

#[cfg(test)]
mod tests;
