//! The one trait of the layers, and what a call through them gives back.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::budget::LimitReached;
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker};
use crate::journal::JournalError;

/// Where streamed pieces go, as [`Invoker::invoke_stream`] takes them.
pub(crate) type DeltaSink<'a> = dyn for<'d> FnMut(Delta<'d>) + Send + 'a;

/// A request answered through the layers: the answer, and what the attempt that got it went
/// through.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) response: ChatResponse,
    /// How long that attempt waited for a slot of its endpoint (`max_in_flight`).
    pub(crate) queue_wait: Duration,
}

impl Reply {
    pub(crate) fn new(response: ChatResponse) -> Self {
        Reply {
            response,
            queue_wait: Duration::ZERO,
        }
    }
}

/// Why a call through the layers has no answer: the agent turns it into its own error kind.
#[derive(Debug)]
pub(crate) enum CallError {
    /// A limit of the run forbids the request.
    Limit(LimitReached),
    /// The journal cannot record the answer.
    Journal(JournalError),
    /// The run pauses for a confirmation (a call of `tool`): nothing more is sent.
    Paused {
        /// The tool whose call paused the run.
        tool: String,
    },
    /// The server did not answer, after `attempts` requests.
    Invoke {
        /// Requests sent.
        attempts: u32,
        /// The last failure.
        error: InvokeError,
        /// How long the last attempt waited for a slot of its endpoint.
        queue_wait: Duration,
    },
}

impl CallError {
    /// One attempt's failure to get an answer.
    pub(crate) fn invoke(error: InvokeError) -> Self {
        CallError::Invoke {
            attempts: 1,
            error,
            queue_wait: Duration::ZERO,
        }
    }
}

/// One model call through whatever layers there are: answered or failed once, streaming to `sink`
/// when there is one.
#[async_trait]
pub(crate) trait Service: Send + Sync + std::fmt::Debug {
    /// Answers `request`, streaming to `sink` when there is one.
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError>;
}

/// The bottom of the layers: one attempt, through the invoker.
#[async_trait]
impl<I: Invoker + ?Sized> Service for Arc<I> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        let result = match sink {
            Some(sink) => self.invoke_stream(request, sink).await,
            None => self.invoke(request).await,
        };
        result.map(Reply::new).map_err(CallError::invoke)
    }
}
