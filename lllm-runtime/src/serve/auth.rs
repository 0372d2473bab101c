//! The serve key: with one, every route needs `Authorization: Bearer KEY`.

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

    /// Whether `header` is `Bearer KEY`, compared in time that does not depend on where it differs.
    fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some(given) = header.and_then(|h| h.strip_prefix(b"Bearer ")) else {
            return false;
        };
        let expected = self.0.as_bytes();
        given.len() == expected.len()
            && given
                .iter()
                .zip(expected)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
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
        next.run(request).await
    } else {
        ApiError::unauthorized().into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_key_is_admitted() {
        let key = ServeKey::new("s3cret");
        assert!(key.admits(Some(b"Bearer s3cret")));
        for wrong in [
            &b"Bearer s3cre"[..],
            b"Bearer s3cret2",
            b"bearer s3cret",
            b"s3cret",
            b"",
        ] {
            assert!(!key.admits(Some(wrong)));
        }
        assert!(!key.admits(None));
        assert!(!format!("{key:?}").contains("s3cret"));
    }
}
