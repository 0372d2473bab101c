//! Recording each attempt of a model call, as a layer: its `chat` span, and its answer in the
//! run's sinks (trace, observer, call counts).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tracing::Instrument;

use super::sinks::Sink;
use super::{CallError, DeltaSink, Reply, Service};
use crate::invoker::{ChatRequest, Delta};
use crate::telemetry::{self, AgentFacts};
use crate::trace::Answered;

/// Makes a `chat` span of every attempt, as `facts`' agent, and shows every sink each attempt:
/// an answered one timed from when it was sent (after its wait for a slot), with the time to its
/// first streamed piece; a failed one with its wait.
#[derive(Debug)]
pub(crate) struct Recorded<S> {
    inner: S,
    facts: AgentFacts,
    sinks: Vec<Arc<dyn Sink>>,
}

impl<S> Recorded<S> {
    pub(crate) fn new(inner: S, facts: AgentFacts, sinks: Vec<Arc<dyn Sink>>) -> Self {
        Recorded {
            inner,
            facts,
            sinks,
        }
    }
}

#[async_trait]
impl<S: Service> Service for Recorded<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        let span = telemetry::chat_span(&self.facts, request, request.notes.retry + 1);
        let started = Instant::now();
        let mut first_piece = None;
        let result = match sink {
            Some(sink) => {
                let mut watch = |delta: Delta<'_>| {
                    first_piece.get_or_insert_with(Instant::now);
                    sink(delta);
                };
                let sent = self.inner.send(request, Some(&mut watch));
                sent.instrument(span.clone()).await
            }
            None => {
                self.inner
                    .send(request, None)
                    .instrument(span.clone())
                    .await
            }
        };
        match &result {
            Ok(reply) => {
                telemetry::record_response(&span, &reply.response);
                let answered = Answered {
                    agent: &self.facts.agent,
                    request,
                    response: &reply.response,
                    sent: started + reply.queue_wait,
                    first_piece,
                    queue_wait: reply.queue_wait,
                };
                self.sinks.iter().for_each(|s| s.answered(&answered));
            }
            Err(CallError::Invoke {
                error, queue_wait, ..
            }) => {
                telemetry::record_invoke_error(&span, error);
                self.sinks
                    .iter()
                    .for_each(|s| s.failed(request, *queue_wait));
            }
            Err(_) => {}
        }
        result
    }
}
