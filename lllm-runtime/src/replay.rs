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
#![doc = include_str!("../../docs/replay.md")]

mod agentic;
pub mod limits;
mod plan;
mod read;
mod request;
mod send;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use lllm_core::secret::redact_url;
use lllm_core::{HintsError, Profile, Trigger, ValueError};

use crate::invoker::{OpenAiInvoker, ServerDefaults};
use plan::{Plan, Schedule, Step};
pub use read::Trace;
use send::{dispatch, prompt_bytes};
#[cfg(test)]
use {
    plan::scaled,
    send::{prompt, push_block},
};

/// How to replay.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// The API base is not a server URL (see [`check_api_base`]).
    #[error("the API base `{url}` {problem}; write it like http://127.0.0.1:8000/v1")]
    ApiBase {
        /// The URL, with any user name, password and query redacted.
        url: String,
        /// Why it cannot be a server URL.
        problem: ValueError,
    },
    /// No model was named.
    #[error("the model is empty; name the model to ask")]
    NoModel,
    /// The speed is out of range (see [`check_speed`]).
    #[error(
        "the speed {speed} is out of range; use a number from {} to {} (2 replays twice as fast, \
         0.5 half as fast)",
        limits::MIN_SPEED,
        limits::MAX_SPEED
    )]
    Speed {
        /// The speed asked for.
        speed: f64,
    },
    /// The tokens per block of a trace without its header are out of range.
    #[error(
        "the block size {tokens} is out of range; use a whole number of tokens from 1 to {}",
        limits::MAX_BLOCK_TOKENS
    )]
    BlockSize {
        /// The tokens per block asked for.
        tokens: usize,
    },
    /// The hints the replay sends cannot be built.
    #[error(transparent)]
    Hints(#[from] HintsError),
}

/// One replayed request.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
#[non_exhaustive]
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

/// Whether `url` can be an API base: the one rule of server URLs ([`lllm_core::check_http_url`]).
/// The error shows the URL with any user name, password and query redacted.
pub fn check_api_base(url: &str) -> Result<(), ReplayError> {
    lllm_core::check_http_url(url).map_err(|problem| ReplayError::ApiBase {
        url: redact_url(url),
        problem,
    })
}

/// Whether `speed` is a replay speed: a number from [`limits::MIN_SPEED`] to [`limits::MAX_SPEED`].
pub fn check_speed(speed: f64) -> Result<(), ReplayError> {
    if (limits::MIN_SPEED..=limits::MAX_SPEED).contains(&speed) {
        Ok(())
    } else {
        Err(ReplayError::Speed { speed })
    }
}

impl ReplayOptions {
    /// Replays against `api_base` asking `model`, with what `lllm replay` does by default:
    /// Dynamo's hints with session identity, at the recorded speed, 64 tokens per block of a trace
    /// without its header. Set the other fields to change them.
    pub fn new(api_base: impl Into<String>, model: impl Into<String>) -> Self {
        ReplayOptions {
            api_base: api_base.into(),
            model: model.into(),
            profile: Profile::Dynamo,
            session: true,
            speed: 1.0,
            block_size: lllm_core::internal::DEFAULT_BLOCK_TOKENS,
        }
    }

    /// Checks every option: the API base, the model, the speed and the block size.
    pub fn check(&self) -> Result<(), ReplayError> {
        check_api_base(&self.api_base)?;
        if self.model.trim().is_empty() {
            return Err(ReplayError::NoModel);
        }
        check_speed(self.speed)?;
        if !(1..=limits::MAX_BLOCK_TOKENS).contains(&self.block_size) {
            return Err(ReplayError::BlockSize {
                tokens: self.block_size,
            });
        }
        Ok(())
    }
}

/// Replays `text` (a trace) as `options` say: see [`Trace::read`] for what a trace may hold.
pub async fn replay(text: &str, options: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    options.check()?;
    let trace = Trace::parse(text, options.block_size)?;
    replay_trace(&trace, options).await
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
    let mut schedule = Schedule::new(&plan, options.speed);
    let mut results: Vec<Option<Replayed>> = vec![None; plan.steps.len()];
    let started = Instant::now();
    let mut running = FuturesUnordered::new();
    let mut bytes_in_flight = 0u64;
    loop {
        let next = schedule.next();
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
                schedule.release(i, Trigger::Completion, started.elapsed());
            }
            () = tokio::time::sleep(
                startable.map_or(Duration::ZERO, |(at, _)| at.saturating_sub(started.elapsed()))
            ), if startable.is_some() => {
                schedule.pop();
                let Some((_, i)) = startable else { continue };
                let bytes = prompt_bytes(plan.steps[i].request, block);
                bytes_in_flight += bytes;
                let dispatched_at = started.elapsed();
                running.push(dispatch(&invoker, &plan.steps[i], i, bytes, block, options, dispatched_at));
                schedule.release(i, Trigger::Dispatch, dispatched_at);
            }
        }
    }
    let elapsed = started.elapsed();
    Ok(ReplayReport {
        requests: finished(results, &plan.steps, elapsed),
        elapsed,
    })
}

/// Every step's result, in plan order. Every step is sent once what it waits for is done, and the
/// graph has no cycle; a step left unsent would be a bug, reported rather than dropped.
fn finished(
    results: Vec<Option<Replayed>>,
    steps: &[Step<'_>],
    elapsed: Duration,
) -> Vec<Replayed> {
    results
        .into_iter()
        .zip(steps)
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
        .collect()
}

#[cfg(test)]
mod tests;
