//! The request graph of a run, as the agentic trace format records it: which earlier requests each
//! request waited for, and why.
//!
//! - the previous request of the same dialog (`sequence`);
//! - for a fork's first request, the request its parent had last answered when the fork was made
//!   (`spawn`);
//! - for the first request of a step, the last requests of the dialogs the tactic waited for before
//!   starting it: every branch of a parallel step, or the step before (`join`).
//!
//! Every edge is triggered by completion: lllm sends nothing before what it waits for has been
//! answered. The delay of all edges of a request is the time from the last of them to the request
//! being sent (tools running, the client's own work), so a replay that answers faster keeps only
//! that gap.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use lllm_core::{Dependency, DialogId, Relation, Trigger};

/// An answered request.
#[derive(Debug, Clone)]
struct Done {
    id: String,
    answered: Instant,
}

/// What the graph says about one request.
pub(super) struct Placed {
    pub(super) request_id: String,
    pub(super) dependencies: Vec<Dependency>,
}

/// The run's requests so far.
#[derive(Debug, Default)]
pub(super) struct Graph {
    requests: u64,
    /// The last answered request of each dialog.
    last: HashMap<DialogId, Done>,
    /// Forks not yet sent: what their parent had last answered when they were made.
    forks: HashMap<DialogId, Done>,
    /// Dialogs whose next request waits for other dialogs' work.
    waits: HashMap<DialogId, Vec<Done>>,
}

impl Graph {
    /// `child` was forked from `parent`.
    pub(super) fn forked(&mut self, parent: DialogId, child: DialogId) {
        if let Some(done) = self.last.get(&parent).cloned() {
            self.forks.insert(child, done);
        }
    }

    /// The next request of `dialog` waits for the last requests of `on` (its own dialog aside).
    pub(super) fn waits(&mut self, dialog: DialogId, on: &[DialogId]) {
        let done: Vec<Done> = on
            .iter()
            .filter(|other| **other != dialog)
            .filter_map(|other| self.last.get(other).cloned())
            .collect();
        if !done.is_empty() {
            self.waits.insert(dialog, done);
        }
    }

    /// Places an answered request of `dialog` (none: a request of no dialog, which waits for
    /// nothing), sent at `sent` and answered at `answered`.
    pub(super) fn place(
        &mut self,
        dialog: Option<DialogId>,
        sent: Instant,
        answered: Instant,
    ) -> Placed {
        self.requests += 1;
        let request_id = format!("r{}", self.requests);
        let Some(dialog) = dialog else {
            return Placed {
                request_id,
                dependencies: Vec::new(),
            };
        };
        let mut edges: Vec<(Done, Relation)> = Vec::new();
        match self.last.get(&dialog) {
            Some(previous) => edges.push((previous.clone(), Relation::Sequence)),
            None => {
                if let Some(parent) = self.forks.remove(&dialog) {
                    edges.push((parent, Relation::Spawn));
                }
            }
        }
        for done in self.waits.remove(&dialog).unwrap_or_default() {
            if !edges.iter().any(|(e, _)| e.id == done.id) {
                edges.push((done, Relation::Join));
            }
        }
        let latest = edges.iter().map(|(done, _)| done.answered).max();
        let delay = latest.map_or(Duration::ZERO, |t| sent.saturating_duration_since(t));
        let dependencies = edges
            .into_iter()
            .map(|(done, relation)| Dependency {
                request_id: done.id,
                trigger: Trigger::Completion,
                delay_ms: millis(delay),
                relation,
            })
            .collect();
        self.last.insert(
            dialog,
            Done {
                id: request_id.clone(),
                answered,
            },
        );
        Placed {
            request_id,
            dependencies,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<DialogId> {
        (0..n).map(|_| DialogId::new()).collect()
    }

    fn edges(placed: &Placed) -> Vec<(&str, Relation)> {
        placed
            .dependencies
            .iter()
            .map(|d| (d.request_id.as_str(), d.relation))
            .collect()
    }

    #[test]
    fn turns_forks_and_joins_get_their_edges() {
        let d = ids(3);
        let (main, a, b) = (d[0], d[1], d[2]);
        let mut graph = Graph::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let first = graph.place(Some(main), at(0), at(10));
        assert!(first.dependencies.is_empty());
        let second = graph.place(Some(main), at(15), at(30));
        assert_eq!(edges(&second), [("r1", Relation::Sequence)]);
        assert_eq!(second.dependencies[0].delay_ms, 5);
        graph.forked(main, a);
        graph.forked(main, b);
        let branch_a = graph.place(Some(a), at(32), at(40));
        let branch_b = graph.place(Some(b), at(33), at(60));
        assert_eq!(edges(&branch_a), [("r2", Relation::Spawn)]);
        assert_eq!(edges(&branch_b), [("r2", Relation::Spawn)]);
        graph.waits(main, &[a, b]);
        let merge = graph.place(Some(main), at(62), at(70));
        assert_eq!(
            edges(&merge),
            [
                ("r2", Relation::Sequence),
                ("r3", Relation::Join),
                ("r4", Relation::Join)
            ]
        );
        // The delay counts from the last thing waited for (branch b, answered at 60).
        assert!(merge.dependencies.iter().all(|d| d.delay_ms == 2));
        // A fork's later requests follow their own dialog only.
        let again = graph.place(Some(a), at(71), at(80));
        assert_eq!(edges(&again), [("r3", Relation::Sequence)]);
    }

    #[test]
    fn a_wait_on_the_same_request_is_one_edge_and_an_unknown_dialog_none() {
        let d = ids(3);
        let mut graph = Graph::default();
        let now = Instant::now();
        graph.place(Some(d[0]), now, now);
        graph.forked(d[0], d[1]);
        graph.waits(d[1], &[d[0], d[2]]);
        let fork = graph.place(Some(d[1]), now, now);
        assert_eq!(edges(&fork), [("r1", Relation::Spawn)]);
        assert!(graph.place(None, now, now).dependencies.is_empty());
    }
}
