//! What waits for a respond's requests, for `priority: auto`.

use std::sync::Arc;

use lllm_core::Demand;

/// Tells a respond's requests what waits for their answers (see [`Demand`]); read again before
/// each request, so a branch that becomes the last one running sends its later requests raised.
///
/// Only hints with `priority: auto` use it; a written priority is sent as written.
#[derive(Clone)]
pub struct DemandSource(Arc<dyn Fn() -> Demand + Send + Sync>);

impl DemandSource {
    /// A source that computes the demand each time a request is built.
    pub fn new(compute: impl Fn() -> Demand + Send + Sync + 'static) -> Self {
        DemandSource(Arc::new(compute))
    }

    /// A fixed demand.
    pub fn fixed(demand: Demand) -> Self {
        DemandSource::new(move || demand)
    }

    /// The demand now.
    pub fn get(&self) -> Demand {
        (self.0)()
    }
}

impl From<Demand> for DemandSource {
    fn from(demand: Demand) -> Self {
        DemandSource::fixed(demand)
    }
}

impl std::fmt::Debug for DemandSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DemandSource").field(&self.get()).finish()
    }
}
