//! Typed errors of model calls, and the printable, redacted excerpts they carry.

use std::time::Duration;

use http::StatusCode;

pub(crate) use lllm_core::secret::Secrets;

/// A model call failed.
///
/// Every text an error carries comes from a hostile server at most in a short excerpt: control bytes
/// escaped, binary elided, and the request's own credentials replaced by `[redacted]`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvokeError {
    /// The server answered with an error status.
    #[error("the server answered HTTP {}: {message}", status.as_u16())]
    Http {
        /// The HTTP status code.
        status: StatusCode,
        /// The server's message (from its JSON error, else its text, shortened).
        message: String,
        /// How long the server asked to wait (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// The server answered with a redirect. Redirects are never followed for API calls: they would
    /// carry the credentials (and, for 307 and 308, the prompt) to wherever the server points.
    #[error(
        "the server answered HTTP {}, a redirect to {}; redirects are not followed for API \
         calls (they would carry credentials and the prompt elsewhere): set api_base to the final URL",
        status.as_u16(),
        location.as_deref().unwrap_or("nowhere (no Location)")
    )]
    Redirect {
        /// The HTTP status code (3xx).
        status: StatusCode,
        /// The `Location` header, with user name, password and query redacted.
        location: Option<String>,
    },
    /// An answer body, error body or server-sent event was larger than its limit.
    #[error("the server's {what} is larger than the limit of {}", bytes(*limit))]
    TooLarge {
        /// What was too large ("answer body", "streamed answer", "server-sent event").
        what: &'static str,
        /// The limit, in bytes (see [`ResponseLimits`](crate::invoker::ResponseLimits)).
        limit: usize,
    },
    /// The server asked (`Retry-After`) to wait longer than the request's time limits allow, so the
    /// call failed at once instead of waiting.
    #[error(
        "the server answered HTTP {} and asked to wait {asked:?} before trying again \
         (Retry-After), longer than the {allowed:?} allowed by {limited_by}: {message}",
        status.as_u16()
    )]
    RetryAfterTooLong {
        /// The HTTP status code.
        status: StatusCode,
        /// The server's message.
        message: Box<str>,
        /// The wait the server asked for.
        asked: Duration,
        /// The longest wait allowed.
        allowed: Duration,
        /// The setting that allows no longer.
        limited_by: WaitLimit,
    },
    /// No answer: the connection failed or broke.
    #[error("cannot reach the server at {url}: {message}")]
    Connection {
        /// Where the request went.
        url: String,
        /// What failed.
        message: String,
    },
    /// No answer within the per-request timeout.
    #[error("no answer within {0:?} (raise model_args.timeout if the model needs longer)")]
    Timeout(Duration),
    /// The server answered 2xx with something that is not a chat completion.
    #[error("the server's answer is not a chat completion: {problem}")]
    InvalidResponse {
        /// What is wrong with it (a short excerpt at most).
        problem: String,
    },
    /// A header of the request cannot be sent. Its value is not shown: it may be a credential.
    #[error("the header `{name}` cannot be sent: its name or value is not valid HTTP")]
    InvalidHeader {
        /// The header's name.
        name: String,
    },
    /// The client library could not build or send the request.
    #[error("cannot build the request: {problem}")]
    Request {
        /// What failed.
        problem: String,
    },
    /// The process is stopping ([`halt`](crate::events::halt) was called): no request is sent any more.
    #[error("not sent: the run is stopping")]
    Halted,
}

/// The setting that bounds how long a retry may wait for a server's `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitLimit {
    /// The per-request `model_args.timeout`: a server that needs longer will not answer in time.
    Timeout,
    /// What is left of the respond's `model_args.deadline`.
    Deadline,
    /// The retry policy's [`max_retry_after`](crate::agent::RetryPolicy::max_retry_after).
    Policy,
}

impl std::fmt::Display for WaitLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WaitLimit::Timeout => "model_args.timeout",
            WaitLimit::Deadline => "what is left of model_args.deadline",
            WaitLimit::Policy => "the retry policy (max_retry_after)",
        })
    }
}

fn bytes(n: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB ({n} bytes)", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB ({n} bytes)", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

impl InvokeError {
    /// Whether trying again may help: 408, 409, 429, 5xx, connection failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            InvokeError::Http { status, .. } => {
                matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
            }
            InvokeError::Connection { .. } | InvokeError::Timeout(_) => true,
            InvokeError::Redirect { .. }
            | InvokeError::TooLarge { .. }
            | InvokeError::RetryAfterTooLong { .. }
            | InvokeError::InvalidResponse { .. }
            | InvokeError::InvalidHeader { .. }
            | InvokeError::Request { .. }
            | InvokeError::Halted => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            InvokeError::Http { retry_after, .. } => *retry_after,
            InvokeError::RetryAfterTooLong { asked, .. } => Some(*asked),
            _ => None,
        }
    }

    /// Whether no answer came within the per-request timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, InvokeError::Timeout(_))
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            InvokeError::Http { status, .. }
            | InvokeError::Redirect { status, .. }
            | InvokeError::RetryAfterTooLong { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The same error with every secret of `secrets` replaced in its texts.
    pub(crate) fn redacted(self, secrets: &Secrets) -> Self {
        if secrets.is_empty() {
            return self;
        }
        let r = |text: String| secrets.redact(&text);
        match self {
            InvokeError::Http {
                status,
                message,
                retry_after,
            } => InvokeError::Http {
                status,
                message: r(message),
                retry_after,
            },
            InvokeError::Redirect { status, location } => InvokeError::Redirect {
                status,
                location: location.map(r),
            },
            InvokeError::RetryAfterTooLong {
                status,
                message,
                asked,
                allowed,
                limited_by,
            } => InvokeError::RetryAfterTooLong {
                status,
                message: r(message.into()).into(),
                asked,
                allowed,
                limited_by,
            },
            InvokeError::Connection { url, message } => InvokeError::Connection {
                url: r(url),
                message: r(message),
            },
            InvokeError::InvalidResponse { problem } => InvokeError::InvalidResponse {
                problem: r(problem),
            },
            InvokeError::Request { problem } => InvokeError::Request {
                problem: r(problem),
            },
            other @ (InvokeError::TooLarge { .. }
            | InvokeError::Timeout(_)
            | InvokeError::InvalidHeader { .. }
            | InvokeError::Halted) => other,
        }
    }
}

/// Most characters of a body shown in an error.
pub(crate) const EXCERPT_CHARS: usize = 200;

/// A short, printable excerpt of bytes from the server: at most `max_chars` characters, secrets
/// redacted, control characters escaped, and binary data (such as raw gzip) not shown at all.
pub(crate) fn excerpt(bytes: &[u8], max_chars: usize, secrets: &Secrets) -> String {
    if bytes.is_empty() {
        return "(empty)".to_owned();
    }
    if looks_binary(bytes) {
        return format!("({} bytes of binary data, not shown)", bytes.len());
    }
    // Enough of the text that a secret starting inside the excerpt is seen whole by the redaction.
    let window = max_chars + secrets.longest_chars() + 1;
    let head = &bytes[..bytes.len().min(window * 4)];
    let text: String = String::from_utf8_lossy(head).chars().take(window).collect();
    printable(&secrets.redact(&text), max_chars, bytes.len() > head.len())
}

/// `text` made printable: control characters escaped, cut to `max_chars` characters (with `…` when
/// cut or when `more` says the text went on).
pub(crate) fn printable(text: &str, max_chars: usize, more: bool) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut cut = more;
    for (count, c) in text.chars().enumerate() {
        if count >= max_chars {
            cut = true;
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}') =>
            {
                out.extend(c.escape_unicode())
            }
            c => out.push(c),
        }
    }
    if cut {
        out.push('…');
    }
    out
}

/// Whether bytes look like binary data rather than text: a NUL, or many bytes that are not UTF-8 or
/// are control characters, in their first KiB.
fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1024)];
    if head.contains(&0) {
        return true;
    }
    let text = String::from_utf8_lossy(head);
    let odd = text
        .chars()
        .filter(|c| *c == char::REPLACEMENT_CHARACTER || (c.is_control() && !c.is_whitespace()))
        .count();
    // A cut multibyte character at the end of the head is not evidence.
    odd > 2 && odd * 10 > text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_short_escaped_and_redacted() {
        let secrets = Secrets::from_values(["sk-very-secret".to_owned(), "ab".to_owned()]);
        let long = format!("{}sk-very-secret", "x".repeat(195));
        let shown = excerpt(long.as_bytes(), EXCERPT_CHARS, &secrets);
        assert!(!shown.contains("sk-very"), "{shown}");
        assert!(shown.chars().count() <= EXCERPT_CHARS + 1, "{shown}");
        assert_eq!(
            excerpt(b"a\x1b[31mb\nc ab", 200, &secrets),
            "a\\u{1b}[31mb\\nc ab"
        );
        let gzip = [
            0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xff,
        ];
        assert_eq!(
            excerpt(&gzip, 200, &secrets),
            "(11 bytes of binary data, not shown)"
        );
        assert_eq!(excerpt(b"", 200, &secrets), "(empty)");
        assert_eq!(printable("abcdef", 3, false), "abc…");
    }

    #[test]
    fn secrets_of_a_request() {
        let secrets = Secrets::of_request(
            &[
                ("authorization".into(), "Bearer sk-abcdef".into()),
                ("x-api-key".into(), "key-12345".into()),
                ("x-session-id".into(), "session-1".into()),
            ],
            "http://user:pw-secret@127.0.0.1/v1?token=q-secret",
        );
        let text = "Bearer sk-abcdef sk-abcdef key-12345 session-1 pw-secret q-secret";
        assert_eq!(
            secrets.redact(text),
            "[redacted] [redacted] [redacted] session-1 [redacted] [redacted]"
        );
    }
}
