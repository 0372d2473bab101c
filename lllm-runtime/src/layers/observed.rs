//! Telling the run's observer about each answered model call, as a layer.

use std::time::Instant;

use async_trait::async_trait;

use crate::events::{ModelCall, RunEvent, RunObserver};
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker};

/// Reports every answered attempt as a [`RunEvent::ModelCall`] (when the run has an observer), with
/// the hints the request carried as sent and what the server said of its tokens and worker.
#[derive(Debug)]
pub(crate) struct Observed<I> {
    inner: I,
    agent: String,
    observer: Option<RunObserver>,
}

impl<I> Observed<I> {
    pub(crate) fn new(inner: I, agent: &str, observer: Option<RunObserver>) -> Self {
        Observed {
            inner,
            agent: agent.to_owned(),
            observer,
        }
    }

    fn report(&self, request: &ChatRequest, response: &ChatResponse, sent: Instant) {
        let Some(observer) = &self.observer else {
            return;
        };
        let hints = request.sent_hints();
        let (session, parent_session) = request.recorded_sessions();
        observer.notify(&RunEvent::ModelCall(Box::new(ModelCall {
            agent: self.agent.clone(),
            alias: request.dialog_alias.clone(),
            dialog: request.dialog,
            parent_dialog: request.parent_dialog,
            session,
            parent_session,
            priority: hints.wire.priority,
            tier: hints
                .wire
                .strict_priority
                .unwrap_or(u64::from(request.urgency.tier)),
            usage: response.message.usage,
            worker: response.worker.clone(),
            hop: request.hop,
            window: request.window,
            queue_wait: request.queue_wait(),
            took: sent.elapsed(),
            at: std::time::SystemTime::now(),
        })));
    }
}

#[async_trait]
impl<I: Invoker> Invoker for Observed<I> {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let sent = Instant::now();
        let response = self.inner.invoke(request).await?;
        self.report(request, &response, sent);
        Ok(response)
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let sent = Instant::now();
        let response = self.inner.invoke_stream(request, on_delta).await?;
        self.report(request, &response, sent);
        Ok(response)
    }
}
