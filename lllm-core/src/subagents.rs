//! Background subagents of an agent (`subagents:`), as a tactic file declares them: which agent
//! answers a task, whether its dialog forks the caller's (sharing the cached prefix) or starts
//! afresh, and whether the call waits for the answer.

use serde::{Deserialize, Serialize};

/// Default of `max_background_tasks`: background tasks of one agent running at once.
pub const DEFAULT_MAX_BACKGROUND_TASKS: u32 = 4;
/// Most `max_background_tasks` may allow.
pub const MAX_BACKGROUND_TASKS: u32 = 64;
/// Most subagents one agent may declare.
pub const MAX_SUBAGENTS: usize = 64;
/// The tools an agent with subagents is offered; no other tool of the agent may take these names.
pub const TASK_TOOL_NAMES: [&str; 5] = [
    "task_start",
    "task_check",
    "task_message",
    "task_cancel",
    "task_list",
];

/// How a subagent's dialog begins.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SubagentMode {
    /// An O(1) fork of the calling dialog as the parent last sent it, plus the instructions: the
    /// child shares the cached prefix and names the parent's session (`fork_session` rules).
    #[default]
    Fork,
    /// A new root dialog of the subagent's agent with the instructions only; no parent header.
    Isolated,
}

impl SubagentMode {
    /// `fork` or `isolated`, as written.
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentMode::Fork => "fork",
            SubagentMode::Isolated => "isolated",
        }
    }
}

/// One entry of an agent's `subagents:`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentSpec {
    pub(crate) name: String,
    pub(crate) agent: String,
    pub(crate) mode: SubagentMode,
    pub(crate) background: bool,
    pub(crate) description: Option<String>,
}

impl SubagentSpec {
    /// A subagent `name` answered by `agent`; see the setters for the rest.
    pub fn new(name: impl Into<String>, agent: impl Into<String>, mode: SubagentMode) -> Self {
        SubagentSpec {
            name: name.into(),
            agent: agent.into(),
            mode,
            background: true,
            description: None,
        }
    }

    /// Whether `task_start` returns at once with a task id (`true`, the default) or waits for the
    /// answer (an agent as a tool).
    pub fn with_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// What the model reads about the subagent.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The name the model starts it by (`task_start {subagent}`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The agent that answers its tasks.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// How its dialog begins.
    pub fn mode(&self) -> SubagentMode {
        self.mode
    }
    /// Whether `task_start` returns at once.
    pub fn background(&self) -> bool {
        self.background
    }
    /// What the model reads about it.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }
}
