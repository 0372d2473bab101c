//! The HTTP exchange of one model call. Everything the server sends is hostile: the request is sent
//! once and redirects are never followed; answer bodies, error bodies and server-sent events are read
//! with size limits; what errors show of them is a short, redacted excerpt.

use std::time::{Duration, SystemTime};

use lllm_core::full_message;
use lllm_core::secret::redact_url;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER};

use super::error::{excerpt, printable, Secrets, EXCERPT_CHARS};
use super::InvokeError;

/// Most characters of a server's error message kept in an error.
const MAX_MESSAGE_CHARS: usize = 1_000;

/// Size limits on what a server sends back. Anything larger ends the call with
/// [`InvokeError::TooLarge`]; an error body is cut instead, since only its start is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponseLimits {
    /// Largest answer body of a call without streaming (default 32 MiB).
    pub max_answer_bytes: usize,
    /// Bytes of an error body kept to explain an error status (default 64 KiB); the rest is not read.
    pub max_error_bytes: usize,
    /// Largest line or event of a streamed answer (default 4 MiB).
    pub max_event_bytes: usize,
    /// Largest streamed answer, all events together (default 64 MiB).
    pub max_stream_bytes: usize,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        const MIB: usize = 1024 * 1024;
        ResponseLimits {
            max_answer_bytes: 32 * MIB,
            max_error_bytes: 64 * 1024,
            max_event_bytes: 4 * MIB,
            max_stream_bytes: 64 * MIB,
        }
    }
}

impl ResponseLimits {
    /// The limits with answer bodies of at most `bytes`.
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// The limits keeping at most `bytes` of an error body.
    pub fn max_error_bytes(mut self, bytes: usize) -> Self {
        self.max_error_bytes = bytes;
        self
    }

    /// The limits with streamed lines and events of at most `bytes`.
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// The limits with streamed answers of at most `bytes` in all.
    pub fn max_stream_bytes(mut self, bytes: usize) -> Self {
        self.max_stream_bytes = bytes;
        self
    }
}

/// Most tool calls taken from one answer; more is an invalid answer.
pub(crate) const MAX_TOOL_CALLS: usize = 1024;

/// A connection failure, the URL given once with its credentials redacted (reqwest's message would
/// repeat it in clear).
pub(crate) fn connection_error(url: &str, error: reqwest::Error) -> InvokeError {
    InvokeError::Connection {
        url: redact_url(url),
        message: full_message(&error.without_url()),
    }
}

/// Sends `body` to `url` once. An error status becomes [`InvokeError::Http`] (its body read up to
/// `max_error_bytes`), a redirect [`InvokeError::Redirect`]; a success is returned unread.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    body: Vec<u8>,
    limits: &ResponseLimits,
    secrets: &Secrets,
) -> Result<reqwest::Response, InvokeError> {
    let response = client
        .post(url)
        .headers(headers)
        .header(CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| connection_error(url, e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    if status.is_redirection() {
        let location = response.headers().get(LOCATION).map(|l| {
            excerpt(
                redact_url(&String::from_utf8_lossy(l.as_bytes())).as_bytes(),
                EXCERPT_CHARS,
                secrets,
            )
        });
        return Err(InvokeError::Redirect { status, location });
    }
    let retry_after = parse_retry_after(response.headers());
    let body = read_capped(response, limits.max_error_bytes).await;
    Err(InvokeError::Http {
        status,
        message: server_message(&body, status.canonical_reason(), secrets),
        retry_after,
    })
}

/// Whether the answer is a stream of server-sent events (else a server that ignored `stream: true`
/// answered with one body, or something else entirely).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// The whole body, or [`InvokeError::TooLarge`] as soon as it (or its announced `Content-Length`)
/// passes `limit`. Memory stays within the limit whatever the server sends.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
    url: &str,
) -> Result<Vec<u8>, InvokeError> {
    let too_large = || InvokeError::TooLarge {
        what: "answer body",
        limit,
    };
    let announced = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let start = announced.map_or(8 * 1024, |n| n as usize).min(limit);
    let mut body = Vec::with_capacity(start);
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| connection_error(url, e))?
    {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The first `keep` bytes of the body; the rest is not read. A body that breaks gives what came.
async fn read_capped(mut response: reqwest::Response, keep: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = keep - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= keep {
            break;
        }
    }
    body
}

/// `Retry-After` as seconds or as an HTTP date.
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    // RFC 9110 says whole seconds; fractions are accepted, anything unrepresentable is ignored.
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The server's explanation: `error.message`, `error`, `message` or `detail` of a JSON body, else an
/// excerpt of the body; printable, shortened and with the request's secrets redacted.
pub(crate) fn server_message(body: &[u8], reason: Option<&str>, secrets: &Secrets) -> String {
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|json| {
            let pick = |v: &serde_json::Value| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => other
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_owned),
            };
            ["error", "message", "detail"]
                .iter()
                .find_map(|k| json.get(*k).and_then(pick))
                .or_else(|| json.get("detail").map(|d| d.to_string()))
        });
    match from_json {
        Some(text) if !text.trim().is_empty() => {
            printable(&secrets.redact(text.trim()), MAX_MESSAGE_CHARS, false)
        }
        _ if body.iter().all(u8::is_ascii_whitespace) => reason.unwrap_or("no message").to_owned(),
        _ => excerpt(body.trim_ascii(), EXCERPT_CHARS, secrets),
    }
}

/// One event of a stream: its data lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, empty when there was none.
    pub(crate) event: String,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
}

/// Splits a byte stream into server-sent events (the WHATWG format: lines end with CRLF, LF or CR;
/// `data:` lines accumulate until a blank line), within the limits: no line or event longer than
/// `max_event_bytes`, no more than `max_stream_bytes` in all. Bytes that are not UTF-8 become U+FFFD,
/// as the format says.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    total: usize,
    after_cr: bool,
    max_event_bytes: usize,
    max_stream_bytes: usize,
}

impl SseDecoder {
    pub(crate) fn new(limits: &ResponseLimits) -> Self {
        SseDecoder {
            line: Vec::new(),
            event: String::new(),
            data: String::new(),
            has_data: false,
            total: 0,
            after_cr: false,
            max_event_bytes: limits.max_event_bytes,
            max_stream_bytes: limits.max_stream_bytes,
        }
    }

    /// Feeds bytes; complete events are appended to `events`.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        events: &mut Vec<SseEvent>,
    ) -> Result<(), InvokeError> {
        self.total = self.total.saturating_add(bytes.len());
        if self.total > self.max_stream_bytes {
            return Err(InvokeError::TooLarge {
                what: "streamed answer",
                limit: self.max_stream_bytes,
            });
        }
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.extend_line(&rest[..end])?;
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, events)?;
            self.line = line;
            self.line.clear();
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => rest = &rest[end + 2..],
                    Some(_) => rest = &rest[end + 1..],
                    None => {
                        self.after_cr = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[end + 1..];
            }
        }
        self.extend_line(rest)
    }

    /// Ends the stream: an event not closed by its blank line is dropped, as the format says.
    pub(crate) fn finish(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
    }

    fn too_large(&self) -> InvokeError {
        InvokeError::TooLarge {
            what: "server-sent event",
            limit: self.max_event_bytes,
        }
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), InvokeError> {
        if self.line.len() + bytes.len() > self.max_event_bytes {
            return Err(self.too_large());
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) -> Result<(), InvokeError> {
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
                self.has_data = false;
            }
            self.event.clear();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max_event_bytes {
                    return Err(self.too_large());
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => {
                self.event = printable(&String::from_utf8_lossy(value), 64, false);
            }
            // `id` and `retry` mean nothing for one answer; unknown fields are ignored.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds_or_date() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "2".parse().expect("value"));
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().expect("value"),
        );
        assert_eq!(parse_retry_after(&headers), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, "soon".parse().expect("value"));
        assert_eq!(parse_retry_after(&headers), None);
        for absurd in ["1e20", "-1", "NaN", "inf"] {
            headers.insert(RETRY_AFTER, absurd.parse().expect("value"));
            assert_eq!(parse_retry_after(&headers), None, "{absurd}");
        }
        headers.insert(RETRY_AFTER, "0.5".parse().expect("value"));
        assert_eq!(
            parse_retry_after(&headers),
            Some(Duration::from_millis(500))
        );
    }

    #[test]
    fn server_messages_from_common_error_shapes() {
        let none = Secrets::default();
        let msg = |body: &[u8], reason| server_message(body, reason, &none);
        assert_eq!(
            msg(br#"{"error":{"message":"bad model","type":"x"}}"#, None),
            "bad model"
        );
        assert_eq!(
            msg(br#"{"message":"Unsupported parameter(s): `priority`","type":"Bad Request","code":400}"#, None),
            "Unsupported parameter(s): `priority`"
        );
        assert_eq!(msg(br#"{"error":"overloaded"}"#, None), "overloaded");
        assert_eq!(msg(b"plain text\n", None), "plain text");
        assert_eq!(msg(b"", Some("Bad Gateway")), "Bad Gateway");
        let secrets = Secrets::from_values(["sk-echoed".to_owned()]);
        assert_eq!(
            server_message(b"{\"error\": \"bad key sk-echoed\"}", None, &secrets),
            "bad key [redacted]"
        );
        assert_eq!(
            server_message(b"<h1>bad key sk-echoed</h1>", None, &secrets),
            "<h1>bad key [redacted]</h1>"
        );
    }

    fn events(limits: &ResponseLimits, pieces: &[&[u8]]) -> Result<Vec<SseEvent>, InvokeError> {
        let mut decoder = SseDecoder::new(limits);
        let mut out = Vec::new();
        for piece in pieces {
            decoder.feed(piece, &mut out)?;
        }
        decoder.finish();
        Ok(out)
    }

    #[test]
    fn sse_lines_end_in_any_way_and_split_anywhere() {
        let limits = ResponseLimits::default();
        let data = |d: &str| SseEvent {
            event: String::new(),
            data: d.to_owned(),
        };
        let got = events(
            &limits,
            &[
                b"data: a\r",
                b"\ndata:b\r\r: comment\n",
                b"event: keepalive\ndata: k\n\ndata: c\n",
            ],
        )
        .expect("fine");
        assert_eq!(
            got,
            vec![
                data("a\nb"),
                SseEvent {
                    event: "keepalive".into(),
                    data: "k".into()
                }
            ]
        );
        let got = events(&limits, &[b"data: \xff\xfe\n\n"]).expect("lossy");
        assert_eq!(got, vec![data("\u{fffd}\u{fffd}")]);
    }

    #[test]
    fn sse_limits_lines_events_and_the_stream() {
        let limits = ResponseLimits {
            max_event_bytes: 16,
            max_stream_bytes: 64,
            ..ResponseLimits::default()
        };
        let long_line = events(&limits, &[b"data: 0123456789", b"0123456789"]);
        assert!(matches!(
            long_line,
            Err(InvokeError::TooLarge {
                what: "server-sent event",
                ..
            })
        ));
        let long_event = events(&limits, &[b"data: 0123456789\ndata: 0123456789\n"]);
        assert!(matches!(
            long_event,
            Err(InvokeError::TooLarge {
                what: "server-sent event",
                ..
            })
        ));
        let pings = [b": ping\n\n".as_slice(); 20];
        let endless = events(&limits, &pings);
        assert!(matches!(
            endless,
            Err(InvokeError::TooLarge {
                what: "streamed answer",
                ..
            })
        ));
    }
}
