//! The run's pause, as a layer.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallError, DeltaSink, Reply, Service};
use crate::invoker::ChatRequest;
use crate::pause::Pause;

/// Sends nothing once the run pauses: the call fails with [`CallError::Paused`], and the branch that
/// made it ends where a resume picks it up again.
#[derive(Debug)]
pub(crate) struct Pausable<S> {
    inner: S,
    pause: Option<Arc<Pause>>,
}

impl<S> Pausable<S> {
    pub(crate) fn new(inner: S, pause: Option<Arc<Pause>>) -> Self {
        Pausable { inner, pause }
    }
}

#[async_trait]
impl<S: Service> Service for Pausable<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        if let Some(tool) = self.pause.as_ref().and_then(|p| p.paused()) {
            return Err(CallError::Paused { tool });
        }
        self.inner.send(request, sink).await
    }
}
