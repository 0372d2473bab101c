//! `lllm mcp login`: the authorization code flow with PKCE, once, from a terminal. The URL to open
//! is printed (no browser is started); the authorization server redirects to a loopback listener;
//! the `state` is checked, the code exchanged, and the tokens stored owner-only.

use std::path::PathBuf;
use std::time::Duration;

use lllm_core::{McpServerConfig, McpTransport};
use rmcp::transport::auth::{AuthorizationRequest, AuthorizationSession};

use super::loopback::Loopback;
use super::{discovered, words};
use crate::mcp::McpError;

/// How long [`login`] waits for the redirect unless told otherwise.
pub const DEFAULT_LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Authorizes lllm with the server `config` describes (it must have `url:` and `auth:`): prints
/// through `tell` the URL for the user to open, waits up to `wait` for the redirect to a listener
/// on 127.0.0.1, and stores the tokens. Returns the token file. Tokens are never told.
pub async fn login(
    config: &McpServerConfig,
    wait: Duration,
    tell: &mut (dyn FnMut(&str) + Send),
) -> Result<PathBuf, McpError> {
    let fail = |problem: String| McpError::Auth {
        server: config.name.clone(),
        problem,
    };
    let McpTransport::Http { url, .. } = &config.transport else {
        return Err(fail(
            "it is not reached over HTTP (`url:`); OAuth is for HTTP servers".into(),
        ));
    };
    let Some(auth) = &config.auth else {
        return Err(fail(
            "it has no `auth:` in the tactic; add `auth: {}` (or `auth: {client_id: ID}`) under it"
                .into(),
        ));
    };
    let (manager, file, registers) = discovered(url, auth).await.map_err(fail)?;
    if auth.client_id.is_none() && !registers {
        return Err(fail(
            "its authorization server offers no dynamic client registration: add \
             `client_id: ID` (a client registered with it) under the server's `auth:`"
                .into(),
        ));
    }
    let loopback = Loopback::bind().await.map_err(fail)?;
    let mut request = AuthorizationRequest::new(&loopback.redirect_uri).with_client_name("lllm");
    if !auth.scopes.is_empty() {
        request = request.with_scopes(auth.scopes.clone());
    }
    if let Some(id) = &auth.client_id {
        request = request.with_preregistered_client(id.clone());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| fail(words(&e)))?;
    let sent_state = query(session.get_authorization_url(), "state");
    tell(&format!(
        "To authorize lllm with MCP server `{}`, open this URL in a browser and approve:\n\n  {}\n\n\
         Waiting up to {} s for the redirect to {} ...",
        config.name,
        session.get_authorization_url(),
        wait.as_secs(),
        loopback.redirect_uri
    ));
    // Only the redirect carrying the state sent is this login's answer, an error included.
    let ours = |url: &str| sent_state.is_some() && query(url, "state") == sent_state;
    let callback = loopback.callback(wait, ours).await.map_err(fail)?;
    if let Some(error) = query(&callback, "error") {
        let detail = query(&callback, "error_description").unwrap_or_default();
        return Err(fail(crate::mcp::excerpt(&crate::mcp::printable(&format!(
            "the authorization server did not grant access: {error} {detail}"
        )))));
    }
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| fail(words(&e)))?;
    Ok(file.path)
}

/// The first value of `key` in `url`'s query.
fn query(url: &str, key: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}
