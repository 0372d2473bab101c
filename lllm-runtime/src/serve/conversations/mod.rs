//! The conversations a server answered, kept so that the next turn of each continues the tactic's
//! dialogs (its tool calls and results included) instead of rebuilding them from the client's text:
//! its first downstream request then extends the previous turn's last one, and the cached prefix
//! holds. Bounded by count and bytes, the least recently used forgotten first; under a state
//! directory, written through and read back at start.

mod disk;
mod snapshot;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) use snapshot::{history_digest, ConversationKey, Entry, Snapshot};

use super::ServeError;

/// Conversations kept by default.
pub const DEFAULT_KEPT_CONVERSATIONS: usize = 2_048;
/// Bytes of conversations (their dialogs and transcripts, as written) kept by default.
pub const DEFAULT_KEPT_CONVERSATION_BYTES: usize = 256 * 1024 * 1024;

/// How many conversations, and how many bytes of them, are kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) count: usize,
    pub(crate) bytes: usize,
}

/// The kept conversations.
#[derive(Debug)]
pub(crate) struct Conversations {
    kept: Mutex<Kept>,
    /// Held while a conversation's file is written and the files of those it pushed out are
    /// removed, so that what is on disk is what is kept in memory.
    disk: Mutex<()>,
    bounds: Bounds,
    dir: Option<PathBuf>,
}

#[derive(Debug, Default)]
struct Kept {
    entries: HashMap<ConversationKey, Held>,
    /// Use order: the smallest tick is the least recently used.
    order: BTreeMap<u64, ConversationKey>,
    by_history: HashMap<String, ConversationKey>,
    by_response: HashMap<String, ConversationKey>,
    by_item: HashMap<String, ConversationKey>,
    tick: u64,
    bytes: usize,
}

#[derive(Debug)]
struct Held {
    snapshot: Arc<Snapshot>,
    bytes: usize,
    tick: u64,
    digest: String,
}

/// Where in a conversation a response or an item is.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) snapshot: Arc<Snapshot>,
    /// The transcript's length up to and including the response or item.
    pub(crate) upto: usize,
}

impl Found {
    /// Whether it is the conversation's latest turn (its dialogs continue from there).
    pub(crate) fn is_latest(&self) -> bool {
        self.upto == self.snapshot.transcript.len()
    }
}

impl Conversations {
    /// Kept in memory, and under `state` when given (read back now).
    pub(crate) fn open(state: Option<&Path>, bounds: Bounds) -> Result<Self, ServeError> {
        let dir = state
            .map(|state| {
                disk::folder(state).map_err(|source| ServeError::State {
                    path: state.join("conversations"),
                    source,
                })
            })
            .transpose()?;
        let store = Conversations {
            kept: Mutex::default(),
            disk: Mutex::default(),
            bounds,
            dir,
        };
        if let Some(dir) = &store.dir {
            for (snapshot, bytes) in disk::read_back(dir, bounds) {
                store.lock().insert(snapshot, bytes, bounds);
            }
        }
        Ok(store)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many conversations are kept, and their bytes.
    #[cfg(test)]
    pub(crate) fn size(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.entries.len(), kept.bytes)
    }

    /// The conversation `key`, marked used.
    pub(crate) fn get(&self, key: &ConversationKey) -> Option<Arc<Snapshot>> {
        let mut kept = self.lock();
        kept.touch(key)
    }

    /// The conversation whose transcript has `digest` (which names its caller and model).
    pub(crate) fn by_history(&self, digest: &str) -> Option<ConversationKey> {
        self.lock().by_history.get(digest).cloned()
    }

    /// The response `id` of `caller`'s conversations (another caller's is not found).
    pub(crate) fn by_response(&self, caller: &str, id: &str) -> Option<Found> {
        let mut kept = self.lock();
        let key = kept
            .by_response
            .get(id)
            .filter(|k| k.caller == caller)?
            .clone();
        let snapshot = kept.touch(&key)?;
        let upto = snapshot
            .transcript
            .iter()
            .rposition(|e| e.response.as_deref() == Some(id))?
            + 1;
        Some(Found { snapshot, upto })
    }

    /// The output item `id` of `caller`'s conversations.
    pub(crate) fn by_item(&self, caller: &str, id: &str) -> Option<Found> {
        let mut kept = self.lock();
        let key = kept.by_item.get(id).filter(|k| k.caller == caller)?.clone();
        let snapshot = kept.touch(&key)?;
        let upto = snapshot
            .transcript
            .iter()
            .position(|e| e.item.as_deref() == Some(id))?
            + 1;
        Some(Found { snapshot, upto })
    }

    /// Keeps `snapshot` as its conversation's latest turn (written under the state directory),
    /// forgetting the least recently used past the bounds.
    pub(crate) fn remember(&self, snapshot: Snapshot) {
        let bytes = match serde_json::to_vec(&snapshot) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::warn!("a conversation could not be kept: {error}");
                return;
            }
        };
        let Some(dir) = &self.dir else {
            self.lock().insert(snapshot, bytes.len(), self.bounds);
            return;
        };
        let _disk = self.disk.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(error) = disk::write(dir, &snapshot.key.file_stem(), &bytes) {
            tracing::warn!(
                "a conversation could not be written under {}: {error}",
                dir.display()
            );
        }
        let forgotten = self.lock().insert(snapshot, bytes.len(), self.bounds);
        for key in forgotten {
            disk::remove(dir, &key.file_stem());
        }
    }
}

impl Kept {
    fn touch(&mut self, key: &ConversationKey) -> Option<Arc<Snapshot>> {
        self.tick += 1;
        let tick = self.tick;
        let held = self.entries.get_mut(key)?;
        self.order.remove(&held.tick);
        held.tick = tick;
        self.order.insert(tick, key.clone());
        Some(held.snapshot.clone())
    }

    /// Inserts, replacing the key's earlier turn; returns the keys forgotten to stay in bounds.
    fn insert(&mut self, snapshot: Snapshot, bytes: usize, bounds: Bounds) -> Vec<ConversationKey> {
        let key = snapshot.key.clone();
        self.forget(&key);
        let mut forgotten = Vec::new();
        if bytes > bounds.bytes {
            tracing::warn!(
                "a conversation of {bytes} bytes is past the bound of {} bytes: it is not kept, its next turn starts from the client's history",
                bounds.bytes
            );
            forgotten.push(key);
            return forgotten;
        }
        self.tick += 1;
        let digest = snapshot.history_digest();
        self.by_history.insert(digest.clone(), key.clone());
        for entry in &snapshot.transcript {
            if let Some(response) = &entry.response {
                self.by_response.insert(response.clone(), key.clone());
            }
            if let Some(item) = &entry.item {
                self.by_item.insert(item.clone(), key.clone());
            }
        }
        self.order.insert(self.tick, key.clone());
        self.bytes += bytes;
        self.entries.insert(
            key,
            Held {
                snapshot: Arc::new(snapshot),
                bytes,
                tick: self.tick,
                digest,
            },
        );
        while self.entries.len() > bounds.count || self.bytes > bounds.bytes {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.forget(&oldest);
            forgotten.push(oldest);
        }
        forgotten
    }

    fn forget(&mut self, key: &ConversationKey) {
        let Some(held) = self.entries.remove(key) else {
            return;
        };
        self.order.remove(&held.tick);
        self.bytes -= held.bytes;
        if self.by_history.get(&held.digest) == Some(key) {
            self.by_history.remove(&held.digest);
        }
        for entry in &held.snapshot.transcript {
            for (index, id) in [
                (&mut self.by_response, &entry.response),
                (&mut self.by_item, &entry.item),
            ] {
                if let Some(id) = id {
                    if index.get(id) == Some(key) {
                        index.remove(id);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
