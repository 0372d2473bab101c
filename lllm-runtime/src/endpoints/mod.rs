//! What a group of runs knows about each endpoint it sends model calls to: its circuit breaker
//! and its admission gate (`model_args.max_in_flight`), as one value ([`Endpoints`]) that the
//! engine owns and hands down. Shared by every agent, fork, batch item and served run of the
//! engine, so that a limit bounds them all and a failing server is skipped by everyone, not per
//! component.

mod breaker;
mod gate;
mod key;
mod stats;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) use breaker::{Admit, Breaker};
pub(crate) use gate::{Gate, Slot};
use key::EndpointKey;
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

/// What a group of runs knows about the endpoints it sends to: each one's circuit breaker and
/// admission gate (`model_args.max_in_flight`), one per endpoint whatever the spelling of its URL.
///
/// An [`Engine`](crate::Engine) owns one ([`Engine::new`](crate::Engine::new) makes it, clones
/// share it) and hands it to every run through the [`RunContext`](crate::RunContext): a limit
/// bounds all the engine's runs together, and a failing server is skipped by all of them; another
/// engine in the same process keeps its own. Agents built without an engine share
/// [`Endpoints::shared`], the process's. Clones share the state.
#[derive(Debug, Clone, Default)]
pub struct Endpoints(Arc<Mutex<Known>>);

/// The endpoints known, and the key of each `api_base` text seen: every request looks its
/// endpoint up, and normalizing the text (a URL parse) each time was a tenth of what `lllm run`
/// spent per turn beyond the bare HTTP client (callgrind, BENCHMARKS.md's floor section).
#[derive(Debug, Default)]
struct Known {
    endpoints: HashMap<EndpointKey, Arc<Endpoint>>,
    keys: HashMap<String, EndpointKey>,
}

impl Known {
    /// The key of `api_base`, normalized once per text.
    fn key(&mut self, api_base: Option<&str>) -> EndpointKey {
        let Some(text) = api_base else {
            return EndpointKey::of(None);
        };
        if let Some(key) = self.keys.get(text) {
            return key.clone();
        }
        let key = EndpointKey::of(Some(text));
        // Bounded like the endpoints: a hostile tactic naming endless URLs forgets the spellings.
        if self.keys.len() >= MAX_ENDPOINTS {
            self.keys.clear();
        }
        self.keys.insert(text.to_owned(), key.clone());
        key
    }
}

impl Endpoints {
    /// State of its own: no breaker opened and no slot taken by anyone else.
    pub fn new() -> Self {
        Self::default()
    }

    /// The state shared by everything in the process that was given no other (agents and teams
    /// built alone, through a [`RunContext`](crate::RunContext) made by hand).
    pub fn shared() -> Self {
        static SHARED: OnceLock<Endpoints> = OnceLock::new();
        SHARED.get_or_init(Endpoints::new).clone()
    }

    /// The state of the endpoint at `api_base` (`None`: the default server), shared by every
    /// spelling of that URL ([`EndpointKey`]).
    pub(crate) fn endpoint(&self, api_base: Option<&str>) -> Arc<Endpoint> {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = known.key(api_base);
        let all = &mut known.endpoints;
        if let Some(found) = all.get(&key) {
            return found.clone();
        }
        if all.len() >= MAX_ENDPOINTS {
            all.retain(|_, endpoint| Arc::strong_count(endpoint) > 1);
        }
        let made = Arc::new(Endpoint::default());
        if all.len() < MAX_ENDPOINTS {
            all.insert(key, made.clone());
        }
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_finds_one_endpoint_each_time_it_is_asked() {
        let endpoints = Endpoints::new();
        let first = endpoints.endpoint(Some("http://127.0.0.1:8000/v1"));
        // Asked twice per spelling: the second answer comes from the remembered key.
        for _ in 0..2 {
            for spelling in ["http://127.0.0.1:8000/v1", "HTTP://127.0.0.1:8000/v1/"] {
                assert!(Arc::ptr_eq(&endpoints.endpoint(Some(spelling)), &first));
            }
            let other = endpoints.endpoint(Some("http://127.0.0.1:8001/v1"));
            assert!(!Arc::ptr_eq(&other, &first));
            assert!(!Arc::ptr_eq(&endpoints.endpoint(None), &first));
        }
        assert!(!Arc::ptr_eq(
            &Endpoints::new().endpoint(Some("http://127.0.0.1:8000/v1")),
            &first
        ));
    }
}
