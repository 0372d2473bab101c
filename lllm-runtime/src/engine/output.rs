//! What a run that answered reports.

use lllm_core::{DialogTree, Usage};

use crate::tactic::Team;

/// The answer of a run, with what it cost and the dialogs it left.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The tactic's final answer.
    pub answer: String,
    /// Tokens of every model call of the run.
    pub usage: Usage,
    /// Each agent, in file order, with its usage and its dialogs (ids, lineage, messages).
    pub agents: Vec<AgentSummary>,
}

/// One agent of a run that answered.
#[derive(Debug, Clone)]
pub struct AgentSummary {
    /// The agent's name.
    pub name: String,
    /// Tokens of its model calls.
    pub usage: Usage,
    /// Its open dialogs.
    pub dialogs: DialogTree,
}

impl RunOutput {
    /// The output of `team`'s run that answered `answer`.
    pub(crate) fn of(team: &Team, answer: String) -> RunOutput {
        RunOutput {
            answer,
            usage: team.usage(),
            agents: team
                .agents()
                .iter()
                .map(|agent| AgentSummary {
                    name: agent.name().to_owned(),
                    usage: agent.usage(),
                    dialogs: agent.dialogs(),
                })
                .collect(),
        }
    }
}
