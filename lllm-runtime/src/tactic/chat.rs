//! The `chat` tactic: the first agent answers the input in its `main` dialog.

use async_trait::async_trait;
use lllm_core::PromptVars;
use lllm_core::DEFAULT_DIALOG;

use super::{Tactic, TacticError, Team};

/// The first agent answers the input (`vars["input"]`) in its `main` dialog; each run is one more turn.
/// When the team [streams](Team::streams), the answer's text reaches the run's observer as it arrives.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatTactic;

#[async_trait]
impl Tactic for ChatTactic {
    async fn run(&self, team: &Team, vars: &PromptVars) -> Result<String, TacticError> {
        let agent = team.agents().first().ok_or(TacticError::NoAgents)?;
        let input = vars
            .get("input")
            .and_then(|v| v.as_str())
            .ok_or(TacticError::NoInput)?;
        if !agent.has_dialog(DEFAULT_DIALOG) {
            agent.open_with(DEFAULT_DIALOG, vars)?;
        }
        agent.receive_in(DEFAULT_DIALOG, input)?;
        let answer = if team.streams() {
            // The text reaches the run's observer as it arrives.
            agent.respond_to(DEFAULT_DIALOG).stream(&mut |_| {}).await?
        } else {
            agent.respond(DEFAULT_DIALOG).await?
        };
        Ok(answer.content.unwrap_or_default())
    }
}
