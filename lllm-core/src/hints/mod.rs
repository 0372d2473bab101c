//! Inference hints: what an agent knows about a model call that a server cannot see from one request.
//!
//! [`InferenceHints`] holds an agent's hint settings, validated when built. For each request it computes
//! [`RequestFields`] (headers and body fields) shaped for the server's [`Profile`]; the invoker then merges
//! them *under* the user's own `extra_headers` and `extra_body` (see [`crate::merge`]). Where each hint
//! goes on the wire is one table per profile, [`WireShape`], which also reads hints back from a body
//! and converts values recorded under one profile into another's.

mod auto;
mod caller;
mod carried;
mod profile;
mod shape;
mod wire;

#[cfg(test)]
mod tests;

pub use auto::{AutoFields, Demand, Priority, RunClass, MAX_WEIGHT};
pub use caller::{safe_session_id, MAX_CALLER_SESSION_BYTES};
pub use carried::CarriedHints;
pub use profile::{ForkSession, HintField, Profile};
pub use shape::{BodyPath, HintValues, PrioritySign, WireHints, WireShape};
pub use wire::{RequestFields, SessionIds};

use serde::{Deserialize, Serialize};

/// Most bytes a session header value may have.
pub(crate) const MAX_SESSION_ID_BYTES: usize = 256;
/// Most characters a `cache_salt` may have (what current vLLM accepts).
pub(crate) const MAX_CACHE_SALT_CHARS: usize = 128;
/// Length of `:` plus a dialog id, which a prefix must leave room for.
const DIALOG_ID_SUFFIX_BYTES: usize = 33;

/// Hint settings are invalid, or an id cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HintsError {
    /// The profile cannot send this field.
    #[error("inference_hints.{field}: the `{profile}` profile cannot send `{field}`; profiles that can: {}", accepted(*field))]
    NotSendable {
        /// The field.
        field: HintField,
        /// The configured profile.
        profile: Profile,
    },
    /// A value is outside what the field allows.
    #[error("inference_hints.{field}: {message}")]
    Invalid {
        /// The field's name.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A session id cannot go into a header.
    #[error("session id `{}` cannot be sent: {reason}", shorten(id))]
    InvalidSessionId {
        /// The offending id (shortened in the message).
        id: String,
        /// Why.
        reason: &'static str,
    },
    /// The end-of-session request needs the dynamo profile and session identity.
    #[error("ending a session needs inference_hints with profile `dynamo` and session on (profile is `{profile}`, session {session})")]
    FinalNotAvailable {
        /// The configured profile.
        profile: Profile,
        /// Whether session identity is on.
        session: bool,
    },
}

fn accepted(field: HintField) -> String {
    field
        .profiles()
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn shorten(id: &str) -> String {
    let escaped: String = id.chars().take(40).flat_map(char::escape_debug).collect();
    if id.chars().count() > 40 {
        format!("{escaped}…")
    } else {
        escaped
    }
}

/// An agent's inference hints, validated against its profile.
///
/// Build them with [`InferenceHints::builder`]; a field the profile cannot send, an out-of-range value or
/// an unsafe prefix is reported by [`InferenceHintsBuilder::build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferenceHints {
    profile: Profile,
    session: bool,
    session_prefix: Option<String>,
    fork_session: ForkSession,
    priority: Option<Priority>,
    strict_priority: Option<u32>,
    osl: Option<u32>,
    speculative_prefill: Option<bool>,
    cache_salt: Option<String>,
}

impl Default for InferenceHints {
    /// The `openai` profile with session identity on: session headers only.
    fn default() -> Self {
        InferenceHints {
            profile: Profile::OpenAi,
            session: true,
            session_prefix: None,
            fork_session: ForkSession::Own,
            priority: None,
            strict_priority: None,
            osl: None,
            speculative_prefill: None,
            cache_salt: None,
        }
    }
}

impl InferenceHints {
    /// A builder with every field unset and the `openai` profile.
    pub fn builder() -> InferenceHintsBuilder {
        InferenceHintsBuilder::default()
    }

    /// Hints of `profile` with nothing but session identity.
    pub fn for_profile(profile: Profile) -> Self {
        InferenceHints {
            profile,
            ..Self::default()
        }
    }

    /// The server profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }
    /// Whether session identity is sent.
    pub fn session(&self) -> bool {
        self.session
    }
    /// The prefix put before dialog ids, if any.
    pub fn session_prefix(&self) -> Option<&str> {
        self.session_prefix.as_deref()
    }
    /// How forks identify themselves.
    pub fn fork_session(&self) -> ForkSession {
        self.fork_session
    }
    /// The written priority number (higher is more urgent); `None` when unset or `auto`.
    pub fn priority(&self) -> Option<i32> {
        match self.priority {
            Some(Priority::Fixed(n)) => Some(n),
            _ => None,
        }
    }
    /// The priority setting as written: a number or `auto`.
    pub fn priority_setting(&self) -> Option<Priority> {
        self.priority
    }
    /// Whether each request's priority is computed from the tactic (`priority: auto`).
    pub fn priority_is_auto(&self) -> bool {
        self.priority == Some(Priority::Auto)
    }
    /// Dynamo router queue tier.
    pub fn strict_priority(&self) -> Option<u32> {
        self.strict_priority
    }
    /// Expected output tokens, as configured (not the `max_tokens` default).
    pub fn osl(&self) -> Option<u32> {
        self.osl
    }
    /// Whether to ask Dynamo to prefill the predicted next turn.
    pub fn speculative_prefill(&self) -> Option<bool> {
        self.speculative_prefill
    }
    /// The prefix-cache salt.
    pub fn cache_salt(&self) -> Option<&str> {
        self.cache_salt.as_deref()
    }

    /// A builder holding these settings, to change some of them.
    pub fn to_builder(&self) -> InferenceHintsBuilder {
        InferenceHintsBuilder {
            profile: Some(self.profile),
            session: Some(self.session),
            session_prefix: self.session_prefix.clone(),
            fork_session: Some(self.fork_session),
            priority: self.priority,
            strict_priority: self.strict_priority,
            osl: self.osl,
            speculative_prefill: self.speculative_prefill,
            cache_salt: self.cache_salt.clone(),
        }
    }
}

/// Builds [`InferenceHints`]. Setters never fail; [`build`](Self::build) validates.
///
/// It (de)serialises with the field names of a tactic file's `inference_hints:` block (unknown keys
/// rejected); the tactic loader itself reads that block with positions and builds through this type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceHintsBuilder {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fork_session: Option<ForkSession>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    priority: Option<Priority>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    strict_priority: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    osl: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    speculative_prefill: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_salt: Option<String>,
}

impl InferenceHintsBuilder {
    /// The server profile (default `openai`).
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }
    /// Whether to send session identity (default true).
    pub fn session(mut self, on: bool) -> Self {
        self.session = Some(on);
        self
    }
    /// A prefix such as a run id: session ids become `<prefix>:<dialog id>`.
    pub fn session_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.session_prefix = Some(prefix.into());
        self
    }
    /// How forks identify themselves (default [`ForkSession::Own`]).
    pub fn fork_session(mut self, mode: ForkSession) -> Self {
        self.fork_session = Some(mode);
        self
    }
    /// Priority: a number (higher is more urgent), or [`Priority::Auto`] to compute each request's
    /// priority from what waits for its answer.
    pub fn priority(mut self, priority: impl Into<Priority>) -> Self {
        self.priority = Some(priority.into());
        self
    }
    /// Dynamo router queue tier; higher tiers always go first.
    pub fn strict_priority(mut self, tier: u32) -> Self {
        self.strict_priority = Some(tier);
        self
    }
    /// Expected output tokens.
    pub fn osl(mut self, tokens: u32) -> Self {
        self.osl = Some(tokens);
        self
    }
    /// Ask Dynamo to prefill the predicted next-turn prefix.
    pub fn speculative_prefill(mut self, on: bool) -> Self {
        self.speculative_prefill = Some(on);
        self
    }
    /// Prefix-cache salt, to keep tenants' cached prefixes apart.
    pub fn cache_salt(mut self, salt: impl Into<String>) -> Self {
        self.cache_salt = Some(salt.into());
        self
    }

    /// Validates and returns the hints.
    pub fn build(self) -> Result<InferenceHints, HintsError> {
        let profile = self.profile.unwrap_or_default();
        let sendable = |field: HintField, set: bool| {
            if set && !profile.sends(field) {
                Err(HintsError::NotSendable { field, profile })
            } else {
                Ok(())
            }
        };
        sendable(HintField::Priority, self.priority.is_some())?;
        sendable(HintField::StrictPriority, self.strict_priority.is_some())?;
        sendable(HintField::Osl, self.osl.is_some())?;
        sendable(
            HintField::SpeculativePrefill,
            self.speculative_prefill.is_some(),
        )?;
        sendable(HintField::CacheSalt, self.cache_salt.is_some())?;

        if self.osl == Some(0) {
            return Err(HintsError::Invalid {
                field: "osl",
                message: "expected output tokens must be at least 1".into(),
            });
        }
        if let Some(prefix) = &self.session_prefix {
            check_session_prefix(prefix)?;
        }
        if let Some(salt) = &self.cache_salt {
            check_cache_salt(salt)?;
        }
        Ok(InferenceHints {
            profile,
            session: self.session.unwrap_or(true),
            session_prefix: self.session_prefix,
            fork_session: self.fork_session.unwrap_or_default(),
            priority: self.priority,
            strict_priority: self.strict_priority,
            osl: self.osl,
            speculative_prefill: self.speculative_prefill,
            cache_salt: self.cache_salt,
        })
    }
}

/// Why `text` cannot be (part of) a session header value, if it cannot.
fn header_token_problem(text: &str) -> Option<&'static str> {
    if text.is_empty() {
        Some("it is empty")
    } else if text.len() > MAX_SESSION_ID_BYTES {
        Some("it is longer than 256 bytes")
    } else if !text.bytes().all(|b| b.is_ascii_graphic()) {
        Some("only visible ASCII characters are allowed (no spaces, control characters or non-ASCII)")
    } else {
        None
    }
}

fn check_session_prefix(prefix: &str) -> Result<(), HintsError> {
    let limit = MAX_SESSION_ID_BYTES - DIALOG_ID_SUFFIX_BYTES;
    let problem = header_token_problem(prefix).or(if prefix.len() > limit {
        Some("it leaves no room for `:` and the dialog id within 256 bytes (at most 223 bytes)")
    } else {
        None
    });
    match problem {
        Some(reason) => Err(HintsError::Invalid {
            field: "session_prefix",
            message: format!("`{}` is not allowed: {reason}", shorten(prefix)),
        }),
        None => Ok(()),
    }
}

fn check_cache_salt(salt: &str) -> Result<(), HintsError> {
    let chars = salt.chars().count();
    let problem = if chars == 0 || chars > MAX_CACHE_SALT_CHARS {
        Some("it must have 1 to 128 characters")
    } else if salt.contains(['@', '/', '\\', '\0']) {
        Some("it may not contain `@`, `/`, `\\` or NUL")
    } else {
        None
    };
    match problem {
        Some(reason) => Err(HintsError::Invalid {
            field: "cache_salt",
            message: format!("`{}` is not allowed: {reason}", shorten(salt)),
        }),
        None => Ok(()),
    }
}

/// Checks that `id` can go into a session header.
pub(crate) fn check_session_id(id: &str) -> Result<(), HintsError> {
    match header_token_problem(id) {
        Some(reason) => Err(HintsError::InvalidSessionId {
            id: id.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}
