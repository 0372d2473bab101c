//! The serve key: with one, every route needs `Authorization: Bearer KEY`, or, from a browser
//! showing the console, HTTP Basic with the key as the password (any user name): the browser asks
//! for it once and answers every later challenge of the server with it, its event streams' too.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The key requests must carry. Its `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct ServeKey(Arc<str>);

impl std::fmt::Debug for ServeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServeKey([redacted])")
    }
}

impl ServeKey {
    pub(crate) fn new(key: &str) -> Self {
        ServeKey(Arc::from(key))
    }

    /// Whether `header` is `Bearer KEY` or Basic with the password KEY, compared in time that does
    /// not depend on where it differs.
    fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some(header) = header else {
            return false;
        };
        if let Some(given) = scheme(header, b"bearer ") {
            return self.is(given);
        }
        let Some(encoded) = scheme(header, b"basic ") else {
            return false;
        };
        use base64::Engine as _;
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim_ascii())
        else {
            return false;
        };
        match decoded.iter().position(|&b| b == b':') {
            Some(colon) => self.is(&decoded[colon + 1..]),
            None => false,
        }
    }

    fn is(&self, given: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        given.len() == expected.len()
            && given
                .iter()
                .zip(expected)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// What follows the scheme `name` (lowercase, with its space), which is matched in any case.
fn scheme<'h>(header: &'h [u8], name: &[u8]) -> Option<&'h [u8]> {
    (header.len() >= name.len() && header[..name.len()].eq_ignore_ascii_case(name))
        .then(|| &header[name.len()..])
}

/// Whether the 401 also offers Basic, which a browser answers with the password its user typed
/// (the console's page prompts; its API requests and event streams are answered from the browser's
/// password cache): only when asked by the server's address or `localhost`, never by a name that
/// another site's DNS could point here, whose prompt would hand the key to that site.
fn offers_basic(request: &Request) -> bool {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    host.is_some_and(super::origin::is_local_host)
}

/// Refuses a request without the key (401), before any route sees it.
pub(crate) async fn require_key(
    State(key): State<ServeKey>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if key.admits(given) {
        return next.run(request).await;
    }
    let mut response = ApiError::unauthorized().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    if offers_basic(&request) {
        // A browser asks its user for a name and password: the password is the key.
        headers.append(
            header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static(
                "Basic realm=\"lllm serve (the password is the serve key)\", charset=\"UTF-8\"",
            ),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_key_is_admitted() {
        let key = ServeKey::new("s3cret");
        assert!(key.admits(Some(b"Bearer s3cret")));
        for wrong in [&b"Bearer s3cre"[..], b"Bearer s3cret2", b"s3cret", b""] {
            assert!(!key.admits(Some(wrong)));
        }
        assert!(!key.admits(None));
        // user:s3cret, :s3cret, user:s3cre, s3cret (no colon)
        assert!(key.admits(Some(b"Basic dXNlcjpzM2NyZXQ=")));
        assert!(key.admits(Some(b"Basic OnMzY3JldA==")));
        assert!(!key.admits(Some(b"Basic dXNlcjpzM2NyZQ==")));
        assert!(!key.admits(Some(b"Basic czNjcmV0")));
        assert!(!key.admits(Some(b"Basic !!!")));
        assert!(key.admits(Some(b"bearer s3cret")));
        assert!(key.admits(Some(b"BASIC dXNlcjpzM2NyZXQ=")));
        assert!(!format!("{key:?}").contains("s3cret"));
    }
}
