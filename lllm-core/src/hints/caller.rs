//! Session ids that come from outside (a client's conversation id): made safe to send as a header
//! value, without two different ids ever becoming the same.

use sha2::{Digest, Sha256};

/// The longest id [`safe_session_id`] returns, in bytes: room is left for a `session_prefix` and
/// the derived names of a conversation's other dialogs within the 256 bytes a session id may have.
pub const MAX_CALLER_SESSION_BYTES: usize = 96;

/// Bytes of the escaped id kept before the digest when an id is too long.
const KEPT_BEFORE_DIGEST: usize = MAX_CALLER_SESSION_BYTES - 33;

/// `raw` as a session id that every serving stack takes as a header value: letters, digits, `.`,
/// `_` and `-` are kept; any other byte (spaces, `/`, `:`, `~`, control and non-ASCII bytes)
/// becomes `~` and two hex digits, so that different ids stay different and none can pose as a
/// name lllm derives with `:`. An id longer than [`MAX_CALLER_SESSION_BYTES`] keeps its start and
/// ends with `~` and a SHA-256 digest of the whole id. `None` for an empty id.
pub fn safe_session_id(raw: &str) -> Option<String> {
    if raw.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("~{byte:02X}"));
        }
    }
    if out.len() > MAX_CALLER_SESSION_BYTES {
        let digest = Sha256::digest(raw.as_bytes());
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        out.truncate(KEPT_BEFORE_DIGEST);
        out.push('~');
        out.push_str(&hex);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_ids_pass_unchanged_and_unsafe_bytes_are_escaped() {
        let uuid = "0199a3b2-7c1e-7d55-9a3e-1f2b3c4d5e6f";
        assert_eq!(safe_session_id(uuid).as_deref(), Some(uuid));
        assert_eq!(safe_session_id("ses_abc.1").as_deref(), Some("ses_abc.1"));
        assert_eq!(
            safe_session_id("a b/c:d~é").as_deref(),
            Some("a~20b~2Fc~3Ad~7E~C3~A9")
        );
        assert_eq!(safe_session_id(""), None);
        assert_eq!(safe_session_id("\r\n").as_deref(), Some("~0D~0A"));
    }

    #[test]
    fn different_ids_stay_different() {
        // The escape character itself is escaped, so no id can spell another's escape.
        assert_ne!(safe_session_id("a:"), safe_session_id("a~3A"));
        let long_a = "x".repeat(300);
        let long_b = format!("{}y", "x".repeat(299));
        let (a, b) = (
            safe_session_id(&long_a).unwrap_or_default(),
            safe_session_id(&long_b).unwrap_or_default(),
        );
        assert_ne!(a, b);
        assert_eq!(a.len(), MAX_CALLER_SESSION_BYTES);
        assert!(a.bytes().all(|b| b.is_ascii_graphic()));
    }
}
