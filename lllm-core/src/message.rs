//! Chat messages as lllm keeps them in dialogs.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions that frame the dialog (sent as `system`, never `developer`).
    System,
    /// Input from the user or the calling program.
    User,
    /// An answer of the model.
    Assistant,
    /// The result of a tool call, answering an assistant's tool call.
    Tool,
}

impl Role {
    /// The role's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool call requested by the model in an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the tool's result must answer with.
    pub id: String,
    /// Name of the tool to call.
    pub name: String,
    /// Arguments as the model wrote them: JSON text, possibly invalid.
    pub arguments: String,
}

/// Token counts reported by a server for one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens in the answer.
    pub completion_tokens: u64,
    /// Prompt tokens the server took from its prefix cache, when it says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// Adds another call's counts to these (saturating: the counts come from a server).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        if let Some(cached) = other.cached_tokens {
            let total = self.cached_tokens.get_or_insert(0);
            *total = total.saturating_add(cached);
        }
    }
}

/// One message of a dialog.
///
/// `content` is optional because servers may answer `content: null` (a tool-call turn, or a simulated
/// engine); lllm keeps such an answer as it came instead of inventing text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Reasoning text some servers return beside the answer (`reasoning_content` / `reasoning`).
    /// Kept for the user; never sent back to the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For an assistant message: the server's token counts for the call that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// For an assistant message: why the model stopped, as the server said it (any string is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

impl Message {
    fn with_role(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: Some(content.into()),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            usage: None,
            finish_reason: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::with_role(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::with_role(Role::User, content)
    }

    /// An assistant message with text.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::with_role(Role::Assistant, content)
    }

    /// A tool result answering the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::with_role(Role::Tool, content)
        }
    }

    /// The text, or `""` when the message has none.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }
}
