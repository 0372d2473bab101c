//! Tactic files and their parts: the YAML a tactic is written in ([`TacticSpec`], [`AgentSpec`],
//! [`ModelArgs`], [`Prompt`]), the limits of a run ([`RunLimits`], counted by a [`RunBudget`]),
//! the one rule each value obeys ([`Written`], [`SecondsRange`], [`check_http_url`]) and the
//! credentials nothing may print ([`secret`]).
//!
//! [`load_tactic`] reads a file (following `base:`), [`parse_tactic`] a string; both report a
//! [`ConfigError`] that names the file, line and column. [`tactic_schema`] is the format's JSON
//! Schema.
#![doc = include_str!("../../docs/tactics.md")]

pub use lllm_core::cache_dir;
pub use lllm_core::secret;
pub use lllm_core::EndpointArgs;
pub use lllm_core::{
    check_http_url, full_message, is_variable_name, load_tactic, parse_tactic, tactic_schema,
    AgentSpec, ConfigError, Fallback, Limit, LimitError, LimitSetting, ModelArgs, ModelArgsError,
    Prompt, PromptError, PromptVars, RunLimits, SecondsRange, Secret, TacticSpec, ValueError,
    Written, CHAT_TACTIC, MAX_FALLBACKS, MAX_IN_FLIGHT, STEPS_TACTIC,
};
pub use lllm_core::{ContextError, ContextPolicy, SessionOnCompaction, Window};

pub use crate::budget::RunBudget;
