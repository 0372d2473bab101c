//! OAuth 2.1 for streamable HTTP servers (`auth:` on a server), on rmcp's `auth` feature:
//! discovery (protected resource metadata, then authorization server metadata), dynamic client
//! registration or a given `client_id`, PKCE (S256) with a loopback redirect, and refresh (when
//! the access token expires, and once after a 401). [`login`] runs the flow from a terminal and
//! stores the tokens; a run uses the stored tokens. Tokens live in an owner-only file and never
//! appear in a message.

mod checks;
mod login;
mod loopback;
mod store;

use std::path::PathBuf;

use lllm_core::McpAuth;
use rmcp::service::ClientInitializeError;
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use sha2::Digest;

pub use login::{login, DEFAULT_LOGIN_WAIT};
use store::TokenFile;

/// What a server's session knows of its authorization: its name (for messages) and `auth:`.
#[derive(Debug, Clone)]
pub(crate) struct HttpAuth {
    pub(crate) server: String,
    pub(crate) auth: Option<McpAuth>,
}

/// Where the tokens for the server at `url` are kept: `auth.token_file`, else
/// `mcp-auth/HOST_PORT-HASH.json` under lllm's cache directory (`LLLM_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/lllm`, else `~/.cache/lllm`), the hash being of the whole URL.
pub fn token_file(url: &str, auth: &McpAuth) -> PathBuf {
    if let Some(path) = &auth.token_file {
        return path.clone();
    }
    let host: String = url::Url::parse(url)
        .ok()
        .map(|u| {
            format!(
                "{}_{}",
                u.host_str().unwrap_or("server"),
                u.port_or_known_default().unwrap_or(0)
            )
        })
        .unwrap_or_else(|| "server".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let hash = sha2::Sha256::digest(url.as_bytes());
    let hash: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    lllm_core::cache_dir()
        .join("mcp-auth")
        .join(format!("{host}-{hash}.json"))
}

/// Discovery, checked, with the token file as the manager's store. Says whether the authorization
/// server offers dynamic client registration.
async fn discovered(
    url: &str,
    auth: &McpAuth,
) -> Result<(AuthorizationManager, TokenFile, bool), String> {
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| words(&e))?;
    let resolution = manager.resolve_metadata().await.map_err(|e| words(&e))?;
    checks::endpoints(&resolution.metadata, url)?;
    let registers = resolution.metadata.registration_endpoint.is_some();
    manager.set_metadata(resolution.metadata);
    let file = TokenFile::new(token_file(url, auth), url);
    manager.set_credential_store(file.clone());
    Ok((manager, file, registers))
}

/// An HTTP client sending the stored access token, refreshing it when it expires or is refused
/// once. No stored tokens: an error saying how to log in.
pub(crate) async fn authorized(
    url: &str,
    auth: &HttpAuth,
    settings: &McpAuth,
    http: reqwest::Client,
) -> Result<AuthClient<reqwest::Client>, String> {
    let (mut manager, file, _) = discovered(url, settings).await?;
    if !manager
        .initialize_from_store()
        .await
        .map_err(|e| words(&e))?
    {
        return Err(format!(
            "it needs OAuth authorization and has no tokens yet: authorize once with \
             `lllm mcp login TACTIC.yaml --server {}` (the tokens are kept in {})",
            auth.server,
            file.path.display()
        ));
    }
    Ok(AuthClient::new(http, manager))
}

/// An OAuth failure in words: the error and its causes, without control characters.
pub(crate) fn words(error: &AuthError) -> String {
    let text = match error {
        AuthError::NoAuthorizationSupport => {
            "the server publishes no OAuth metadata (protected resource or authorization server)"
                .to_owned()
        }
        AuthError::AuthorizationServerMismatch { .. }
        | AuthError::AuthorizationServerMissingIssuer { .. } => format!("refused: {error}"),
        _ => {
            let mut text = error.to_string();
            let mut cause = std::error::Error::source(error);
            while let Some(next) = cause {
                text = format!("{text}: {next}");
                cause = next.source();
            }
            text
        }
    };
    super::excerpt(&super::printable(&text))
}

/// Why the handshake failed, saying what to do when the server wants authorization.
pub(crate) fn handshake_problem(error: &ClientInitializeError, auth: &HttpAuth) -> String {
    if !asks_for_authorization(error) {
        return super::transport_error::handshake_problem(error);
    }
    let server = &auth.server;
    match auth.auth {
        None => format!(
            "the server answered 401 Unauthorized: it needs OAuth authorization. Add `auth:` to \
             the server in the tactic (with `client_id:` when its authorization server offers no \
             client registration):\n  mcp_servers:\n    {server}:\n      url: ...\n      auth: {{}}   \
             # or {{client_id: ID, scopes: [SCOPE]}}\nthen authorize once: lllm mcp login TACTIC.yaml --server {server}"
        ),
        Some(_) => format!(
            "the server refused the stored OAuth token and refreshing it did not help: authorize \
             again with `lllm mcp login TACTIC.yaml --server {server}`"
        ),
    }
}

/// Whether the handshake ended on a 401 with a bearer challenge (`WWW-Authenticate: Bearer ...`):
/// a 401 without one may want some other credential in `headers:`, and keeps the plain message.
fn asks_for_authorization(error: &ClientInitializeError) -> bool {
    match error {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            asks_for_authorization(fallback)
        }
        ClientInitializeError::TransportError { error, .. } => {
            let inner: &(dyn std::error::Error + 'static) = error.error.as_ref();
            match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                Some(StreamableHttpError::AuthRequired(challenge)) => challenge
                    .www_authenticate_header
                    .trim_start()
                    .get(..6)
                    .is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer")),
                _ => false,
            }
        }
        _ => false,
    }
}
