//! Replaying a trace against a server (`lllm replay`): the recorded sessions, forks, timing and prompt
//! structure, with synthetic text, and the hints of a chosen profile.
//!
//! Each block id becomes the same pseudo-text every time, so requests that shared a prefix when they
//! were recorded share it again; each session sends its requests one after the other with the
//! recorded delays (scaled by the speed), and sessions run concurrently from their recorded start.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use lllm_core::{HintField, InferenceHints, Message, MessageLog, ModelArgs, Profile};
use lllm_core::{TraceHeader, TraceRow, TRACE_FORMAT};

use crate::invoker::{ChatRequest, Invoker, OpenAiInvoker, ServerDefaults};

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
    /// Time factor: 2.0 replays twice as fast.
    pub speed: f64,
    /// Tokens per block for a trace written without a header.
    pub block_size: usize,
}

/// A trace cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A line is not what the format says.
    #[error("line {line}: {message}")]
    Format {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One replayed request.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The recorded session.
    pub session_id: String,
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
    /// Every request, grouped by session in trace order.
    pub requests: Vec<Replayed>,
    /// The replay's wall time.
    pub elapsed: Duration,
}

impl ReplayReport {
    /// Per-session and total figures, as text for a terminal.
    pub fn summary(&self) -> String {
        let mut sessions: BTreeMap<&str, (usize, usize, u64, u64)> = BTreeMap::new();
        for r in &self.requests {
            let entry = sessions.entry(&r.session_id).or_default();
            entry.0 += 1;
            entry.1 += usize::from(r.error.is_some());
            entry.2 += r.prompt_tokens;
            entry.3 += r.cached_tokens;
        }
        let mut out = String::from(
            "session                                     requests errors   prompt   cached\n",
        );
        for (session, (requests, errors, prompt, cached)) in &sessions {
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

/// Reads a trace: its header and rows. A trace written without a header (rows only) is read with
/// blocks of `default_block` tokens.
pub(crate) fn parse_trace(
    text: &str,
    default_block: usize,
) -> Result<(TraceHeader, Vec<TraceRow>), ReplayError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .peekable();
    let (_, first) = *lines.peek().ok_or(ReplayError::Format {
        line: 1,
        message: "the trace is empty".into(),
    })?;
    let header: TraceHeader = match serde_json::from_str(first) {
        Ok(header) => {
            lines.next();
            header
        }
        Err(e) if serde_json::from_str::<TraceRow>(first).is_err() => {
            return Err(ReplayError::Format {
                line: 1,
                message: format!(
                    "not a trace header or row ({e}); a trace starts with {{\"format\": \"{TRACE_FORMAT}\", ...}}"
                ),
            })
        }
        Err(_) => TraceHeader {
            format: TRACE_FORMAT.to_owned(),
            block_size: default_block,
            blocks: "unknown".into(),
        },
    };
    if header.format != TRACE_FORMAT {
        return Err(ReplayError::Format {
            line: 1,
            message: format!("format `{}` is not `{TRACE_FORMAT}`", header.format),
        });
    }
    let rows = lines
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| ReplayError::Format {
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect::<Result<Vec<TraceRow>, _>>()?;
    Ok((header, rows))
}

/// The same text for the same block id, every time: about `tokens` tokens of it.
fn block_text(id: u64, tokens: usize) -> String {
    let mut rng = fastrand::Rng::with_seed(id);
    let words = tokens.max(1);
    (0..words)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Replays `text` (a trace) as `options` say.
pub async fn replay(text: &str, options: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    let (header, rows) = parse_trace(text, options.block_size)?;
    let mut sessions: BTreeMap<String, Vec<TraceRow>> = BTreeMap::new();
    for row in rows {
        sessions
            .entry(row.session_id.clone())
            .or_default()
            .push(row);
    }
    let invoker = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    let started = Instant::now();
    let speed = if options.speed > 0.0 {
        options.speed
    } else {
        1.0
    };
    let runs = sessions.into_values().map(|rows| {
        let invoker = invoker.clone();
        let block = header.block_size;
        async move {
            let mut done = Vec::with_capacity(rows.len());
            for (i, row) in rows.iter().enumerate() {
                // The first request at its recorded time; later ones after the recorded pause.
                let wait = if i == 0 {
                    Duration::from_millis(row.timestamp)
                        .div_f64(speed)
                        .saturating_sub(started.elapsed())
                } else {
                    Duration::from_millis(row.delay).div_f64(speed)
                };
                tokio::time::sleep(wait).await;
                done.push(send(invoker.as_ref(), row, block, options).await);
            }
            done
        }
    });
    let requests = join_all(runs).await.into_iter().flatten().collect();
    Ok(ReplayReport {
        requests,
        elapsed: started.elapsed(),
    })
}

async fn send(
    invoker: &dyn Invoker,
    row: &TraceRow,
    block: usize,
    options: &ReplayOptions,
) -> Replayed {
    let prompt: String = row
        .hash_ids
        .iter()
        .map(|id| block_text(*id, block))
        .collect::<Vec<_>>()
        .join("\n");
    let messages: MessageLog = [Message::user(prompt)].into_iter().collect();
    let args = ModelArgs::new()
        .api_base(options.api_base.clone())
        .param("max_tokens", row.output_length.max(1));
    let hints = hints_for(row, options);
    let fields = hints
        .request_fields(
            options.session.then_some(row.session_id.as_str()),
            row.parent_session_id.as_deref().filter(|_| options.session),
            &args,
        )
        .unwrap_or_default();
    let request = ChatRequest::new(options.model.clone(), messages, Arc::new(args), fields);
    let sent = Instant::now();
    let result = invoker.invoke(&request).await;
    let latency = sent.elapsed();
    match result {
        Ok(response) => {
            let usage = response.message.usage.unwrap_or_default();
            Replayed {
                session_id: row.session_id.clone(),
                response_id: response.id,
                prompt_tokens: usage.prompt_tokens,
                cached_tokens: usage.cached_tokens.unwrap_or(0),
                latency,
                error: None,
            }
        }
        Err(error) => Replayed {
            session_id: row.session_id.clone(),
            response_id: None,
            prompt_tokens: 0,
            cached_tokens: 0,
            latency,
            error: Some(error.to_string()),
        },
    }
}

/// The recorded priority and osl, as far as the profile can send them.
fn hints_for(row: &TraceRow, options: &ReplayOptions) -> InferenceHints {
    let profile = options.profile;
    let mut builder = InferenceHints::builder()
        .profile(profile)
        .session(options.session);
    if let Some(p) = row.priority.and_then(|p| i32::try_from(p).ok()) {
        if profile.sends(HintField::Priority) {
            builder = builder.priority(p);
        }
    }
    if let Some(osl) = row
        .osl
        .and_then(|o| u32::try_from(o).ok())
        .filter(|o| *o > 0)
    {
        if profile.sends(HintField::Osl) {
            builder = builder.osl(osl);
        }
    }
    builder
        .build()
        .unwrap_or_else(|_| InferenceHints::for_profile(profile))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_texts_are_stable_and_distinct() {
        assert_eq!(block_text(7, 64), block_text(7, 64));
        assert_ne!(block_text(7, 64), block_text(8, 64));
        assert_eq!(block_text(1, 64).split(' ').count(), 64);
    }

    #[test]
    fn traces_are_checked_line_by_line() {
        assert!(parse_trace("", 64).is_err());
        let other = r#"{"format": "other", "block_size": 1, "blocks": "x"}"#;
        let err = parse_trace(other, 64).expect_err("format");
        assert!(err.to_string().contains("is not `lllm-trace/1`"));
        let bad_row = "{\"format\": \"lllm-trace/1\", \"block_size\": 4, \"blocks\": \"chars/4\"}\n{\"oops\": 1}";
        let err = parse_trace(bad_row, 64).expect_err("row");
        assert!(err.to_string().starts_with("line 2:"), "{err}");
        let row = r#"{"session_id": "s", "agent": "a", "timestamp": 0, "delay": 0, "tool_wait_ms": 0, "input_length": 3, "output_length": 2, "hash_ids": [1], "latency_ms": 1}"#;
        let (header, rows) = parse_trace(row, 32).expect("rows only");
        assert_eq!((header.block_size, rows.len()), (32, 1));
    }
}
