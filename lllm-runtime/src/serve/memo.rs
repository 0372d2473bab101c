//! What is kept of a served run's conversation when it answers (a paused run keeps it until its
//! continuation answers).

use std::sync::Arc;

use super::conversations::{ConversationKey, Conversations, Entry, Snapshot};
use crate::engine::RunOutput;

/// The ids of a Responses answer: the response's and its message item's.
#[derive(Debug, Clone)]
pub(crate) struct AnswerIds {
    pub(crate) response: String,
    pub(crate) item: String,
}

/// What is kept of a run's conversation when it answers.
#[derive(Debug)]
pub(crate) struct Memo {
    pub(crate) store: Arc<Conversations>,
    pub(crate) key: ConversationKey,
    /// The conversation id its requests carry downstream.
    pub(crate) session: String,
    /// The digest of the tactic file that made its dialogs.
    pub(crate) tactic: String,
    pub(crate) client_system: String,
    /// The transcript up to and including the run's input.
    pub(crate) transcript: Vec<Entry>,
    pub(crate) answer_ids: Option<AnswerIds>,
}

impl Memo {
    /// The digest of the transcript, as a client's history continuing it would have.
    pub(crate) fn history_digest(&self) -> String {
        super::conversations::history_digest(
            &self.key.caller,
            &self.key.model,
            &self.client_system,
            self.transcript.iter().map(|e| (e.role, e.text.as_str())),
        )
    }

    pub(crate) fn keep(self, output: &RunOutput) {
        let mut transcript = self.transcript;
        if !output.answer.is_empty() {
            // A client sends no assistant message without text back: neither is it kept.
            transcript.push(Entry {
                role: lllm_core::Role::Assistant,
                text: output.answer.clone(),
                response: self.answer_ids.as_ref().map(|ids| ids.response.clone()),
                item: self.answer_ids.map(|ids| ids.item),
            });
        }
        let dialogs = output
            .agents
            .iter()
            .map(|agent| (agent.name.clone(), agent.dialogs.clone()))
            .collect();
        self.store.remember(Snapshot {
            key: self.key,
            session: self.session,
            tactic: self.tactic,
            client_system: self.client_system,
            transcript,
            dialogs,
        });
    }
}
