//! An endpoint's shared state, as a layer: each attempt waits for a slot of its endpoint
//! (`model_args.max_in_flight`), holds it for the HTTP request only, and tells the endpoint's
//! breaker how it went.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tracing::Instrument;

use super::{CallError, DeltaSink, Reply, Service};
use crate::endpoints::{Endpoint, Endpoints, Slot};
use crate::invoker::{ChatRequest, InvokeError};
use crate::telemetry;

/// Waits for a slot of the request's endpoint before sending, when its arguments set
/// `max_in_flight`, in a `queue` span; the wait comes back with the reply (or the failure). A
/// failure of the endpoint (overloaded, unreachable, too slow, rate-limited) counts towards its
/// circuit; an answer, or a refusal of the request (4xx), shows that the endpoint is up.
#[derive(Debug)]
pub(crate) struct Admitted<S> {
    inner: S,
    endpoints: Endpoints,
}

impl<S> Admitted<S> {
    pub(crate) fn new(inner: S, endpoints: Endpoints) -> Self {
        Admitted { inner, endpoints }
    }
}

/// A slot of `endpoint` for `request`, once one is free, and how long that took (none and zero
/// without `max_in_flight`).
async fn admit(request: &ChatRequest, endpoint: &Endpoint) -> (Option<Slot>, Duration) {
    let Some(limit) = request.model_args.endpoint.max_in_flight else {
        return (None, Duration::ZERO);
    };
    let span = telemetry::queue_span(request, limit);
    let started = Instant::now();
    let gate = endpoint.gate.enter(request.notes.urgency, limit);
    let slot = gate.instrument(span.clone()).await;
    let waited = started.elapsed();
    telemetry::record_queue_wait(&span, waited);
    (Some(slot), waited)
}

#[async_trait]
impl<S: Service> Service for Admitted<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        let endpoint = (self.endpoints).endpoint(request.model_args.endpoint.api_base.as_deref());
        let (slot, waited) = admit(request, &endpoint).await;
        let result = self.inner.send(request, sink).await;
        drop(slot);
        match result {
            Ok(reply) => {
                endpoint.breaker.answered();
                Ok(Reply {
                    queue_wait: waited,
                    ..reply
                })
            }
            Err(CallError::Invoke {
                attempts, error, ..
            }) => {
                match &error {
                    e if e.is_retryable() => endpoint.breaker.failed(e.retry_after()),
                    InvokeError::Http { .. } => endpoint.breaker.answered(),
                    _ => {}
                }
                let queue_wait = waited;
                Err(CallError::Invoke {
                    attempts,
                    error,
                    queue_wait,
                })
            }
            Err(other) => Err(other),
        }
    }
}
