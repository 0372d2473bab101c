//! Admission per endpoint (`model_args.max_in_flight`), as a layer: each attempt waits for a slot
//! of its endpoint, shared by the runs that share its [`Endpoints`], and holds it for the HTTP
//! request only.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tracing::Instrument;

use crate::endpoints::{Endpoints, Slot};
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker};
use crate::telemetry;

/// Waits for a slot of the request's endpoint before sending, when its arguments set
/// `max_in_flight`; records the wait on the request (for the trace and the usage) and in a
/// `queue` span.
#[derive(Debug)]
pub(crate) struct Admitted<I> {
    inner: I,
    endpoints: Endpoints,
}

impl<I> Admitted<I> {
    pub(crate) fn new(inner: I, endpoints: Endpoints) -> Self {
        Admitted { inner, endpoints }
    }
}

/// A slot of `request`'s endpoint, once one is free (none without `max_in_flight`).
async fn admit(request: &ChatRequest, endpoints: &Endpoints) -> Option<Slot> {
    request.set_queue_wait(Duration::ZERO);
    let limit = request.model_args.endpoint.max_in_flight?;
    let endpoint = endpoints.endpoint(request.model_args.endpoint.api_base.as_deref());
    let span = telemetry::queue_span(request, limit);
    let started = Instant::now();
    let slot = endpoint
        .gate
        .enter(request.urgency, limit)
        .instrument(span.clone())
        .await;
    let waited = started.elapsed();
    telemetry::record_queue_wait(&span, waited);
    request.set_queue_wait(waited);
    Some(slot)
}

#[async_trait]
impl<I: Invoker> Invoker for Admitted<I> {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let _slot = admit(request, &self.endpoints).await;
        self.inner.invoke(request).await
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let _slot = admit(request, &self.endpoints).await;
        self.inner.invoke_stream(request, on_delta).await
    }
}
