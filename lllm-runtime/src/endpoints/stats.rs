//! What an agent's model calls went through: which endpoints answered, the fallbacks taken, and
//! the time spent waiting for a slot.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// What an agent's model calls went through (all zero and empty before its first answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallStats {
    /// Answers per endpoint: its base URL without credentials (`default` for the server of
    /// `OPENAI_BASE_URL`).
    pub answered_by: BTreeMap<String, u64>,
    /// Answers that came from a fallback endpoint.
    pub fallback_answers: u64,
    /// Moves to the next endpoint: after a failure worth falling back on, or past an open circuit.
    pub hops: u64,
    /// Time requests waited for a slot of their endpoint (`max_in_flight`), summed.
    pub queue_wait: Duration,
}

impl CallStats {
    /// These counts and `other`'s, added.
    pub fn plus(&self, other: &CallStats) -> CallStats {
        let mut answered_by = self.answered_by.clone();
        for (endpoint, answers) in &other.answered_by {
            *answered_by.entry(endpoint.clone()).or_default() += answers;
        }
        CallStats {
            answered_by,
            fallback_answers: self.fallback_answers + other.fallback_answers,
            hops: self.hops + other.hops,
            queue_wait: self.queue_wait + other.queue_wait,
        }
    }

    /// Whether anything beyond plain answers from one endpoint happened: a fallback, a hop, a
    /// wait for a slot, or answers from several endpoints.
    pub fn is_notable(&self) -> bool {
        self.fallback_answers > 0
            || self.hops > 0
            || !self.queue_wait.is_zero()
            || self.answered_by.len() > 1
    }
}

/// An agent's [`CallStats`], counted as its calls go.
#[derive(Debug, Default)]
pub(crate) struct CallCounter(Mutex<CallStats>);

impl CallCounter {
    pub(crate) fn snapshot(&self) -> CallStats {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn count(&self, change: impl FnOnce(&mut CallStats)) {
        change(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }
}
