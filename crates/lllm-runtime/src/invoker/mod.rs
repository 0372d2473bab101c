//! Invokers: what sends a model call and brings its answer back.

mod build;
mod dry_run;
mod error;
mod openai;
mod service;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lllm_core::{Message, MessageLog, ModelArgs, RequestFields};

pub use build::{build_invoker, InvokerConfig, InvokerKind};
pub use dry_run::{DryRunInvoker, RequestSink, DRY_RUN_ANSWER};
pub use error::InvokeError;
pub use openai::OpenAiInvoker;
pub use wire::{parse_response, PreparedRequest, ServerDefaults};

/// Per-request timeout when `model_args.timeout` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One model call, as an agent asks for it.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Model name as configured; a provider prefix such as `hosted_vllm/` is stripped when sent.
    pub model: String,
    /// The dialog's messages (shared with the dialog, not copied).
    pub messages: MessageLog,
    /// The agent's model arguments.
    pub model_args: Arc<ModelArgs>,
    /// Header and body fields from the inference hints, to be merged under the user's explicit ones.
    pub hint_fields: RequestFields,
}

/// The answer to one model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant message, with usage and finish reason when the server sent them.
    pub message: Message,
    /// The server's id for the completion, if any.
    pub id: Option<String>,
}

/// Sends model calls. Implementations must be cheap to share between agents and tasks.
///
/// An invoker makes exactly one attempt per call: retries, backoff and timeouts are the agent's, so that
/// every attempt of one respond carries the same dialog's hints.
#[async_trait]
pub trait Invoker: Send + Sync + std::fmt::Debug {
    /// Sends `request` once.
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError>;
}

#[async_trait]
impl<T: Invoker + ?Sized> Invoker for Arc<T> {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        (**self).invoke(request).await
    }
}
