//! The serve key: with one, every route needs `Authorization: Bearer KEY`, or, from a browser
//! showing the console, HTTP Basic with the key as the password (any user name): the browser asks
//! for it once and answers every later challenge of the server with it, its event streams' too.
//! With several keys, each is a caller of its own: its conversations are never another key's.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The keys requests must carry (any one of them). Its `Debug` never shows them.
#[derive(Clone)]
pub(crate) struct ServeKey(Arc<[(Arc<str>, Caller)]>);

impl std::fmt::Debug for ServeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServeKey([{} redacted])", self.0.len())
    }
}

/// Who sent a request, as conversations are kept apart: a digest of the key it carried (never the
/// key), or empty on a server without a key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Caller(pub(crate) Arc<str>);

impl Caller {
    /// The caller of a request (the anonymous one on a server without a key).
    pub(crate) fn of(extension: Option<axum::Extension<Caller>>) -> Caller {
        extension
            .map(|axum::Extension(caller)| caller)
            .unwrap_or_default()
    }

    /// As a run's record keeps it.
    pub(crate) fn recorded(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.0.to_string())
    }

    /// The name of `id` (a conversation, an idempotency key) among this caller's: another key's
    /// request naming the same id never waits on this one's turn.
    pub(crate) fn scoped(&self, id: &str) -> String {
        format!("{}\u{1f}{id}", self.0)
    }

    fn of_key(key: &str) -> Self {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(key.as_bytes());
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Caller(Arc::from(hex))
    }
}

impl ServeKey {
    pub(crate) fn new<'k>(keys: impl IntoIterator<Item = &'k str>) -> Self {
        ServeKey(
            keys.into_iter()
                .map(|key| (Arc::from(key), Caller::of_key(key)))
                .collect(),
        )
    }

    /// The caller whose key `header` carries, as `Bearer KEY` or Basic with the password KEY,
    /// compared in time that does not depend on where it differs.
    fn admits(&self, header: Option<&[u8]>) -> Option<Caller> {
        let given = given_key(header?)?;
        let mut found = None;
        // Every key is compared, so that the time taken says nothing of which one matched.
        for (key, caller) in self.0.iter() {
            if same(&given, key.as_bytes()) {
                found = Some(caller.clone());
            }
        }
        found
    }
}

/// The key a header carries: a bearer token, or the password of Basic credentials.
fn given_key(header: &[u8]) -> Option<Vec<u8>> {
    if let Some(given) = scheme(header, b"bearer ") {
        return Some(given.to_vec());
    }
    let encoded = scheme(header, b"basic ")?;
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    Some(decoded[colon + 1..].to_vec())
}

fn same(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
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

/// Refuses a request without a key (401), before any route sees it; an admitted one carries its
/// [`Caller`].
pub(crate) async fn require_key(
    State(key): State<ServeKey>,
    mut request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if let Some(caller) = key.admits(given) {
        request.extensions_mut().insert(caller);
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
        let key = ServeKey::new(["s3cret"]);
        assert!(key.admits(Some(b"Bearer s3cret")).is_some());
        for wrong in [&b"Bearer s3cre"[..], b"Bearer s3cret2", b"s3cret", b""] {
            assert!(key.admits(Some(wrong)).is_none());
        }
        assert!(key.admits(None).is_none());
        // user:s3cret, :s3cret, user:s3cre, s3cret (no colon)
        assert!(key.admits(Some(b"Basic dXNlcjpzM2NyZXQ=")).is_some());
        assert!(key.admits(Some(b"Basic OnMzY3JldA==")).is_some());
        assert!(key.admits(Some(b"Basic dXNlcjpzM2NyZQ==")).is_none());
        assert!(key.admits(Some(b"Basic czNjcmV0")).is_none());
        assert!(key.admits(Some(b"Basic !!!")).is_none());
        assert!(key.admits(Some(b"bearer s3cret")).is_some());
        assert!(key.admits(Some(b"BASIC dXNlcjpzM2NyZXQ=")).is_some());
        assert!(!format!("{key:?}").contains("s3cret"));
    }

    #[test]
    fn each_key_is_a_caller_of_its_own_that_never_shows_the_key() {
        let keys = ServeKey::new(["alpha-key", "beta-key"]);
        let alpha = keys.admits(Some(b"Bearer alpha-key")).expect("alpha");
        let beta = keys.admits(Some(b"Bearer beta-key")).expect("beta");
        assert_ne!(alpha, beta);
        assert_eq!(
            keys.admits(Some(b"Basic OmFscGhhLWtleQ==")),
            Some(alpha.clone())
        );
        assert!(!alpha.0.contains("alpha"));
    }
}
