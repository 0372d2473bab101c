//! Writing each answered attempt to the run's trace, as a layer.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker};
use crate::trace::{Answered, TraceRecorder};

/// Records every answered attempt in a [`TraceRecorder`] (when there is one), timed from the attempt's
/// start; the hints recorded are those the request carries, as sent.
#[derive(Debug)]
pub(crate) struct Traced<I> {
    inner: I,
    agent: String,
    recorder: Option<Arc<TraceRecorder>>,
}

impl<I> Traced<I> {
    pub(crate) fn new(inner: I, agent: &str, recorder: Option<Arc<TraceRecorder>>) -> Self {
        Traced {
            inner,
            agent: agent.to_owned(),
            recorder,
        }
    }

    fn record(
        &self,
        request: &ChatRequest,
        response: &ChatResponse,
        sent: Instant,
        first_piece: Option<Instant>,
    ) {
        if let Some(recorder) = &self.recorder {
            recorder.record(Answered {
                agent: &self.agent,
                request,
                response,
                sent,
                first_piece,
            });
        }
    }
}

#[async_trait]
impl<I: Invoker> Invoker for Traced<I> {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let sent = Instant::now();
        let response = self.inner.invoke(request).await?;
        self.record(request, &response, sent, None);
        Ok(response)
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let sent = Instant::now();
        let mut first_piece = None;
        let mut watch = |delta: Delta<'_>| {
            first_piece.get_or_insert_with(Instant::now);
            on_delta(delta);
        };
        let response = self.inner.invoke_stream(request, &mut watch).await?;
        self.record(request, &response, sent, first_piece);
        Ok(response)
    }
}
