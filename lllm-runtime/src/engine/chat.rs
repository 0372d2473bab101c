//! A conversation with a tactic: one team kept across turns (the terminal's interactive chat).

use tracing::Instrument as _;

use super::{Engine, PreparedTactic, RunError, RunPlan};
use crate::tactic::Team;
use crate::telemetry;

/// Turns of one conversation: every turn runs the tactic again on the same team, so its dialogs go
/// on where the last turn left them (the built-in chat answers each input in its `main` dialog).
/// Made by [`Engine::chat`]; not journaled.
pub struct ChatSession<'a> {
    tactic: &'a PreparedTactic,
    team: Team,
    plan: RunPlan,
    span: tracing::Span,
}

impl std::fmt::Debug for ChatSession<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatSession")
            .field("tactic", &self.tactic.name())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// A conversation with `tactic` under `plan` (its input is ignored: each turn brings one; a
    /// journal is not used).
    pub fn chat<'a>(
        &self,
        tactic: &'a PreparedTactic,
        plan: RunPlan,
    ) -> Result<ChatSession<'a>, RunError> {
        let plan = plan.journal(super::JournalPlan::None);
        let team = self.team(tactic, &plan)?;
        Ok(ChatSession {
            span: telemetry::workflow_span(tactic.name()),
            tactic,
            team,
            plan,
        })
    }
}

impl ChatSession<'_> {
    /// The conversation's team (its agents, dialogs and usage).
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// What the conversation has come to, with `answer` as its answer.
    pub fn output(&self, answer: String) -> super::RunOutput {
        super::RunOutput::of(&self.team, answer)
    }

    /// One turn: the tactic answers `text`.
    pub async fn turn(&self, text: &str) -> Result<String, RunError> {
        let mut vars = self.plan.template_vars();
        vars.insert("input".into(), serde_json::Value::from(text));
        let answer = self
            .tactic
            .tactic()
            .run(&self.team, &vars)
            .instrument(self.span.clone())
            .await?;
        Ok(answer)
    }
}
