//! Pure types and logic of lllm: messages, dialogs, prompts, inference hints, the merge of request fields,
//! and the tactic file format. Nothing here talks to the network.
//!
//! Most users reach these types through `lllm-runtime`, which re-exports them.

pub mod config;
pub mod dialog;
pub mod hints;
pub mod merge;
pub mod message;
pub mod model;
pub mod model_args;
pub mod prompt;
pub mod report;
pub mod schema;
pub mod secret;
pub mod suggest;
pub mod tool;
pub mod trace;

pub use config::{load_tactic, AgentSpec, ConfigError, TacticSpec};
pub use dialog::{Dialog, DialogId, DialogTree, MessageLog, NamedDialog};
pub use hints::{
    ForkSession, HintField, HintsError, InferenceHints, InferenceHintsBuilder, Profile,
    RequestFields, SessionIds,
};
pub use message::{Message, Role, ToolCall, Usage};
pub use model::strip_provider_prefix;
pub use model_args::{ModelArgs, ModelArgsError};
pub use prompt::{Prompt, PromptError, PromptVars};
pub use secret::Secret;
pub use tool::{CommandToolConfig, ToolSpec};
