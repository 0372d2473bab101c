//! A failed transport (the connection, an HTTP answer) in words. The SDK's own messages name its
//! internal types (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`), which tell
//! a user nothing.

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::transport::DynamicTransportError;

use super::printable;

/// What went wrong in the transport, without the SDK's type names.
pub(crate) fn transport_problem(error: &DynamicTransportError) -> String {
    let inner: &(dyn std::error::Error + 'static) = error.error.as_ref();
    match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(http) => http_problem(http),
        None => printable(&inner.to_string()),
    }
}

/// Why the handshake failed, for "the MCP handshake failed: …".
pub(crate) fn handshake_problem(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, .. } => transport_problem(error),
        // The discovery's failure says no more than the fallback's.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => handshake_problem(fallback),
        other => printable(&other.to_string()),
    }
}

/// A failed request or an unusable answer over streamable HTTP.
fn http_problem(error: &StreamableHttpError<reqwest::Error>) -> String {
    match error {
        StreamableHttpError::Client(e) => request_problem(e),
        StreamableHttpError::HttpStatus(answer) => {
            format!("the server answered HTTP {}", answer.status)
        }
        StreamableHttpError::UnexpectedServerResponse(text) if is_redirect(text) => format!(
            "the server answered {}, a redirect; redirects are not followed (they would take the \
             credentials elsewhere): give the final address in `url:`",
            status_line(text)
        ),
        StreamableHttpError::UnexpectedServerResponse(text) => {
            // `HTTP 401 Unauthorized: ` when the body was empty.
            let text = text.trim_end().trim_end_matches(':');
            format!("the server answered {}", printable(text))
        }
        StreamableHttpError::UnexpectedContentType(kind) => format!(
            "the server answered with content type `{}`, neither JSON nor an event stream; is \
             `url:` the server's MCP endpoint?",
            printable(kind.as_deref().unwrap_or("none"))
        ),
        StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_) => {
            "the server refused the request: it needs other credentials (`auth:` for OAuth, then \
             `lllm mcp login`; or `headers:`)"
                .to_owned()
        }
        other => printable(&other.to_string()),
    }
}

/// A request that got no answer: the connection failed or timed out.
fn request_problem(error: &reqwest::Error) -> String {
    // reqwest's own message names the URL, which may carry credentials; the deepest cause does not.
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let cause = printable(&cause.to_string());
    if error.is_timeout() {
        "the server did not answer in time".to_owned()
    } else if error.is_connect() {
        format!("cannot connect to the server: {cause}")
    } else {
        format!("the request failed: {cause}")
    }
}

/// Whether an unexpected answer (`HTTP 302 Found: …`) is a redirect.
fn is_redirect(text: &str) -> bool {
    text.strip_prefix("HTTP 3")
        .is_some_and(|rest| rest.len() >= 2 && rest.as_bytes()[..2].iter().all(u8::is_ascii_digit))
}

/// `HTTP 302 Found` of `HTTP 302 Found: <body>`.
fn status_line(text: &str) -> String {
    printable(text.split_once(':').map_or(text, |(line, _)| line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_are_told_apart_by_their_status() {
        assert!(is_redirect("HTTP 302 Found: "));
        assert!(is_redirect("HTTP 307 Temporary Redirect: moved"));
        assert!(!is_redirect("HTTP 404 Not Found: not found"));
        assert!(!is_redirect("HTTP 3"));
        assert_eq!(status_line("HTTP 302 Found: x"), "HTTP 302 Found");
    }
}
