//! What the whole process knows about each endpoint it sends model calls to: its circuit breaker
//! and its admission gate (`model_args.max_in_flight`). Shared by every agent, fork, batch item and
//! served run of the process, so that a limit bounds the process and a failing server is skipped by
//! everyone, not per component.

mod breaker;
mod gate;
mod route;
mod stats;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) use breaker::{Admit, Breaker};
pub(crate) use gate::{Gate, Slot};
pub(crate) use route::{moves_on, Route};
pub(crate) use stats::CallCounter;
pub use stats::CallStats;

/// How urgent a waiting request is: a higher tier first, then a higher priority, then the one that
/// came first. From the dialog's `priority: auto` weight and the run's class, else the written
/// priority; zero when neither is set (first come, first served).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct Urgency {
    /// The run's class (`RunClass::tier`: interactive above batch) under `priority: auto`.
    pub tier: u32,
    /// The computed weight under `priority: auto`, else the written priority.
    pub priority: i64,
}

/// One endpoint's shared state.
#[derive(Debug, Default)]
pub(crate) struct Endpoint {
    pub(crate) breaker: Breaker,
    pub(crate) gate: Arc<Gate>,
}

/// Most endpoints remembered: a process that sends to more (a hostile tactic naming endless URLs)
/// forgets those no request holds now (their breaker history, never a slot in use); past that,
/// a new endpoint gets state of its own that is not kept.
const MAX_ENDPOINTS: usize = 4096;

/// The state of the endpoint at `api_base` (`None`: the default server), shared process-wide.
pub(crate) fn endpoint(api_base: Option<&str>) -> Arc<Endpoint> {
    static ALL: OnceLock<Mutex<HashMap<String, Arc<Endpoint>>>> = OnceLock::new();
    let key = api_base.unwrap_or("").trim_end_matches('/');
    let mut all = ALL
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(found) = all.get(key) {
        return found.clone();
    }
    if all.len() >= MAX_ENDPOINTS {
        all.retain(|_, endpoint| Arc::strong_count(endpoint) > 1);
    }
    let made = Arc::new(Endpoint::default());
    if all.len() < MAX_ENDPOINTS {
        all.insert(key.to_owned(), made.clone());
    }
    made
}
