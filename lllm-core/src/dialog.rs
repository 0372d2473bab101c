//! Dialogs: one reasoning chain each, with a stable id and cheap forks.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use crate::message::{Message, Usage};

/// A dialog's identity: a random UUID v4, shown in simple form (32 lowercase hex characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DialogId(Uuid);

impl DialogId {
    /// A fresh random id.
    pub fn new() -> Self {
        DialogId(Uuid::new_v4())
    }
}

impl Default for DialogId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for DialogId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.simple(), f)
    }
}

/// The text is not a dialog id.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{0}` is not a dialog id: expected 32 hexadecimal characters (a UUID in simple form)")]
pub struct InvalidDialogId(String);

impl FromStr for DialogId {
    type Err = InvalidDialogId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::try_parse(s)
            .map(DialogId)
            .map_err(|_| InvalidDialogId(s.to_owned()))
    }
}

impl Serialize for DialogId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DialogId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A frozen run of messages, shared by every dialog forked at or after it.
#[derive(Debug)]
struct Segment {
    earlier: Option<Arc<Segment>>,
    len_before: usize,
    messages: Vec<Message>,
}

impl Segment {
    fn total_len(&self) -> usize {
        self.len_before + self.messages.len()
    }
}

impl Drop for Segment {
    /// Unlinks the chain of earlier segments one by one: a recursive drop of a long chain (many forks
    /// of one dialog) would overflow the stack.
    fn drop(&mut self) {
        let mut next = self.earlier.take();
        while let Some(segment) = next {
            match Arc::try_unwrap(segment) {
                Ok(mut owned) => next = owned.earlier.take(),
                Err(_) => break,
            }
        }
    }
}

/// The messages of a dialog: a shared, immutable prefix plus a private tail.
///
/// Forking freezes the tail into a shared segment, so a fork costs O(1) whatever the dialog's length, and
/// the parent and child go on appending to their own tails.
#[derive(Debug, Clone, Default)]
pub struct MessageLog {
    frozen: Option<Arc<Segment>>,
    tail: Vec<Message>,
}

impl MessageLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.frozen_len() + self.tail.len()
    }

    /// Whether the log holds no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn frozen_len(&self) -> usize {
        self.frozen.as_ref().map_or(0, |s| s.total_len())
    }

    /// Appends one message.
    pub fn push(&mut self, message: Message) {
        self.tail.push(message);
    }

    /// Moves the private tail into a shared segment. O(1) amortised: the tail's buffer moves, or is
    /// appended to the last segment when nothing else shares that segment any more (so a dialog that is
    /// snapshotted every turn does not grow a chain of tiny segments).
    fn freeze(&mut self) {
        if self.tail.is_empty() {
            return;
        }
        if let Some(last) = self.frozen.as_mut().and_then(Arc::get_mut) {
            last.messages.append(&mut self.tail);
            return;
        }
        let len_before = self.frozen_len();
        self.frozen = Some(Arc::new(Segment {
            earlier: self.frozen.take(),
            len_before,
            messages: std::mem::take(&mut self.tail),
        }));
    }

    /// A copy that shares every message with this log. O(1).
    pub fn share(&mut self) -> MessageLog {
        self.freeze();
        MessageLog {
            frozen: self.frozen.clone(),
            tail: Vec::new(),
        }
    }

    /// The messages in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Message> + '_ {
        let mut segments = Vec::new();
        let mut next = self.frozen.as_deref();
        while let Some(segment) = next {
            segments.push(segment);
            next = segment.earlier.as_deref();
        }
        segments
            .into_iter()
            .rev()
            .flat_map(|s| s.messages.iter())
            .chain(self.tail.iter())
    }

    /// The last message, if any.
    pub fn last(&self) -> Option<&Message> {
        self.tail
            .last()
            .or_else(|| self.frozen.as_ref().and_then(|s| s.messages.last()))
    }

    /// The messages copied into a vector.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }
}

impl PartialEq for MessageLog {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl FromIterator<Message> for MessageLog {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        MessageLog {
            frozen: None,
            tail: iter.into_iter().collect(),
        }
    }
}

impl Serialize for MessageLog {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for MessageLog {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(|tail| MessageLog { frozen: None, tail })
    }
}

/// One reasoning chain: its identity, its lineage, and its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dialog {
    id: DialogId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent_id: Option<DialogId>,
    root_id: DialogId,
    /// Messages inherited from the parent at the fork (0 for a root).
    #[serde(default, skip_serializing_if = "is_zero")]
    forked_at: usize,
    messages: MessageLog,
    /// The names its requests carry instead of the ids, when a caller named the conversation.
    #[serde(default, skip_serializing_if = "SessionNames::is_empty")]
    names: SessionNames,
    /// How many times its lineage was compacted (0: the original window).
    #[serde(default, skip_serializing_if = "is_zero_window")]
    window: u32,
}

fn is_zero_window(n: &u32) -> bool {
    *n == 0
}

/// Session names a dialog's requests carry instead of its ids (a caller's conversation id, given to
/// a root dialog and inherited by its forks as their parent's and root's name).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct SessionNames {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    own: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    root: Option<Arc<str>>,
    /// Its requests name no parent although it has one (a compacted window that keeps its
    /// predecessor's session looks like that dialog on the wire).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    no_parent: bool,
    /// The caller's conversation the dialog answers for: a dialog without a name of its own is
    /// named `CONVERSATION:<its id>`, so that every request of the conversation is recognisable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conversation: Option<Arc<str>>,
}

impl SessionNames {
    fn is_empty(&self) -> bool {
        self.own.is_none()
            && self.parent.is_none()
            && self.root.is_none()
            && !self.no_parent
            && self.conversation.is_none()
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Dialog {
    /// A new root dialog with a fresh id and no message.
    pub fn new() -> Self {
        let id = DialogId::new();
        Dialog {
            id,
            parent_id: None,
            root_id: id,
            forked_at: 0,
            messages: MessageLog::new(),
            names: SessionNames::default(),
            window: 0,
        }
    }

    /// A new root dialog that starts with `system` as its first message.
    pub fn with_system(system: impl Into<String>) -> Self {
        let mut dialog = Self::new();
        dialog.push(Message::system(system));
        dialog
    }

    /// The same dialog under the id `id` (a root's family id follows): how a resumed run gets back
    /// the ids its dialogs had, so that the server sees the same sessions.
    pub fn with_id(mut self, id: DialogId) -> Self {
        if self.parent_id.is_none() {
            self.root_id = id;
        }
        self.id = id;
        self
    }

    /// The same dialog with `name` as the session id its requests carry instead of its id (and, for
    /// a root dialog, its family's): how a served tactic's dialog keeps its caller's conversation
    /// id, so that a router pins every request of the conversation to one worker. Forks name it as
    /// their parent and root. `name` should be safe in a header (see
    /// [`safe_session_id`](crate::safe_session_id)); an unsafe one fails the request.
    pub fn with_session(mut self, name: impl Into<String>) -> Self {
        let name: Arc<str> = Arc::from(name.into());
        if self.parent_id.is_none() {
            self.names.root = Some(name.clone());
        }
        self.names.own = Some(name);
        self
    }

    /// The session id this dialog's requests carry: its name when it has one, else its id (after
    /// its conversation's id and a colon, when it answers for a caller's conversation).
    pub fn session(&self) -> String {
        match (&self.names.own, &self.names.conversation) {
            (Some(own), _) => own.to_string(),
            (None, Some(conversation)) => format!("{conversation}:{}", self.id),
            (None, None) => self.id.to_string(),
        }
    }

    /// The same dialog answering for the caller's conversation `id`: its forks and compacted
    /// windows, which have no name of their own, are named `ID:<their dialog id>`, so that a
    /// router or a log sees every request of the conversation as one (see
    /// [`session`](Self::session)).
    pub fn in_conversation(mut self, id: impl Into<String>) -> Self {
        self.names.conversation = Some(Arc::from(id.into()));
        self
    }

    /// The same dialog naming `name` as its parent's session: a root dialog that answers for a
    /// caller's conversation forked from another one (a harness's subagent).
    pub fn with_parent_session(mut self, name: impl Into<String>) -> Self {
        self.names.parent = Some(Arc::from(name.into()));
        self
    }

    /// The session id of the dialog this one was forked from, as that dialog's requests carry it
    /// (or the parent session a caller named).
    pub fn parent_session(&self) -> Option<String> {
        if self.names.no_parent {
            return None;
        }
        match &self.names.parent {
            Some(name) => Some(name.to_string()),
            None => self.parent_id.map(|id| id.to_string()),
        }
    }

    /// The session id of this dialog's family root, as the root's requests carry it.
    pub fn root_session(&self) -> String {
        self.names
            .root
            .as_deref()
            .map_or_else(|| self.root_id.to_string(), str::to_owned)
    }

    /// How many times this dialog's lineage was compacted: 0 for an original window, 1 for the window
    /// a first compaction made, and so on.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// This dialog's id. It never changes.
    pub fn id(&self) -> DialogId {
        self.id
    }

    /// The id of the dialog this one was forked from.
    pub fn parent_id(&self) -> Option<DialogId> {
        self.parent_id
    }

    /// The id of the root of this dialog's family (its own id for a root dialog).
    pub fn root_id(&self) -> DialogId {
        self.root_id
    }

    /// The messages.
    pub fn messages(&self) -> &MessageLog {
        &self.messages
    }

    /// Appends a message.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the dialog has no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// A child dialog that starts with this dialog's messages and names this dialog as its parent.
    ///
    /// O(1) in this dialog's length: the child shares the prefix.
    pub fn fork(&mut self) -> Dialog {
        Dialog {
            id: DialogId::new(),
            parent_id: Some(self.id),
            root_id: self.root_id,
            forked_at: self.messages.len(),
            messages: self.messages.share(),
            names: SessionNames {
                own: None,
                // A dialog of a conversation is named even without a name of its own.
                parent: match &self.names.conversation {
                    Some(_) => Some(Arc::from(self.session())),
                    None => self.names.own.clone(),
                },
                root: self.names.root.clone(),
                no_parent: false,
                conversation: self.names.conversation.clone(),
            },
            window: self.window,
        }
    }

    /// A child dialog that starts with `messages` instead of this dialog's: its own id, naming this
    /// dialog as its parent (and its root as root), as a fork does, without its messages. How a
    /// request made on this dialog's behalf (an MCP server's sampling during one of its tool calls)
    /// is sent as this dialog's child.
    pub fn child(&self, messages: impl IntoIterator<Item = Message>) -> Dialog {
        let mut log = MessageLog::new();
        for message in messages {
            log.push(message);
        }
        Dialog {
            id: DialogId::new(),
            parent_id: Some(self.id),
            root_id: self.root_id,
            forked_at: 0,
            messages: log,
            names: SessionNames {
                own: None,
                parent: Some(Arc::from(self.session())),
                root: Some(Arc::from(self.root_session())),
                no_parent: false,
                conversation: self.names.conversation.clone(),
            },
            window: self.window,
        }
    }

    /// A new window of this dialog (context compaction): a child with its own id, naming this
    /// dialog as its parent, that starts with `messages` instead of this dialog's. With
    /// `keep_session` its requests carry this dialog's session and parent on the wire, so that the
    /// router keeps it on the worker holding this dialog's blocks; without, a session of its own
    /// that names this dialog's as its parent.
    pub fn compacted(
        &self,
        messages: impl IntoIterator<Item = Message>,
        keep_session: bool,
    ) -> Dialog {
        let mut log = MessageLog::new();
        for message in messages {
            log.push(message);
        }
        let root = Some(Arc::from(self.root_session()));
        let names = if keep_session {
            let parent = self.parent_session();
            SessionNames {
                own: Some(Arc::from(self.session())),
                no_parent: parent.is_none(),
                parent: parent.map(Arc::from),
                root,
                conversation: self.names.conversation.clone(),
            }
        } else {
            SessionNames {
                own: None,
                parent: Some(Arc::from(self.session())),
                root,
                no_parent: false,
                conversation: self.names.conversation.clone(),
            }
        };
        Dialog {
            id: DialogId::new(),
            parent_id: Some(self.id),
            root_id: self.root_id,
            forked_at: 0,
            messages: log,
            names,
            window: self.window + 1,
        }
    }

    /// A copy with the same id that shares every message with this one. O(1).
    ///
    /// Used to build a request from a dialog without holding on to the dialog itself.
    pub fn snapshot(&mut self) -> Dialog {
        Dialog {
            id: self.id,
            parent_id: self.parent_id,
            root_id: self.root_id,
            forked_at: self.forked_at,
            messages: self.messages.share(),
            names: self.names.clone(),
            window: self.window,
        }
    }

    /// How many leading messages were inherited from the parent (0 for a root dialog).
    pub fn forked_at(&self) -> usize {
        self.forked_at
    }

    /// Token usage of the answers this dialog received itself (inherited answers are the parent's).
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        let own = self.messages.iter().skip(self.forked_at);
        for usage in own.filter_map(|m| m.usage.as_ref()) {
            total.add(usage);
        }
        total
    }
}

impl Default for Dialog {
    fn default() -> Self {
        Self::new()
    }
}

/// A named dialog of an agent's tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedDialog {
    /// The alias the agent knows the dialog by.
    pub alias: String,
    /// The dialog.
    pub dialog: Dialog,
}

/// An agent's dialogs with their aliases and which one is active: what is saved and restored.
///
/// Parent links are dialog ids, so a restored tree keeps its lineage; messages are stored in full for each
/// dialog (prefix sharing is an in-memory optimisation and is not kept across a save).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DialogTree {
    /// The dialogs, in the order they were opened.
    pub dialogs: Vec<NamedDialog>,
    /// The alias of the active dialog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
}

impl DialogTree {
    /// The dialog with this alias.
    pub fn get(&self, alias: &str) -> Option<&Dialog> {
        self.dialogs
            .iter()
            .find(|d| d.alias == alias)
            .map(|d| &d.dialog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_v4_in_simple_form_and_differ() {
        let a = DialogId::new().to_string();
        let b = DialogId::new().to_string();
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(&a[12..13], "4", "version nibble of a v4 uuid");
        assert_ne!(a, b);
        assert_eq!(a.parse::<DialogId>().map(|d| d.to_string()).ok(), Some(a));
        assert!("not-an-id".parse::<DialogId>().is_err());
    }

    #[test]
    fn fork_shares_prefix_and_records_lineage() {
        let mut parent = Dialog::with_system("sys");
        parent.push(Message::user("u1"));
        parent.push(Message::assistant("a1"));
        let mut child = parent.fork();
        assert_eq!(child.parent_id(), Some(parent.id()));
        assert_eq!(child.root_id(), parent.id());
        assert_ne!(child.id(), parent.id());
        assert_eq!(child.messages(), parent.messages());

        child.push(Message::user("child only"));
        parent.push(Message::user("parent only"));
        let child_texts: Vec<_> = child.messages().iter().map(Message::text).collect();
        let parent_texts: Vec<_> = parent.messages().iter().map(Message::text).collect();
        assert_eq!(child_texts, ["sys", "u1", "a1", "child only"]);
        assert_eq!(parent_texts, ["sys", "u1", "a1", "parent only"]);

        let grandchild = child.fork();
        assert_eq!(grandchild.parent_id(), Some(child.id()));
        assert_eq!(grandchild.root_id(), parent.id());
        assert_eq!(grandchild.len(), 4);
        assert_eq!(
            grandchild.messages().last().map(Message::text),
            Some("child only")
        );
    }

    #[test]
    fn fork_does_not_copy_messages() {
        let mut parent: Dialog = Dialog::new();
        for i in 0..1000 {
            parent.push(Message::user(format!("m{i}")));
        }
        let child = parent.fork();
        let first_parent = parent.messages().iter().next().map(|m| m as *const Message);
        let first_child = child.messages().iter().next().map(|m| m as *const Message);
        assert_eq!(
            first_parent, first_child,
            "the prefix is shared, not copied"
        );
    }

    #[test]
    fn many_forks_and_snapshots_neither_chain_segments_nor_overflow_on_drop() {
        let mut dialog = Dialog::new();
        for i in 0..20_000 {
            dialog.push(Message::user(format!("m{i}")));
            let snapshot = dialog.snapshot();
            drop(snapshot);
        }
        assert_eq!(
            segment_count(&dialog),
            1,
            "unshared segments are extended in place"
        );

        // Keep every fork alive: each one pins a segment, so the chain really is 20,000 long.
        let mut forks = Vec::new();
        for i in 0..20_000 {
            dialog.push(Message::user(format!("n{i}")));
            forks.push(dialog.fork());
        }
        assert_eq!(forks.last().map(Dialog::len), Some(40_000));
        drop(forks);
        drop(dialog);
    }

    fn segment_count(dialog: &Dialog) -> usize {
        let mut count = 0;
        let mut next = dialog.messages.frozen.as_deref();
        while let Some(segment) = next {
            count += 1;
            next = segment.earlier.as_deref();
        }
        count
    }

    #[test]
    fn dialog_and_tree_round_trip_through_json() {
        let mut main = Dialog::with_system("sys");
        main.push(Message::user("hi"));
        let mut answer = Message::assistant("hello");
        answer.usage = Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: Some(8),
        });
        answer.finish_reason = Some("some_new_reason".into());
        main.push(answer);
        let mut retry = main.fork();
        retry.push(Message {
            content: None,
            ..Message::assistant("")
        });
        let tree = DialogTree {
            dialogs: vec![
                NamedDialog {
                    alias: "main".into(),
                    dialog: main.clone(),
                },
                NamedDialog {
                    alias: "retry".into(),
                    dialog: retry.clone(),
                },
            ],
            active: Some("retry".into()),
        };
        let json = serde_json::to_string(&tree).expect("serialises");
        let back: DialogTree = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, tree);
        assert_eq!(
            back.get("retry").and_then(Dialog::parent_id),
            Some(main.id())
        );
        assert_eq!(back.get("retry").map(Dialog::len), Some(4));
        assert_eq!(main.usage().cached_tokens, Some(8));
        assert_eq!(retry.forked_at(), 3);
        assert_eq!(
            retry.usage(),
            Usage::default(),
            "inherited usage is the parent's"
        );
    }
}
