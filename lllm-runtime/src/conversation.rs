//! A caller's conversation that a run answers (a served tactic's client): its id names the run's
//! dialogs' sessions, and its earlier messages start the run's first dialog.

use std::sync::atomic::{AtomicBool, Ordering};

use lllm_core::{safe_session_id, Message};

/// The conversation a run answers: the id its dialogs' sessions are named after, so that every
/// request of the conversation, over many runs, reaches the worker holding its prefix; and the
/// messages the conversation had before this run's input.
///
/// The first root dialog the run opens takes the id itself and starts with the earlier messages
/// after its system prompt; every other root dialog is named `ID:AGENT:ALIAS` (the same name in
/// every run of the conversation). Forks follow the tactic's `fork_session` rule: their own id,
/// naming the conversation's as parent, or under `family` the conversation's.
#[derive(Debug)]
pub struct Conversation {
    id: String,
    parent: Option<String>,
    seed: Vec<Message>,
    claimed: AtomicBool,
}

impl Conversation {
    /// A conversation named `id`, which must already be a safe session id
    /// ([`safe_session_id`]); an unsafe one fails the run's first request.
    pub fn new(id: impl Into<String>) -> Self {
        Conversation {
            id: id.into(),
            parent: None,
            seed: Vec::new(),
            claimed: AtomicBool::new(false),
        }
    }

    /// The conversation's earlier messages (user and assistant turns), which the first dialog
    /// starts with after its system prompt.
    pub fn seed(mut self, messages: Vec<Message>) -> Self {
        self.seed = messages;
        self
    }

    /// The conversation was forked from `parent` (a harness's subagent names its parent's): the
    /// first dialog's requests name it as their parent session.
    pub fn parent(mut self, parent: Option<String>) -> Self {
        self.parent = parent;
        self
    }

    /// The parent conversation's id, when the caller named one.
    pub fn parent_id(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    /// The conversation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The earlier messages.
    pub fn seed_messages(&self) -> &[Message] {
        &self.seed
    }

    /// The first dialog exists already (a run continues an earlier one's dialogs): every root
    /// dialog opened from now on takes a derived name.
    pub(crate) fn mark_claimed(&self) {
        self.claimed.store(true, Ordering::SeqCst);
    }

    /// The session name of a root dialog `alias` of `agent` the run opens now, and the messages it
    /// starts with: the id and the seed for the first, a derived name and nothing for the others.
    pub(crate) fn claim(&self, agent: &str, alias: &str) -> Claim<'_> {
        if !self.claimed.swap(true, Ordering::SeqCst) {
            return Claim {
                session: self.id.clone(),
                parent: self.parent.as_deref(),
                seed: &self.seed,
            };
        }
        Claim {
            session: format!("{}:{}:{}", self.id, part(agent), part(alias)),
            parent: None,
            seed: &[],
        }
    }
}

/// What a root dialog opened in a conversation is named, and starts with.
#[derive(Debug)]
pub(crate) struct Claim<'a> {
    /// Its session name.
    pub(crate) session: String,
    /// The parent session it names (the first dialog, when the caller named a parent).
    pub(crate) parent: Option<&'a str>,
    /// The messages it starts with after its system prompt.
    pub(crate) seed: &'a [Message],
}

/// A name's part in a derived session name: already safe, or made safe.
fn part(name: &str) -> String {
    safe_session_id(name).unwrap_or_else(|| "~".to_owned())
}
