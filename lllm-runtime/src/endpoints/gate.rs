//! Admission to one endpoint (`model_args.max_in_flight`): at most N requests in flight from all
//! the runs that share its [`Endpoints`](super::Endpoints); the others wait, and a freed slot goes to the most urgent waiting request, the
//! earliest among equals. A slot is held for one HTTP request only (never across a tool call or a
//! child dialog), so nested fan-out cannot deadlock on it.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::Urgency;

#[derive(Debug)]
struct Waiter {
    urgency: Urgency,
    /// Arrival order: lower came first.
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Waiter {}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiter {
    /// The heap's greatest is released first: the most urgent, then the earliest.
    fn cmp(&self, other: &Self) -> Ordering {
        self.urgency
            .cmp(&other.urgency)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

#[derive(Debug, Default)]
struct State {
    /// The smallest `max_in_flight` any request named for this endpoint (0: none yet).
    limit: u32,
    in_flight: u32,
    waiting: BinaryHeap<Waiter>,
    arrivals: u64,
}

/// One endpoint's admission.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
}

/// A slot in flight; dropping it frees the slot for the next waiting request.
#[derive(Debug)]
pub(crate) struct Slot {
    gate: Arc<Gate>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// A request waiting for a slot. Dropped before it got one (its call was cancelled or timed out),
/// it leaves the queue; dropped just after a slot was handed to it, it hands the slot on.
struct Waiting {
    gate: Arc<Gate>,
    woken: oneshot::Receiver<()>,
    admitted: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        self.woken.close();
        if self.woken.try_recv().is_ok() {
            self.gate.release();
        }
    }
}

impl Gate {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a slot under `limit` (the smallest limit any caller named for this endpoint wins).
    pub(crate) async fn enter(self: &Arc<Self>, urgency: Urgency, limit: u32) -> Slot {
        let woken = {
            let mut state = self.state();
            state.limit = match state.limit {
                0 => limit,
                known => known.min(limit),
            };
            if state.in_flight < state.limit && state.waiting.is_empty() {
                state.in_flight += 1;
                return Slot { gate: self.clone() };
            }
            let (wake, woken) = oneshot::channel();
            let seq = state.arrivals;
            state.arrivals += 1;
            state.waiting.push(Waiter { urgency, seq, wake });
            woken
        };
        let mut waiting = Waiting {
            gate: self.clone(),
            woken,
            admitted: false,
        };
        // The sender lives in the queue until it is used: an error means the gate is gone, which
        // cannot happen while `self` is held; either way the request goes ahead.
        let _ = (&mut waiting.woken).await;
        waiting.admitted = true;
        Slot { gate: self.clone() }
    }

    /// Frees a slot and hands free slots to the most urgent waiting requests still waiting.
    fn release(&self) {
        let mut state = self.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        while state.in_flight < state.limit {
            let Some(next) = state.waiting.pop() else {
                break;
            };
            if next.wake.send(()).is_ok() {
                state.in_flight += 1;
            }
        }
    }

    /// Requests in flight and waiting now.
    #[cfg(test)]
    fn counts(&self) -> (u32, usize) {
        let state = self.state();
        (state.in_flight, state.waiting.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn urgency(priority: i64) -> Urgency {
        Urgency { tier: 1, priority }
    }

    #[tokio::test]
    async fn frees_slots_to_the_most_urgent_then_the_earliest() {
        let gate = Arc::new(Gate::default());
        let first = gate.enter(urgency(0), 1).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, priority) in [("a", 1), ("b", 5), ("c", 1), ("d", 5)] {
            let gate = gate.clone();
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                let _slot = gate.enter(urgency(priority), 1).await;
                order.lock().expect("lock").push(name);
            }));
            // Arrive in this order.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(gate.counts(), (1, 4));
        drop(first);
        for task in tasks {
            task.await.expect("task");
        }
        assert_eq!(*order.lock().expect("lock"), ["b", "d", "a", "c"]);
        assert_eq!(gate.counts(), (0, 0));
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_no_slot_behind() {
        let gate = Arc::new(Gate::default());
        let first = gate.enter(urgency(0), 1).await;
        let gave_up =
            tokio::time::timeout(Duration::from_millis(20), gate.enter(urgency(9), 1)).await;
        assert!(gave_up.is_err(), "no slot while the first is held");
        drop(first);
        assert_eq!(gate.counts(), (0, 0));
        let again = tokio::time::timeout(Duration::from_millis(200), gate.enter(urgency(0), 1))
            .await
            .expect("the freed slot is there");
        drop(again);
        assert_eq!(gate.counts(), (0, 0));
    }

    #[tokio::test]
    async fn a_slot_handed_to_a_waiter_dropped_at_once_goes_on() {
        let gate = Arc::new(Gate::default());
        let first = gate.enter(urgency(0), 1).await;
        let gate2 = gate.clone();
        let waiting = tokio::spawn(async move { gate2.enter(urgency(0), 1).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Hand the slot over, and abort the waiter before it runs again.
        drop(first);
        waiting.abort();
        let _ = waiting.await;
        assert_eq!(gate.counts(), (0, 0), "the slot came back");
    }
}
