//! Which conversation a request belongs to, one rule for Chat Completions and Responses (first
//! found): a header; the body's `prompt_cache_key`, then Responses' `conversation`; the
//! conversation of the `previous_response_id` or of an `item_reference`; a stateless client's
//! history equal to a transcript lllm answered (the same caller's only); else a minted id. And what
//! of the conversation the request continues.

use std::sync::Arc;

use axum::http::HeaderMap;
use lllm_core::{safe_session_id, Message};

use super::conversations::{
    history_digest, ConversationKey, Conversations, Entry, Found, Snapshot,
};
use super::input::Turn;
use super::session::{header_id, mint, CallerSession};

/// What a request's body says of its conversation.
#[derive(Debug, Default)]
pub(crate) struct Claims<'a> {
    pub(crate) prompt_cache_key: Option<&'a str>,
    /// Responses' `conversation`.
    pub(crate) conversation: Option<&'a str>,
    /// The response `previous_response_id` names.
    pub(crate) previous: Option<Found>,
    /// The response of the first `item_reference`.
    pub(crate) referenced: Option<Found>,
}

/// Where a request's conversation id came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Header,
    PromptCacheKey,
    Conversation,
    PreviousResponse,
    ItemReference,
    History,
    Minted,
}

impl Source {
    /// The source `name` names (as [`name`](Self::name) gives it).
    pub(crate) fn from_name(name: &str) -> Option<Source> {
        [
            Source::Header,
            Source::PromptCacheKey,
            Source::Conversation,
            Source::PreviousResponse,
            Source::ItemReference,
            Source::History,
            Source::Minted,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// How `x-lllm-session-source` names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::Header => "header",
            Source::PromptCacheKey => "prompt_cache_key",
            Source::Conversation => "conversation",
            Source::PreviousResponse => "previous_response_id",
            Source::ItemReference => "item_reference",
            Source::History => "history",
            Source::Minted => "minted",
        }
    }
}

/// What of its conversation a request continues, decided once its turn came.
#[derive(Debug)]
pub(crate) enum Follow {
    /// The stored dialogs when the request's history is the stored transcript, else fresh dialogs
    /// seeded from that history.
    Matching,
    /// The conversation's latest turn (the request brings new input only).
    Latest,
    /// The turn of a conversation a `previous_response_id` names: its dialogs when it is still the
    /// conversation's latest turn, else a branch seeded from the transcript up to it.
    Response(Found),
}

/// A request's conversation.
#[derive(Debug)]
pub(crate) struct Identified {
    pub(crate) session: CallerSession,
    pub(crate) source: Source,
    pub(crate) follow: Follow,
    pub(crate) key: ConversationKey,
    /// The digest of the request's history, as a stored transcript's would be.
    pub(crate) digest: String,
}

/// The dialogs a run starts from, the transcript the client has seen before its input, and where
/// the conversation is kept after the run.
#[derive(Debug)]
pub(crate) struct Continuation {
    pub(crate) dialogs: Vec<(String, lllm_core::DialogTree)>,
    pub(crate) seed: Vec<Message>,
    pub(crate) transcript: Vec<Entry>,
    pub(crate) key: ConversationKey,
    /// The client's system text the run's dialogs show.
    pub(crate) client_system: String,
}

/// The conversation id a request names itself, and where (rules 1 and 2): a session header, else
/// `prompt_cache_key`, else Responses' `conversation`, made safe.
pub(crate) fn named_id(
    headers: &HeaderMap,
    prompt_cache_key: Option<&str>,
    conversation: Option<&str>,
) -> Option<(String, Source)> {
    let named = |raw: &str| safe_session_id(raw.trim());
    header_id(headers)
        .map(|id| (id, Source::Header))
        .or_else(|| {
            prompt_cache_key
                .and_then(named)
                .map(|id| (id, Source::PromptCacheKey))
        })
        .or_else(|| {
            conversation
                .and_then(named)
                .map(|id| (id, Source::Conversation))
        })
}

/// The conversation of a request of `caller` to `model` with `headers`, `claims` and `turn`.
pub(crate) fn identify(
    headers: &HeaderMap,
    claims: Claims<'_>,
    store: &Conversations,
    (caller, model): (&str, &str),
    turn: &Turn,
) -> Identified {
    let digest = history_digest(
        caller,
        model,
        &turn.client_system,
        turn.seed.iter().map(|m| (m.role, m.text())),
    );
    let (id, source) =
        if let Some(named) = named_id(headers, claims.prompt_cache_key, claims.conversation) {
            named
        } else if let Some(found) = &claims.previous {
            (found.snapshot.session.clone(), Source::PreviousResponse)
        } else if let Some(found) = &claims.referenced {
            (found.snapshot.session.clone(), Source::ItemReference)
        } else if let Some(key) = (!turn.seed.is_empty())
            .then(|| store.by_history(&digest))
            .flatten()
        {
            (key.id, Source::History)
        } else {
            (mint(), Source::Minted)
        };
    let follow = match claims.previous {
        Some(found) => Follow::Response(found),
        None if claims.conversation.is_some() && source == Source::Conversation => Follow::Latest,
        None => Follow::Matching,
    };
    Identified {
        key: ConversationKey {
            caller: caller.to_owned(),
            model: model.to_owned(),
            id: id.clone(),
        },
        session: CallerSession::named(id, headers),
        source,
        follow,
        digest,
    }
}

impl Identified {
    /// What the run starts from, looked up once the conversation's turn came (the turn before may
    /// have just ended). Stored dialogs are continued only when they were made by this tactic
    /// (`tactic`, its file's digest) with the request's system text: otherwise the restored
    /// dialogs would carry another system prompt, or name agents the tactic no longer has.
    pub(crate) fn continuation(
        &self,
        store: &Conversations,
        turn: &Turn,
        tactic: &str,
    ) -> Continuation {
        // A stateful request (`conversation`, `previous_response_id`) that sends no system text
        // keeps the conversation's, as a stateful conversation keeps its system prompt; other
        // text starts fresh dialogs that show it.
        let usable = |s: &Snapshot| {
            s.tactic == tactic
                && (s.client_system == turn.client_system || turn.client_system.is_empty())
        };
        let main = || self.key.clone();
        let fresh = |entries: &[Entry], key| seeded(entries, key, &turn.client_system);
        match &self.follow {
            Follow::Matching => match store.get(&self.key) {
                Some(s) if s.tactic == tactic && s.history_digest() == self.digest => {
                    continued(&s, main())
                }
                _ => fresh(&Entry::of_messages(&turn.seed), main()),
            },
            Follow::Latest => match store.get(&self.key) {
                Some(s) if usable(&s) => continued(&s, main()),
                Some(s) => fresh(&s.transcript, main()),
                None => fresh(&Entry::of_messages(&turn.seed), main()),
            },
            Follow::Response(found) => {
                let latest = store
                    .get(&found.snapshot.key)
                    .is_some_and(|now| Arc::ptr_eq(&now, &found.snapshot));
                if latest && found.is_latest() && usable(&found.snapshot) {
                    return continued(&found.snapshot, found.snapshot.key.clone());
                }
                // An earlier turn (a branch, or a client's retry of a turn that ended meanwhile):
                // kept apart, so that the conversation's latest turn is not replaced by it.
                let mut key = found.snapshot.key.clone();
                let response = found.snapshot.transcript[found.upto - 1]
                    .response
                    .as_deref();
                key.id = format!("{}#{}", key.id, response.unwrap_or_default());
                let system = match turn.client_system.as_str() {
                    "" => &found.snapshot.client_system,
                    given => given,
                };
                seeded(&found.snapshot.transcript[..found.upto], key, system)
            }
        }
    }
}

/// The stored conversation's dialogs, continued (with the system text they were made with).
fn continued(snapshot: &Snapshot, key: ConversationKey) -> Continuation {
    Continuation {
        dialogs: snapshot.dialogs.clone(),
        seed: Vec::new(),
        transcript: snapshot.transcript.clone(),
        key,
        client_system: snapshot.client_system.clone(),
    }
}

/// Fresh dialogs seeded from `entries`, their system prompt showing `client_system`.
fn seeded(entries: &[Entry], key: ConversationKey, client_system: &str) -> Continuation {
    Continuation {
        dialogs: Vec::new(),
        seed: entries.iter().map(Entry::message).collect(),
        transcript: entries.to_vec(),
        key,
        client_system: client_system.to_owned(),
    }
}
