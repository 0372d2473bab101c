//! The respond entry: [`Agent::respond`] for the plain case, [`Agent::respond_to`] for a respond with
//! options, awaited directly.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use lllm_core::{Message, ToolCall};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::answer::strip_fence;
use super::{Agent, AgentError, AgentErrorKind};
use crate::tools::{schema_of, Tool};

/// What happens during a respond, for callers that show progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// A piece of answer text, as it arrives.
    Text(&'a str),
    /// A piece of reasoning text, as it arrives.
    Reasoning(&'a str),
    /// The model called a tool.
    ToolCall(&'a ToolCall),
    /// A tool answered (`is_error` when the call failed; the model reads the error).
    ToolResult {
        /// The call answered.
        call: &'a ToolCall,
        /// What the model reads.
        content: &'a str,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// The sink of a streaming respond: see [`Respond::stream`].
pub type EventSink<'s> = dyn for<'e> FnMut(StreamEvent<'e>) + Send + 's;

/// Settings of one respond that differ from the agent's.
#[derive(Debug, Clone, Default)]
pub(crate) struct RespondOptions {
    pub(crate) tools: Option<Vec<Arc<dyn Tool>>>,
    pub(crate) output_schema: Option<(String, Value)>,
    pub(crate) message: Option<String>,
    pub(crate) demand: Option<super::DemandSource>,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A respond being set up: made by [`Agent::respond_to`], run by `.await`.
///
/// ```
/// # async fn demo(agent: &lllm_runtime::Agent) -> Result<(), lllm_runtime::AgentError> {
/// use lllm_runtime::agent::StreamEvent;
///
/// let mut shown = String::new();
/// let answer = agent
///     .respond_to("main")
///     .message("Summarise the plan.")
///     .stream(&mut |event| {
///         if let StreamEvent::Text(piece) = event {
///             shown.push_str(piece);
///         }
///     })
///     .await?;
/// # let _ = answer;
/// # Ok(()) }
/// ```
#[must_use = "a respond does nothing until it is awaited"]
pub struct Respond<'a> {
    agent: &'a Agent,
    alias: &'a str,
    options: RespondOptions,
    sink: Option<&'a mut EventSink<'a>>,
}

impl std::fmt::Debug for Respond<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Respond")
            .field("agent", &self.agent.name())
            .field("alias", &self.alias)
            .field("options", &self.options)
            .field("streaming", &self.sink.is_some())
            .finish()
    }
}

impl<'a> Respond<'a> {
    /// Offer these tools instead of the agent's (an empty list offers none).
    pub fn tools(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.options.tools = Some(tools);
        self
    }

    /// Receive this user message as part of the respond: it enters the dialog together with the
    /// answer, so a failed or cancelled respond leaves no unanswered message behind.
    pub fn message(mut self, text: impl Into<String>) -> Self {
        self.options.message = Some(text.into());
        self
    }

    /// Require an answer that is JSON matching `schema` (named `name` for the server), instead of the
    /// agent's output schema. The answer stays a [`Message`]; for a typed answer see
    /// [`structured`](Self::structured).
    pub fn output_schema(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.options.output_schema = Some((name.into(), schema));
        self
    }

    /// What waits for this respond's answer, for `priority: auto` (by default nothing: a lone
    /// request of the agent's [`run_class`](crate::AgentBuilder::run_class)). A
    /// [`DemandSource`](super::DemandSource) is read again before each request of the respond.
    pub fn demand(mut self, demand: impl Into<super::DemandSource>) -> Self {
        self.options.demand = Some(demand.into());
        self
    }

    /// Stream: `on_event` sees text as it arrives, tool calls and their results. Text already shown
    /// cannot be taken back, so a stream that fails midway is not retried.
    pub fn stream(mut self, on_event: &'a mut EventSink<'a>) -> Self {
        self.sink = Some(on_event);
        self
    }

    /// Answer with JSON matching `T`'s schema (from `schemars`), parsed into `T`. An answer that does
    /// not parse, match or fit `T` is shown to the model with the problem and asked again, up to
    /// [`max_answer_retries`](crate::AgentBuilder::max_answer_retries) times; failed attempts never
    /// enter the dialog.
    pub fn structured<T>(mut self) -> RespondStructured<'a, T>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        self.options.output_schema = Some((T::schema_name().into_owned(), schema_of::<T>()));
        RespondStructured {
            respond: self,
            _answer: PhantomData,
        }
    }
}

impl<'a> IntoFuture for Respond<'a> {
    type Output = Result<Message, AgentError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.agent
                .run(self.alias, self.options, self.sink, None)
                .await
        })
    }
}

/// A respond whose answer is parsed into `T`: made by [`Respond::structured`], run by `.await`.
///
/// ```
/// # async fn demo(agent: &lllm_runtime::Agent) -> Result<(), lllm_runtime::AgentError> {
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Plan {
///     steps: Vec<String>,
/// }
/// let plan: Plan = agent.respond_to("main").structured().await?;
/// # let _ = plan.steps;
/// # Ok(()) }
/// ```
#[must_use = "a respond does nothing until it is awaited"]
#[derive(Debug)]
pub struct RespondStructured<'a, T> {
    respond: Respond<'a>,
    _answer: PhantomData<fn() -> T>,
}

impl<'a, T> IntoFuture for RespondStructured<'a, T>
where
    T: DeserializeOwned + 'a,
{
    type Output = Result<T, AgentError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        let Respond {
            agent,
            alias,
            options,
            sink,
        } = self.respond;
        Box::pin(async move {
            // The type may be stricter than its schema (a number too big for a u32): check both, so a
            // failure is retried like a schema failure and never reaches the dialog.
            let fits = |value: &Value| {
                T::deserialize(value)
                    .map(drop)
                    .map_err(|e| format!("the answer does not fit the expected type ({e})"))
            };
            let message = agent.run(alias, options, sink, Some(&fits)).await?;
            serde_json::from_str(strip_fence(message.text())).map_err(|e| {
                let problem = e.to_string();
                let kind = AgentErrorKind::InvalidAnswer {
                    attempts: 1,
                    problem,
                };
                agent.error(Some(alias), kind)
            })
        })
    }
}

impl Agent {
    /// Answers dialog `alias` and appends the answer (and any tool calls and results) to it.
    ///
    /// On failure (server error after retries, timeout, deadline) or cancellation (dropping the
    /// future) the dialog is left exactly as it was: the received message stays, nothing is appended.
    /// For tools, a message, streaming or a typed answer, see [`respond_to`](Self::respond_to).
    pub async fn respond(&self, alias: &str) -> Result<Message, AgentError> {
        self.respond_to(alias).await
    }

    /// A respond on dialog `alias` with options, run by `.await`: see [`Respond`].
    pub fn respond_to<'a>(&'a self, alias: &'a str) -> Respond<'a> {
        Respond {
            agent: self,
            alias,
            options: RespondOptions::default(),
            sink: None,
        }
    }
}
