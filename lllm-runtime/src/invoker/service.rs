//! The HTTP layer under async-openai: sends one attempt and turns an error status into a typed failure
//! that keeps the status, the server's message and `Retry-After`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// Most characters of a server's error text kept in an error.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// An error status from the server, carried through async-openai unchanged.
#[derive(Debug, Clone, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub(crate) struct HttpFailure {
    pub(crate) status: u16,
    pub(crate) message: String,
    pub(crate) retry_after: Option<Duration>,
}

/// A tower service that executes async-openai's requests with a shared reqwest client.
#[derive(Debug, Clone)]
pub(crate) struct HttpService {
    pub(crate) client: reqwest::Client,
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for HttpService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let client = self.client.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            let response = client.execute(request).await?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = parse_retry_after(response.headers());
            let body = response.bytes().await.unwrap_or_default();
            Err(OpenAIError::Boxed(Box::new(HttpFailure {
                status: status.as_u16(),
                message: server_message(&body, status.canonical_reason()),
                retry_after,
            })))
        })
    }
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

/// The server's explanation: `error.message`, `error`, `message` or `detail` of a JSON body, else the text.
pub(crate) fn server_message(body: &[u8], reason: Option<&str>) -> String {
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
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    let text = if text.is_empty() {
        reason.unwrap_or("no message").to_owned()
    } else {
        text
    };
    if text.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
        format!("{cut}…")
    } else {
        text
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
        assert_eq!(
            server_message(br#"{"error":{"message":"bad model","type":"x"}}"#, None),
            "bad model"
        );
        assert_eq!(
            server_message(br#"{"message":"Unsupported parameter(s): `priority`","type":"Bad Request","code":400}"#, None),
            "Unsupported parameter(s): `priority`"
        );
        assert_eq!(
            server_message(br#"{"error":"overloaded"}"#, None),
            "overloaded"
        );
        assert_eq!(server_message(b"plain text\n", None), "plain text");
        assert_eq!(server_message(b"", Some("Bad Gateway")), "Bad Gateway");
    }
}
