//! Asking a person before a tool runs: tools that say they need it ([`Tool::needs_confirmation`],
//! `confirm:` in tactic files) run only when the agent's [`Confirm`] approves the call.
//!
//! [`Tool::needs_confirmation`]: super::Tool::needs_confirmation

use async_trait::async_trait;
use serde_json::Value;

use super::elicit::{ElicitRequest, Elicited};

/// One call waiting for approval.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ConfirmRequest<'a> {
    /// The agent that wants to make the call.
    pub agent: &'a str,
    /// The call's id (unique in its dialog), as a paused run's pending calls name it.
    pub call_id: &'a str,
    /// The tool, as the model named it.
    pub tool: &'a str,
    /// Where the tool comes from (`a command tool`, ``MCP server `files` ``).
    pub source: &'a str,
    /// The arguments, already checked against the tool's parameters.
    pub arguments: &'a Value,
}

/// What the person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Do not run it; the model is told the user declined it.
    Decline,
    /// Nobody can decide now: with a journal the run pauses, the call journaled as pending, until
    /// `lllm resume` decides; without one the call is declined.
    Pause,
}

/// Decides whether a call that needs confirmation runs. An agent without one declines every such
/// call, so that nothing marked `confirm` runs unseen.
#[async_trait]
pub trait Confirm: Send + Sync + std::fmt::Debug {
    /// Asks about one call. Calls of one turn may ask concurrently: serialise the prompts if a person
    /// answers them one at a time.
    async fn confirm(&self, request: ConfirmRequest<'_>) -> Decision;

    /// Asks the user a tool's question (an MCP server's elicitation): a form to fill or a URL to
    /// visit. Declined unless the implementation can ask someone; the caller bounds the wait.
    async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        let _ = request;
        Elicited::Decline
    }
}

/// Approves every call (`lllm run --yes`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait]
impl Confirm for ApproveAll {
    async fn confirm(&self, _: ConfirmRequest<'_>) -> Decision {
        Decision::Approve
    }
}

/// Declines every call (no one is there to ask).
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclineAll;

#[async_trait]
impl Confirm for DeclineAll {
    async fn confirm(&self, _: ConfirmRequest<'_>) -> Decision {
        Decision::Decline
    }
}

/// Decides calls by their ids: how an answer to a paused run's pending calls
/// ([`RunHandle::pending`](crate::RunHandle::pending)) reaches the resumed run. A call it names is
/// approved or declined as decided; any other call pauses the run again (or gets the decision set
/// with [`otherwise`](Self::otherwise)).
#[derive(Debug, Clone)]
pub struct Decisions {
    by_call: std::collections::HashMap<String, Decision>,
    otherwise: Decision,
}

impl Default for Decisions {
    fn default() -> Self {
        Decisions {
            by_call: std::collections::HashMap::new(),
            otherwise: Decision::Pause,
        }
    }
}

impl Decisions {
    /// No decision yet: every call pauses.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides the call `call_id`.
    pub fn decide(mut self, call_id: impl Into<String>, decision: Decision) -> Self {
        self.by_call.insert(call_id.into(), decision);
        self
    }

    /// The decision for calls not named (by default [`Decision::Pause`]).
    pub fn otherwise(mut self, decision: Decision) -> Self {
        self.otherwise = decision;
        self
    }
}

#[async_trait]
impl Confirm for Decisions {
    async fn confirm(&self, request: ConfirmRequest<'_>) -> Decision {
        self.by_call
            .get(request.call_id)
            .copied()
            .unwrap_or(self.otherwise)
    }
}

/// What the model reads when a call was declined.
pub(crate) const DECLINED: &str = "the user declined this call, so it was not run. Do not make it again unless the user asks for it; answer with what you have, or say what you would need";
