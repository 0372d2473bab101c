//! The `chat` tactic: the first agent answers the input in its `main` dialog.

use async_trait::async_trait;
use lllm_core::PromptVars;
use lllm_core::DEFAULT_DIALOG;

use super::rounds::Rounds;
use super::{Tactic, TacticError, Team};
use crate::agent::{Agent, StreamEvent};
use crate::events::RunEvent;

/// The first agent answers the input (`vars["input"]`) in its `main` dialog; each run is one more turn.
///
/// The answer is the text of every round of the respond, in order: a sentence the model says
/// before it calls a tool is part of it, a blank line between rounds (see `docs/serve.md`). When
/// the team [streams](Team::streams), that text reaches the run's observer as it arrives (the
/// breaks between rounds as [`RunEvent::Text`] too), so the pieces add up to the answer. An agent
/// with an output schema does not stream: its answer is checked before anyone sees it, and is its
/// last round's text only (the JSON).
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
        if agent.has_output_schema() {
            let answer = agent.respond(DEFAULT_DIALOG).await?;
            return Ok(answer.content.unwrap_or_default());
        }
        if team.streams() {
            return streamed(team, agent).await;
        }
        agent.respond(DEFAULT_DIALOG).await?;
        let dialog = agent.dialog(DEFAULT_DIALOG)?;
        Ok(Rounds::of_messages(dialog.messages().iter()))
    }
}

/// Responds streaming: the agent shows each piece of text to the run's observer, and this shows the
/// break before a round's first piece (a sink sees an event before the observer does).
async fn streamed(team: &Team, agent: &Agent) -> Result<String, TacticError> {
    let observer = team.observer().cloned();
    let mut rounds = Rounds::default();
    agent
        .respond_to(DEFAULT_DIALOG)
        .stream(&mut |event| match event {
            StreamEvent::Text(piece) => {
                let separator = rounds.text(piece);
                if let (false, Some(observer)) = (separator.is_empty(), &observer) {
                    observer.notify(&RunEvent::Text {
                        agent: agent.name().to_owned(),
                        text: separator.to_owned(),
                    });
                }
            }
            StreamEvent::ToolCall(_) => rounds.end_round(),
            StreamEvent::Reasoning(_) | StreamEvent::ToolResult { .. } => {}
        })
        .await?;
    Ok(rounds.into_answer())
}
