//! The caller's conversation id: read from the headers coding harnesses and routers send, made
//! safe, or minted; echoed in `x-lllm-session-id`.

use axum::http::HeaderMap;
use lllm_core::{safe_session_id, DialogId};

/// Where a conversation id is looked for, in order: Dynamo's own, Claude Code's, Codex CLI's
/// (`thread-id`; `thread_id` as some proxies rewrite it), `session-id` (sent by harnesses and
/// proxies that name their session plainly), OpenCode's.
pub const SESSION_HEADERS: [&str; 7] = [
    "x-dynamo-session-id",
    "x-claude-code-session-id",
    "thread-id",
    "thread_id",
    "session-id",
    "x-session-affinity",
    "x-session-id",
];

/// Where a parent conversation id is looked for (a harness's subagent names its parent's).
pub const PARENT_SESSION_HEADERS: [&str; 2] = ["x-dynamo-parent-session-id", "x-parent-session-id"];

/// The response header naming the session id the request's root dialog carried.
pub const ECHO_HEADER: &str = "x-lllm-session-id";

/// The response header naming where the conversation id came from (`header`,
/// `prompt_cache_key`, `conversation`, `previous_response_id`, `item_reference`, `history`,
/// `minted`).
pub const SOURCE_HEADER: &str = "x-lllm-session-source";

/// The conversation a request belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallerSession {
    /// The safe id.
    pub(crate) id: String,
    /// The parent's safe id, when the caller named one.
    pub(crate) parent: Option<String>,
}

impl CallerSession {
    /// The caller's ids from `headers`, or a minted id.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        Self::named(header_id(headers).unwrap_or_else(mint), headers)
    }

    /// The conversation `id` (already safe), with the parent `headers` name.
    pub(crate) fn named(id: String, headers: &HeaderMap) -> Self {
        let parent = first_safe(headers, &PARENT_SESSION_HEADERS).filter(|p| *p != id);
        CallerSession { id, parent }
    }
}

/// The conversation id the headers name, made safe.
pub(crate) fn header_id(headers: &HeaderMap) -> Option<String> {
    first_safe(headers, &SESSION_HEADERS)
}

/// A fresh conversation id for a caller that sent none.
pub(crate) fn mint() -> String {
    DialogId::new().to_string()
}

fn first_safe(headers: &HeaderMap, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| {
        let value = headers.get(*name)?;
        // A value that is not text is still an id: its bytes are escaped, never refused.
        safe_session_id(String::from_utf8_lossy(value.as_bytes()).trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_first_header_in_order_wins_and_is_made_safe() {
        let mut headers = HeaderMap::new();
        headers.insert("x-session-id", HeaderValue::from_static("later"));
        headers.insert("thread-id", HeaderValue::from_static("a b/c:d"));
        let session = CallerSession::from_headers(&headers);
        assert_eq!(session.id, "a~20b~2Fc~3Ad");
        assert_eq!(session.parent, None);
    }

    #[test]
    fn no_header_mints_an_id_and_an_empty_one_counts_as_none() {
        let mut headers = HeaderMap::new();
        headers.insert("x-dynamo-session-id", HeaderValue::from_static(""));
        let a = CallerSession::from_headers(&headers);
        let b = CallerSession::from_headers(&headers);
        assert_ne!(a.id, b.id);
        assert!(a.id.parse::<DialogId>().is_ok());
    }

    #[test]
    fn a_parent_header_is_kept_when_it_names_another_session() {
        let mut headers = HeaderMap::new();
        headers.insert("x-session-id", HeaderValue::from_static("child"));
        headers.insert("x-parent-session-id", HeaderValue::from_static("parent"));
        let session = CallerSession::from_headers(&headers);
        assert_eq!(session.parent.as_deref(), Some("parent"));
    }
}
