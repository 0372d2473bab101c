//! An invoker that answers from a script and records what it was asked.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use lllm_core::Message;

use crate::invoker::{
    ChatRequest, ChatResponse, InvokeError, Invoker, PreparedRequest, ServerDefaults,
};

/// One call the scripted invoker received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecordedCall {
    /// The messages sent.
    pub messages: Vec<Message>,
    /// The request as it would go on the wire: headers (hints merged under `extra_headers`) and body.
    pub request: PreparedRequest,
}

/// Answers each call with the next scripted result and records the call.
///
/// ```
/// use lllm_runtime::testing::ScriptedInvoker;
/// let invoker = ScriptedInvoker::new().reply("first").reply("second");
/// assert_eq!(invoker.calls().len(), 0);
/// ```
#[derive(Debug, Default)]
pub struct ScriptedInvoker {
    script: Mutex<VecDeque<Result<ChatResponse, InvokeError>>>,
    calls: Mutex<Vec<RecordedCall>>,
}

impl ScriptedInvoker {
    /// An invoker with an empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an answer with this text.
    pub fn reply(self, text: impl Into<String>) -> Self {
        self.message(Message::assistant(text))
    }

    /// Adds an answer with this message.
    pub fn message(self, message: Message) -> Self {
        self.push(Ok(ChatResponse::new(message)))
    }

    /// Adds a failure.
    pub fn fail(self, error: InvokeError) -> Self {
        self.push(Err(error))
    }

    fn push(self, result: Result<ChatResponse, InvokeError>) -> Self {
        lock(&self.script).push_back(result);
        self
    }

    /// Every call received so far.
    pub fn calls(&self) -> Vec<RecordedCall> {
        lock(&self.calls).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[async_trait]
impl Invoker for ScriptedInvoker {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let defaults = ServerDefaults {
            api_base: Some("http://127.0.0.1:9/v1".into()),
            api_key: None,
        };
        let prepared = PreparedRequest::build(request, &defaults)?;
        let number = {
            let mut calls = lock(&self.calls);
            calls.push(RecordedCall {
                messages: request.messages.to_vec(),
                request: prepared,
            });
            calls.len()
        };
        lock(&self.script).pop_front().unwrap_or_else(|| {
            Err(InvokeError::InvalidResponse {
                problem: format!("the scripted invoker has no answer left for call {number}"),
            })
        })
    }
}
