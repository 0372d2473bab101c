//! Pure types and logic of lllm: messages, dialogs with O(1) forks, prompts, inference hints and the
//! request fields they become, and the tactic file format. Nothing here talks to the network.
//!
//! Most users reach these types through `lllm-runtime`, which re-exports them.
//!
//! # By role
//! - Conversation: [`Message`], [`Role`], [`ToolCall`], [`Usage`], [`Dialog`], [`DialogId`],
//!   [`DialogTree`].
//! - Prompts: [`Prompt`] (minijinja templates, inline or from `prompts/`), [`PromptVars`].
//! - Inference hints: [`InferenceHints`] and its builder, [`Profile`], [`ForkSession`], and the
//!   [`RequestFields`] (headers and body fields) they give for one request.
//! - Tactic files: [`load_tactic`] gives a [`TacticSpec`] of [`AgentSpec`]s and [`Step`]s, or a
//!   [`ConfigError`] naming the file, line and column; [`tactic_schema`] is the format's JSON Schema.
//! - Values and their one rule each, wherever they are written: [`SecondsRange`], [`RunLimits`],
//!   [`check_http_url`], [`check_header`], all refusing with a [`ValueError`].
//!
//! ```
//! use lllm_core::{DialogId, InferenceHints, ModelArgs, Profile};
//!
//! let hints = InferenceHints::builder()
//!     .profile(Profile::Vllm)
//!     .priority(2)
//!     .build()
//!     .expect("vllm sends priority");
//! let dialog = DialogId::new().to_string();
//! let fields = hints
//!     .request_fields(Some(&dialog), None, &ModelArgs::new())
//!     .expect("a valid session id");
//! assert_eq!(fields.body["priority"], -2); // vLLM runs lower values first
//! ```

mod agentic;
mod cache;
mod config;
mod context;
mod dialog;
mod endpoint;
pub mod eval;
mod fallback;
mod files;
mod hints;
mod limit_setting;
mod limits;
mod mcp;
mod mcp_auth;
mod merge;
mod message;
mod model;
mod model_args;
mod pairing;
mod prompt;
mod report;
mod schema;
pub mod secret;
pub mod skills;
mod subagents;
mod suggest;
mod tool;
mod trace;
mod values;

pub use agentic::{
    AgenticHeader, AgenticRow, AgenticSource, Dependency, Relation, Trigger, AGENTIC_SCHEMA,
    AGENTIC_VERSION,
};
pub use cache::cache_dir;
pub use config::waiting_turns;
pub use config::{evals_schema, load_evals, EvalCase, EvalSuite, MAX_CASES, MAX_TRIALS};
pub use config::{
    is_variable_name, load_tactic, parse_tactic, tactic_schema, AgentSpec, Branch, ConfigError,
    ConfigErrorKind, EnvError, Origin, Position, Step, StepsError, TacticLoader, TacticSpec, Turn,
    CHAT_TACTIC, DEFAULT_DIALOG, DEFAULT_MAX_ANSWER_RETRIES, DEFAULT_MAX_CALL_RETRIES,
    DEFAULT_MAX_PARALLEL_TOOLS, DEFAULT_MAX_TOOL_ROUNDS, MAX_BASE_DEPTH, MAX_FILE_BYTES_VAR,
    MAX_PARALLEL_TOOLS, STEPS_TACTIC,
};
pub use context::{
    AutoWindow, ContextError, ContextPolicy, SessionOnCompaction, Window, DEFAULT_COMPACT_AT,
    DEFAULT_KEEP_LAST, MAX_KEEP_LAST,
};
pub use dialog::{Dialog, DialogId, DialogTree, InvalidDialogId, MessageLog, NamedDialog};
pub use endpoint::{EndpointArgs, ModelArgsError, MAX_IN_FLIGHT};
pub use fallback::{Fallback, MAX_FALLBACKS};
pub use files::{
    not_regular, read_regular, ReadProblem, DEFAULT_MAX_FILE_BYTES, TOTAL_BYTES_FACTOR,
};
pub use hints::{
    safe_session_id, AutoFields, BodyPath, CarriedHints, Demand, ForkSession, HintField,
    HintValues, HintsError, InferenceHints, InferenceHintsBuilder, Priority, PrioritySign, Profile,
    RequestFields, RunClass, SessionIds, WireHints, WireShape, MAX_CALLER_SESSION_BYTES,
    MAX_WEIGHT,
};
pub use limit_setting::LimitSetting;
pub use limits::{Limit, LimitError, RunLimits};
pub use mcp::{
    ConfirmTools, McpPrompt, McpServerConfig, McpTransport, McpUse, ToolFilter,
    DEFAULT_MCP_STARTUP_TIMEOUT_S, DEFAULT_MCP_TIMEOUT_S, MCP_INHERITED_ENV,
};
pub use mcp_auth::{client_id_problem, scope_problem, McpAuth, MAX_MCP_AUTH_SCOPES};
pub use message::{Message, Role, ToolCall, Usage};
pub use model::strip_provider_prefix;
pub use model_args::ModelArgs;
pub use pairing::{pair_safe_tail_start, pairing_problem, PairingProblem};
pub use prompt::{
    Prompt, PromptError, PromptVars, DEFAULT_RENDER_FUEL, MAX_RENDERED_BYTES, MAX_RENDER_RECURSION,
};
pub use report::full_message;
pub use schema::{Schema, SchemaError, SchemaViolations};
pub use secret::Secret;
pub use subagents::{
    SubagentMode, SubagentSpec, DEFAULT_MAX_BACKGROUND_TASKS, MAX_BACKGROUND_TASKS, MAX_SUBAGENTS,
    TASK_TOOL_NAMES,
};
pub use tool::{CommandToolConfig, ToolConfigError, ToolSpec};
pub use trace::{TraceHeader, TraceRow, TRACE_FORMAT};
pub use values::{check_header, check_http_url, SecondsRange, ValueError, Written};

/// Building blocks shared with `lllm-runtime`, which assembles requests and traces from them. Not
/// part of the API: they may change in any release.
#[doc(hidden)]
pub mod internal {
    pub use crate::mcp::{prefix_problem, MAX_MCP_PREFIX_LEN};
    pub use crate::merge::{
        deep_merge, find_header, merge_body, merge_headers, merge_under, merged_value,
    };
    pub use crate::tool::{
        object_schema_problem, output_schema_problem, tool_name_problem, DEFAULT_COMMAND_TIMEOUT_S,
        DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_LIMIT, MAX_TOOL_NAME_LEN,
    };
    pub use crate::trace::{serialise, BlockHasher, CHARS_PER_TOKEN, DEFAULT_BLOCK_TOKENS};
    pub use crate::values::typed_header;
}
