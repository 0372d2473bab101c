//! Helpers for tests and benchmarks that look at what a run wrote or where a router sent it.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A writer whose bytes can be read back (for a [`crate::trace::TraceRecorder`] in tests).
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// Everything written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Which worker served each request, read from an NVIDIA Dynamo frontend log: its lines
/// `request completed request_id=<id> ... decode_worker_id=<worker>` (the id without `chatcmpl-`).
pub fn dynamo_workers(log: &str) -> HashMap<String, String> {
    completed_requests(log, "decode_worker_id=", |worker| Some(worker.to_owned()))
}

/// Each request's time to first token in milliseconds, as the Dynamo frontend measured it, read
/// from the same `request completed` lines (`ttft_ms=<ms>`), by request id.
pub fn dynamo_ttfts(log: &str) -> HashMap<String, f64> {
    completed_requests(log, "ttft_ms=", |ms| ms.trim_matches('"').parse().ok())
}

/// The field `key` of every `request completed` line of a frontend log, read with `value`, by
/// request id.
fn completed_requests<T>(
    log: &str,
    key: &str,
    value: impl Fn(&str) -> Option<T>,
) -> HashMap<String, T> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("service::metrics") && l.contains("request completed"))
        .filter_map(|line| {
            let clean = strip_ansi(line);
            let id = field(&clean, "request_id=")?.to_owned();
            Some((id, value(field(&clean, key)?)?))
        })
        .collect()
}

/// [`dynamo_workers`] once the log names the worker of every response in `response_ids` (with or
/// without `chatcmpl-`): the frontend writes a request's line just after it answers. Gives what the
/// log holds after `limit` if some never appear.
pub async fn dynamo_workers_for(
    log: &str,
    response_ids: &[&str],
    limit: std::time::Duration,
) -> HashMap<String, String> {
    let wanted: Vec<&str> = response_ids
        .iter()
        .map(|id| id.trim_start_matches("chatcmpl-"))
        .filter(|id| !id.is_empty())
        .collect();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let served_by = dynamo_workers(log);
        let complete = wanted.iter().all(|id| served_by.contains_key(*id));
        if complete || tokio::time::Instant::now() >= deadline {
            return served_by;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    line[start..].split_whitespace().next()
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `request completed` line of Dynamo 1.6.1's frontend log, colours and all, and the route
    /// line before it, which names the same request but is not a completion.
    const LOG: &str = "\u{1b}[2m2026-12-03T21:09:26.103937Z\u{1b}[0m INFO http-request: route request completed request_id=04466a42 worker_id=1\n\u{1b}[2m2026-12-03T21:09:26.104067Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[1mhttp-request\u{1b}[0m: \u{1b}[2mdynamo_llm::http::service::metrics\u{1b}[0m\u{1b}[2m:\u{1b}[0m request completed \u{1b}[3mrequest_id\u{1b}[0m\u{1b}[2m=\u{1b}[0mb5e835c9-2432-44e9-9d25-8aeff9c50e67 \u{1b}[3mmodel\u{1b}[0m\u{1b}[2m=\u{1b}[0mtiny \u{1b}[3mendpoint\u{1b}[0m\u{1b}[2m=\u{1b}[0mchat_completions \u{1b}[3mrequest_type\u{1b}[0m\u{1b}[2m=\u{1b}[0mstream \u{1b}[3mstatus\u{1b}[0m\u{1b}[2m=\u{1b}[0msuccess \u{1b}[3melapsed_ms\u{1b}[0m\u{1b}[2m=\u{1b}[0m2106 \u{1b}[2m\u{1b}[3mmethod\u{1b}[0m\u{1b}[2m=\u{1b}[0mPOST \u{1b}[3muri\u{1b}[0m\u{1b}[2m=\u{1b}[0m/v1/chat/completions \u{1b}[3mversion\u{1b}[0m\u{1b}[2m=\u{1b}[0mHTTP/1.1 \u{1b}[3mrequest_id\u{1b}[0m\u{1b}[2m=\u{1b}[0m04466a42-0829-48e7-8d0a-f998f10512be \u{1b}[3mmodel\u{1b}[0m\u{1b}[2m=\u{1b}[0m\"tiny\" \u{1b}[3minput_tokens\u{1b}[0m\u{1b}[2m=\u{1b}[0m1514 \u{1b}[3moutput_tokens\u{1b}[0m\u{1b}[2m=\u{1b}[0m273 \u{1b}[3mimage_count\u{1b}[0m\u{1b}[2m=\u{1b}[0m0 \u{1b}[3mvideo_count\u{1b}[0m\u{1b}[2m=\u{1b}[0m0 \u{1b}[3maudio_count\u{1b}[0m\u{1b}[2m=\u{1b}[0m0 \u{1b}[3mttft_ms\u{1b}[0m\u{1b}[2m=\u{1b}[0m\"100.41\" \u{1b}[3mavg_itl_ms\u{1b}[0m\u{1b}[2m=\u{1b}[0m\"7.37\" \u{1b}[3mprefill_worker_id\u{1b}[0m\u{1b}[2m=\u{1b}[0m2205343891790062891 \u{1b}[3mdecode_worker_id\u{1b}[0m\u{1b}[2m=\u{1b}[0m2205343891790062891 \u{1b}[3mrequest.outcome\u{1b}[0m\u{1b}[2m=\u{1b}[0m\"success\"\u{1b}[0m\n";

    #[test]
    fn workers_and_ttfts_are_read_from_the_completion_lines_only() {
        let path = std::env::temp_dir().join(format!("lllm-capture-{}.log", std::process::id()));
        std::fs::write(&path, LOG).expect("log written");
        let log = path.to_str().expect("utf-8 path");
        let workers = dynamo_workers(log);
        let ttfts = dynamo_ttfts(log);
        std::fs::remove_file(&path).ok();
        assert_eq!(workers.len(), 1, "{workers:?}");
        assert_eq!(ttfts.len(), 1, "{ttfts:?}");
        let (id, worker) = workers.iter().next().expect("one");
        assert!(worker.parse::<u64>().is_ok(), "{worker}");
        assert!(ttfts.get(id).is_some_and(|ms| *ms > 0.0), "{ttfts:?}");
    }
}
