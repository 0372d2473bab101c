//! The SHA-256 of a tactic file: what an item is for, and so which workers ever receive it.

use std::fmt;

/// The SHA-256 of a tactic file's bytes (64 lower-case hex digits). Items are published on a
/// subject of their tactic's own and taken by a consumer of its own, so a worker only ever receives
/// the items of its file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TacticSha(String);

impl TacticSha {
    /// The SHA-256 of a tactic file's bytes, as journals record it.
    pub fn of(bytes: &[u8]) -> TacticSha {
        TacticSha(crate::journal::content_hash(bytes))
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TacticSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
