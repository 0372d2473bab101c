//! What a run that answered reports.

use lllm_core::{DialogTree, Usage};

use crate::agent::ContextStats;
use crate::endpoints::CallStats;
use crate::tactic::Team;

/// The answer of a run, with what it cost and the dialogs it left.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutput {
    /// The tactic's final answer.
    pub answer: String,
    /// Tokens of every model call of the run.
    pub usage: Usage,
    /// What the run's context compactions did, summed over its agents.
    pub context: ContextStats,
    /// Which endpoints answered, the fallbacks taken and the waits for a slot, over its agents.
    pub calls: CallStats,
    /// Each agent, in file order, with its usage and its dialogs (ids, lineage, messages).
    pub agents: Vec<AgentSummary>,
}

/// One agent of a run that answered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentSummary {
    /// The agent's name.
    pub name: String,
    /// Tokens of its model calls.
    pub usage: Usage,
    /// What its context compactions did.
    pub context: ContextStats,
    /// Which endpoints answered its calls, the fallbacks taken and the waits for a slot.
    pub calls: CallStats,
    /// Its open dialogs.
    pub dialogs: DialogTree,
}

impl RunOutput {
    /// The output of `team`'s run that answered `answer`.
    pub(crate) fn of(team: &Team, answer: String) -> RunOutput {
        let agents: Vec<AgentSummary> = team
            .agents()
            .iter()
            .map(|agent| AgentSummary {
                name: agent.name().to_owned(),
                usage: agent.usage(),
                context: agent.context_stats(),
                calls: agent.call_stats(),
                dialogs: agent.dialogs(),
            })
            .collect();
        RunOutput {
            answer,
            usage: team.usage(),
            context: agents
                .iter()
                .fold(ContextStats::default(), |sum, a| sum.plus(&a.context)),
            calls: agents
                .iter()
                .fold(CallStats::default(), |sum, a| sum.plus(&a.calls)),
            agents,
        }
    }
}
