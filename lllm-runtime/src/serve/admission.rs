//! How many runs the server runs at once, and one at a time per conversation.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;
use super::named_locks::{NamedGuard, NamedLocks};

/// The server's run slots and the conversations' turns.
#[derive(Debug)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    limit: usize,
    turns: Arc<NamedLocks>,
}

/// A run's admission: one slot, and its conversation's turn. Dropped when the run ended.
#[derive(Debug)]
pub(crate) struct Ticket {
    // The turn goes first: the conversation's next request may start as the slot is freed.
    _turn: NamedGuard,
    _slot: OwnedSemaphorePermit,
}

impl Admission {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            turns: Arc::default(),
        })
    }

    /// A slot now (429 when none is free), then the conversation's turn: a second request of one
    /// conversation waits for the first one's run to end, in the order they came.
    pub(crate) async fn admit(self: &Arc<Self>, conversation: &str) -> Result<Ticket, ApiError> {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::busy(self.limit))?;
        Ok(Ticket {
            _turn: self.turns.lock(conversation).await,
            _slot: slot,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_limit_a_request_is_refused_and_a_conversation_waits_its_turn() {
        let admission = Admission::new(2);
        let first = admission.admit("a").await.expect("a slot");
        let second = admission.clone();
        let waiting = tokio::spawn(async move { second.admit("a").await.map(|_| ()) });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the second turn of `a` waits");
        let refused = admission.admit("b").await.expect_err("no slot left");
        assert_eq!(refused.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
        drop(first);
        waiting
            .await
            .expect("joined")
            .expect("admitted after the first");
        assert_eq!(admission.turns.in_use(), 0);
    }
}
