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
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("service::metrics") && l.contains("request completed"))
        .filter_map(|line| {
            let clean = strip_ansi(line);
            let id = field(&clean, "request_id=")?.to_owned();
            let worker = field(&clean, "decode_worker_id=")?.to_owned();
            Some((id, worker))
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
