//! The per-request timeout, as a layer.

use async_trait::async_trait;

use super::{CallError, DeltaSink, Reply, Service};
use crate::invoker::{ChatRequest, InvokeError, DEFAULT_TIMEOUT};

/// Ends an attempt that has no answer within the request's `model_args.timeout` (else
/// [`DEFAULT_TIMEOUT`]) with [`InvokeError::Timeout`]; once the process is halted, sends nothing
/// ([`InvokeError::Halted`]). Dropping the attempt cancels it.
#[derive(Debug)]
pub(crate) struct TimeLimited<S> {
    inner: S,
}

impl<S> TimeLimited<S> {
    pub(crate) fn new(inner: S) -> Self {
        TimeLimited { inner }
    }
}

#[async_trait]
impl<S: Service> Service for TimeLimited<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        if crate::halt::halted() {
            return Err(CallError::invoke(InvokeError::Halted));
        }
        let limit = request
            .model_args
            .endpoint
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT);
        tokio::time::timeout(limit, self.inner.send(request, sink))
            .await
            .unwrap_or(Err(CallError::invoke(InvokeError::Timeout(limit))))
    }
}
