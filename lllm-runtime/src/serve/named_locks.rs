//! Locks by name: a FIFO mutex made on first use and forgotten once nobody holds or waits for it,
//! so the map stays as large as the names in use, not as all the names ever seen. A conversation's
//! turn, an idempotency key's creation and a run's decisions each take one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// The locks in use, by name.
#[derive(Debug, Default)]
pub(crate) struct NamedLocks {
    locks: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    mutex: Arc<tokio::sync::Mutex<()>>,
    /// Who holds or waits for it: counted, not read from the `Arc`, so that a waiter dropped
    /// mid-wait (its client went away) lets go of the entry however its future is torn down.
    users: usize,
}

/// The lock of one name, held until dropped.
#[derive(Debug)]
pub(crate) struct NamedGuard {
    // Declared first: dropped before the claim lets go of the entry.
    _guard: OwnedMutexGuard<()>,
    _claim: Claim,
}

/// A holder or waiter of a name's lock: the entry lives while any claim does.
#[derive(Debug)]
struct Claim {
    locks: Arc<NamedLocks>,
    name: String,
}

impl NamedLocks {
    /// Waits for the lock of `name`, in the order the waiters came.
    pub(crate) async fn lock(self: &Arc<Self>, name: &str) -> NamedGuard {
        let (claim, mutex) = {
            let mut locks = self.map();
            let entry = locks.entry(name.to_owned()).or_insert_with(|| Entry {
                mutex: Arc::default(),
                users: 0,
            });
            entry.users += 1;
            let claim = Claim {
                locks: self.clone(),
                name: name.to_owned(),
            };
            (claim, entry.mutex.clone())
        };
        NamedGuard {
            _guard: mutex.lock_owned().await,
            _claim: claim,
        }
    }

    /// How many names are in use.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> usize {
        self.map().len()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut locks = self.locks.map();
        if let Some(entry) = locks.get_mut(&self.name) {
            entry.users -= 1;
            if entry.users == 0 {
                locks.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_per_name_and_entries_go_when_unused() {
        let locks = Arc::new(NamedLocks::default());
        let held = locks.lock("a").await;
        let other = locks.lock("b").await;
        let waiter = locks.clone();
        let waiting = tokio::spawn(async move { drop(waiter.lock("a").await) });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "a second holder of `a` waits");
        drop(other);
        assert_eq!(locks.in_use(), 1, "`b` is forgotten once let go");
        drop(held);
        waiting.await.expect("the waiter got `a`");
        assert_eq!(locks.in_use(), 0);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_lets_go_of_the_entry() {
        let locks = Arc::new(NamedLocks::default());
        let held = locks.lock("a").await;
        let waiter = locks.clone();
        let waiting = tokio::spawn(async move { drop(waiter.lock("a").await) });
        tokio::task::yield_now().await;
        waiting.abort();
        assert!(waiting.await.is_err_and(|e| e.is_cancelled()));
        drop(held);
        assert_eq!(locks.in_use(), 0);
    }
}
