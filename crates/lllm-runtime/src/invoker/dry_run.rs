//! An invoker that sends nothing: it shows each request it would send and answers with a placeholder.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::Message;

use super::{ChatRequest, ChatResponse, InvokeError, Invoker, OpenAiInvoker, PreparedRequest};

/// The text of every dry-run answer.
pub const DRY_RUN_ANSWER: &str = "[dry run: no server was called]";

/// Receives each request a dry run would send.
pub trait RequestSink: Send + Sync {
    /// Called once per request, in order.
    fn record(&self, request: &PreparedRequest);
}

impl<F: Fn(&PreparedRequest) + Send + Sync> RequestSink for F {
    fn record(&self, request: &PreparedRequest) {
        self(request)
    }
}

/// Prepares requests exactly as [`OpenAiInvoker`] would, hands them to a sink, and answers
/// [`DRY_RUN_ANSWER`] without contacting any server.
#[derive(Clone)]
pub struct DryRunInvoker {
    inner: OpenAiInvoker,
    sink: Arc<dyn RequestSink>,
}

impl std::fmt::Debug for DryRunInvoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DryRunInvoker").finish_non_exhaustive()
    }
}

impl DryRunInvoker {
    /// A dry-run invoker preparing requests like `inner` and reporting them to `sink`.
    pub fn new(inner: OpenAiInvoker, sink: impl RequestSink + 'static) -> Self {
        DryRunInvoker {
            inner,
            sink: Arc::new(sink),
        }
    }
}

#[async_trait]
impl Invoker for DryRunInvoker {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let prepared = self.inner.prepare(request)?;
        self.sink.record(&prepared);
        Ok(ChatResponse {
            message: Message::assistant(DRY_RUN_ANSWER),
            id: None,
        })
    }
}
