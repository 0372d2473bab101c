//! `inference_hints:` as written in a tactic file.

use serde::{Deserialize, Serialize};

use super::{ForkSession, HintsError, InferenceHints, Profile};

/// Hint settings as written in YAML: every field optional, so a `global` block and an agent's block can
/// be merged field by field before validation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HintsConfig {
    /// `openai` (default), `dynamo`, `vllm` or `sglang`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// Send session identity (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<bool>,
    /// Prefix of session ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_prefix: Option<String>,
    /// `own` (default) or `family`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_session: Option<ForkSession>,
    /// Priority; higher is more urgent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Dynamo router queue tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_priority: Option<u32>,
    /// Expected output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osl: Option<u32>,
    /// Ask Dynamo to prefill the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative_prefill: Option<bool>,
    /// Prefix-cache salt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_salt: Option<String>,
}

impl HintsConfig {
    /// These settings with `base` filling every field left unset here.
    pub fn over(self, base: &HintsConfig) -> HintsConfig {
        HintsConfig {
            profile: self.profile.or(base.profile),
            session: self.session.or(base.session),
            session_prefix: self.session_prefix.or_else(|| base.session_prefix.clone()),
            fork_session: self.fork_session.or(base.fork_session),
            priority: self.priority.or(base.priority),
            strict_priority: self.strict_priority.or(base.strict_priority),
            osl: self.osl.or(base.osl),
            speculative_prefill: self.speculative_prefill.or(base.speculative_prefill),
            cache_salt: self.cache_salt.or_else(|| base.cache_salt.clone()),
        }
    }

    /// Validates the settings.
    pub fn build(&self) -> Result<InferenceHints, HintsError> {
        let mut builder = InferenceHints::builder();
        if let Some(v) = self.profile {
            builder = builder.profile(v);
        }
        if let Some(v) = self.session {
            builder = builder.session(v);
        }
        if let Some(v) = &self.session_prefix {
            builder = builder.session_prefix(v.clone());
        }
        if let Some(v) = self.fork_session {
            builder = builder.fork_session(v);
        }
        if let Some(v) = self.priority {
            builder = builder.priority(v);
        }
        if let Some(v) = self.strict_priority {
            builder = builder.strict_priority(v);
        }
        if let Some(v) = self.osl {
            builder = builder.osl(v);
        }
        if let Some(v) = self.speculative_prefill {
            builder = builder.speculative_prefill(v);
        }
        if let Some(v) = &self.cache_salt {
            builder = builder.cache_salt(v.clone());
        }
        builder.build()
    }
}
