//! How many runs the server runs at once, and one at a time per conversation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// The server's run slots and the conversations' turns.
#[derive(Debug)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    limit: usize,
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A run's admission: one slot, and its conversation's turn. Dropped when the run ended.
#[derive(Debug)]
pub(crate) struct Ticket {
    _slot: OwnedSemaphorePermit,
    turn: Option<OwnedMutexGuard<()>>,
    conversation: String,
    admission: Arc<Admission>,
}

impl Admission {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            turns: Mutex::default(),
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
        let turn = self
            .turns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(conversation.to_owned())
            .or_default()
            .clone();
        let turn = turn.lock_owned().await;
        Ok(Ticket {
            _slot: slot,
            turn: Some(turn),
            conversation: conversation.to_owned(),
            admission: self.clone(),
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        drop(self.turn.take());
        let mut turns = self
            .admission
            .turns
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Forgotten once nobody holds or waits for the conversation's turn: the map stays as large
        // as the conversations in flight, not as all conversations ever seen.
        if turns
            .get(&self.conversation)
            .is_some_and(|turn| Arc::strong_count(turn) == 1)
        {
            turns.remove(&self.conversation);
        }
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
        assert!(admission.turns.lock().expect("lock").is_empty());
    }
}
