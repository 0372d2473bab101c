//! The `chat` tactic: the first agent answers the input in its `main` dialog.

use async_trait::async_trait;
use lllm_core::config::DEFAULT_DIALOG;
use lllm_core::PromptVars;

use super::{Tactic, TacticError, Team};

/// The first agent answers the input (`vars["input"]`) in its `main` dialog; each run is one more turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatTactic;

#[async_trait]
impl Tactic for ChatTactic {
    async fn run(&self, team: &Team, vars: &PromptVars) -> Result<String, TacticError> {
        let agent = team
            .agents()
            .first()
            .ok_or_else(|| TacticError::Usage("the tactic has no agent".into()))?;
        let input = vars.get("input").and_then(|v| v.as_str()).ok_or_else(|| {
            TacticError::Usage(
                "a chat needs an input: pass --input TEXT or pipe it on standard input".into(),
            )
        })?;
        if !agent.has_dialog(DEFAULT_DIALOG) {
            agent.open_with(DEFAULT_DIALOG, vars)?;
        }
        agent.receive_in(DEFAULT_DIALOG, input)?;
        let answer = agent.respond_in(DEFAULT_DIALOG).await?;
        Ok(answer.content.unwrap_or_default())
    }
}
