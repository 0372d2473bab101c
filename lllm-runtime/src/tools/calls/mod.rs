//! What happens to a tool call besides running it, as layers around the call (as
//! `crate::layers` does for model calls): the halt, the run's budget, the journal, the user's
//! confirmation. An agent composes them once, when it is built:
//!
//! `Halting<Budgeted<Journaled<Allowed<Handed<Confirmed<Started<Execute>>>>>>>`
//!
//! The order matters. A halted run starts nothing. The budget counts a call before the journal is
//! asked, as it counts requests: a resumed run spends what it replays. The journal answers a call it
//! already holds (so a finished call never runs again and is never asked about again), records every
//! result the model reads (declines and refusals included) and the calls that wait for a
//! confirmation. A loaded skill's `allowed-tools` comes next: a call it forbids runs nothing, is
//! never handed or asked about, and its refusal is journaled like any result. The caller's tools
//! come next: their calls pause the run, to be handed to the caller (the journal
//! records them as pending, and the caller's results answer them on resume). The
//! confirmation comes next, and only an approved call is recorded as started, just before it runs:
//! a call started and never finished is one that a crash interrupted.

mod allowed;
mod confirmed;
mod execute;
mod guards;
mod handed;
mod journaled;

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::{DialogId, ToolCall};
use serde_json::Value;

pub(crate) use allowed::Allowed;
pub(crate) use confirmed::Confirmed;
pub(crate) use execute::Execute;
pub(crate) use guards::{Budgeted, Halting};
pub(crate) use handed::Handed;
pub(crate) use journaled::{Journaled, Started};

use super::Tool;
use crate::budget::LimitReached;
use crate::journal::JournalError;
use crate::run_context::RunContext;

/// One call on its way to its tool: checked (the tool exists, the arguments are JSON that match its
/// parameters), not yet run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreparedCall<'a> {
    /// The agent making the call.
    pub(crate) agent: &'a str,
    /// The dialog whose answer made it.
    pub(crate) dialog: DialogId,
    /// The call, as the model made it (its id, name, arguments as text).
    pub(crate) call: &'a ToolCall,
    /// The tool it names.
    pub(crate) tool: &'a Arc<dyn Tool>,
    /// The arguments, parsed and checked.
    pub(crate) arguments: &'a Value,
    /// The calling dialog and its model, handed to the tool.
    pub(crate) context: super::ToolContext<'a>,
    /// The skills loaded in the calling dialog (its `load_skill` calls answered), whose
    /// `allowed-tools` the call must respect.
    pub(crate) loaded_skills: &'a [String],
}

/// What the model reads of a call: its content, or a problem it reads as `error: ...`.
pub(crate) type Reply = Result<String, String>;

/// Why a call has no reply for the model: the run stops (or pauses) instead.
#[derive(Debug)]
pub(crate) enum ToolCallError {
    /// A limit of the run forbids the call.
    Limit(LimitReached),
    /// The journal cannot be written.
    Journal(JournalError),
    /// The call waits for the user's confirmation, and the run pauses (its journal holds the call).
    Paused {
        /// The tool.
        tool: String,
    },
}

/// A layer of the tool-call pipeline.
#[async_trait]
pub(crate) trait CallTool: Send + Sync + std::fmt::Debug {
    /// Answers one call.
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError>;
}

/// The pipeline every tool call of an agent goes through.
pub(crate) type ToolPipeline =
    Halting<Budgeted<Journaled<Allowed<Handed<Confirmed<Started<Execute>>>>>>>;

/// Builds an agent's pipeline from what its run has (who confirms, the journal, the budget, the
/// pause) and the agent's skills (whose `allowed-tools` a loaded one enforces).
pub(crate) fn pipeline(
    run: &RunContext,
    skills: Option<Arc<lllm_core::skills::SkillSet>>,
) -> ToolPipeline {
    let journal = &run.journal;
    // Without a journal nothing can hold a paused call until someone decides: a pause declines.
    let holds_pauses = journal.as_ref().map(|_| run.pause.clone());
    let started = Started::new(Execute, journal.clone());
    let confirmed = Confirmed::new(started, run.confirm.clone(), holds_pauses.clone());
    let handed = Handed::new(confirmed, holds_pauses);
    let journaled = Journaled::new(Allowed::new(handed, skills), journal.clone());
    Halting::new(
        Budgeted::new(journaled, run.budget.clone()),
        Some(run.pause.clone()),
    )
}

/// `Err(problem)` as the text the model reads.
pub(crate) fn reply_text(reply: &Reply) -> (String, bool) {
    match reply {
        Ok(text) => (text.clone(), false),
        Err(problem) => (format!("error: {problem}"), true),
    }
}
