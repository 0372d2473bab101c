//! One conversation as the server keeps it after a turn: whose it is, what its client saw (the
//! transcript a stateless client sends back), and the tactic's dialogs to continue.

use lllm_core::{DialogTree, Message, Role};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Which conversation: the caller's key (a digest, never the key), the model, and the id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct ConversationKey {
    pub(crate) caller: String,
    pub(crate) model: String,
    pub(crate) id: String,
}

impl ConversationKey {
    /// A name for the key's file: its digest (ids are the caller's text, never a path).
    pub(crate) fn file_stem(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.caller, &self.model, &self.id] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
        hex(&hash.finalize()[..16])
    }
}

/// One message of a transcript: a user's, or one of lllm's answers (with the ids the Responses API
/// gave it, so that a later `item_reference` or `previous_response_id` finds it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) role: Role,
    pub(crate) text: String,
    /// The response that gave this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response: Option<String>,
    /// The output item that carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) item: Option<String>,
}

impl Entry {
    pub(crate) fn user(text: impl Into<String>) -> Self {
        Entry {
            role: Role::User,
            text: text.into(),
            response: None,
            item: None,
        }
    }

    /// The transcript of a client's earlier messages (users' and answers' text).
    pub(crate) fn of_messages(messages: &[Message]) -> Vec<Entry> {
        messages
            .iter()
            .map(|m| Entry {
                role: m.role,
                text: m.text().to_owned(),
                response: None,
                item: None,
            })
            .collect()
    }

    /// The message a dialog seeded from this entry starts with.
    pub(crate) fn message(&self) -> Message {
        match self.role {
            Role::Assistant => Message::assistant(self.text.clone()),
            _ => Message::user(self.text.clone()),
        }
    }
}

/// A conversation after its latest turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    pub(crate) key: ConversationKey,
    /// The conversation id its requests carry downstream (a branch's key is named apart).
    pub(crate) session: String,
    /// The digest of the tactic file that made its dialogs.
    pub(crate) tactic: String,
    /// The client's system and developer text of the turns (a change starts fresh dialogs: the
    /// tactic's system prompt may show it).
    pub(crate) client_system: String,
    pub(crate) transcript: Vec<Entry>,
    /// Each agent's dialogs, by agent name.
    pub(crate) dialogs: Vec<(String, DialogTree)>,
}

impl Snapshot {
    /// The digest a client's history must have to continue this conversation.
    pub(crate) fn history_digest(&self) -> String {
        history_digest(
            &self.key.caller,
            &self.key.model,
            &self.client_system,
            self.transcript.iter().map(|e| (e.role, e.text.as_str())),
        )
    }
}

/// The digest of a history (the role and text of each message, in order) as one caller of one
/// model with one system text sent it: equal histories, and only those, have equal digests.
pub(crate) fn history_digest<'a>(
    caller: &str,
    model: &str,
    client_system: &str,
    history: impl Iterator<Item = (Role, &'a str)>,
) -> String {
    let mut hash = Sha256::new();
    for part in [caller, model, client_system] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    for (role, text) in history {
        hash.update([role_byte(role)]);
        hash.update((text.len() as u64).to_le_bytes());
        hash.update(text.as_bytes());
    }
    hex(&hash.finalize())
}

fn role_byte(role: Role) -> u8 {
    match role {
        Role::System => 0,
        Role::User => 1,
        Role::Assistant => 2,
        Role::Tool => 3,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(caller: &str, history: &[(Role, &str)]) -> String {
        history_digest(caller, "m", "", history.iter().copied())
    }

    #[test]
    fn histories_differing_in_one_byte_a_boundary_or_a_caller_have_other_digests() {
        let base = digest("k1", &[(Role::User, "hello"), (Role::Assistant, "hi")]);
        assert_eq!(
            base,
            digest("k1", &[(Role::User, "hello"), (Role::Assistant, "hi")])
        );
        for other in [
            digest("k1", &[(Role::User, "hellp"), (Role::Assistant, "hi")]),
            digest("k1", &[(Role::User, "hell"), (Role::Assistant, "ohi")]),
            digest("k1", &[(Role::User, "hello"), (Role::User, "hi")]),
            digest("k2", &[(Role::User, "hello"), (Role::Assistant, "hi")]),
        ] {
            assert_ne!(base, other);
        }
    }
}
