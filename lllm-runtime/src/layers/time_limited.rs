//! The per-request timeout, as a layer.

use async_trait::async_trait;

use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker, DEFAULT_TIMEOUT};

/// Ends an attempt that has no answer within the request's `model_args.timeout` (else
/// [`DEFAULT_TIMEOUT`]) with [`InvokeError::Timeout`]. Dropping the attempt cancels it.
#[derive(Debug)]
pub(crate) struct TimeLimited<I> {
    inner: I,
}

impl<I> TimeLimited<I> {
    pub(crate) fn new(inner: I) -> Self {
        TimeLimited { inner }
    }
}

#[async_trait]
impl<I: Invoker> Invoker for TimeLimited<I> {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        if crate::halt::halted() {
            return Err(InvokeError::Halted);
        }
        let limit = request
            .model_args
            .endpoint
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT);
        tokio::time::timeout(limit, self.inner.invoke(request))
            .await
            .unwrap_or(Err(InvokeError::Timeout(limit)))
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        if crate::halt::halted() {
            return Err(InvokeError::Halted);
        }
        let limit = request
            .model_args
            .endpoint
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT);
        tokio::time::timeout(limit, self.inner.invoke_stream(request, on_delta))
            .await
            .unwrap_or(Err(InvokeError::Timeout(limit)))
    }
}
