//! Answering a dialog: the call loop (model → tools → model), structured answers, streaming, retries.

use std::collections::HashSet;
use std::time::Duration;

use futures::future::join_all;
use lllm_core::schema::Schema;
use lllm_core::{Dialog, DialogId, Message, MessageLog, ToolCall};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{Agent, AgentError, OutputSchema};
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, DEFAULT_TIMEOUT};
use crate::tools::{schema_of, Tool, Toolbox};
use crate::trace::Answered;

/// Marks a dialog as waiting for an answer, and clears the mark however the respond ends: success,
/// error, or its future being dropped (cancellation).
struct BusyGuard<'a> {
    agent: &'a Agent,
    dialog: DialogId,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        // By id, not alias: the dialog may have been closed and its alias reused meanwhile.
        let mut table = self.agent.table();
        if let Some(slot) = table
            .slots
            .iter_mut()
            .find(|s| s.dialog.id() == self.dialog)
        {
            slot.busy = false;
        }
    }
}

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

/// Settings of one respond that differ from the agent's.
#[derive(Debug, Clone, Default)]
pub struct RespondOptions {
    tools: Option<Vec<std::sync::Arc<dyn Tool>>>,
    output_schema: Option<(String, Value)>,
    message: Option<String>,
}

impl RespondOptions {
    /// The agent's settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offer these tools instead of the agent's (an empty list offers none).
    pub fn tools(mut self, tools: Vec<std::sync::Arc<dyn Tool>>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Receive this user message as part of the respond: it enters the dialog together with the
    /// answer, so a failed or cancelled respond leaves no unanswered message behind.
    pub fn message(mut self, text: impl Into<String>) -> Self {
        self.message = Some(text.into());
        self
    }

    /// Require an answer that is JSON matching `schema` (named `name` for the server).
    pub fn output_schema(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.output_schema = Some((name.into(), schema));
        self
    }
}

/// The sink of a streaming respond.
pub type EventSink<'s> = dyn for<'e> FnMut(StreamEvent<'e>) + Send + 's;

/// The text the model reads when an answer does not match the required schema.
fn schema_feedback(problem: &str) -> String {
    format!(
        "Your answer does not match the required JSON Schema: {problem}. Reply again with only a JSON value that matches it."
    )
}

impl Agent {
    /// Answers the active dialog and appends the answer (and any tool calls and results) to it.
    ///
    /// On failure (server error after retries, timeout, deadline) or cancellation the dialog is left
    /// exactly as it was: the received message stays, nothing is appended.
    pub async fn respond(&self) -> Result<Message, AgentError> {
        let alias = self.active_alias_in(&self.table())?;
        self.respond_in(&alias).await
    }

    /// Answers dialog `alias` (active or not).
    pub async fn respond_in(&self, alias: &str) -> Result<Message, AgentError> {
        self.respond_with(alias, &RespondOptions::default()).await
    }

    /// Answers dialog `alias` with per-call settings (tools, output schema).
    pub async fn respond_with(
        &self,
        alias: &str,
        options: &RespondOptions,
    ) -> Result<Message, AgentError> {
        self.run(alias, options, None, None).await
    }

    /// Answers dialog `alias`, streaming: `on_event` sees text as it arrives, tool calls and their
    /// results. The result is the final answer, as with [`respond_with`](Self::respond_with).
    pub async fn respond_streaming(
        &self,
        alias: &str,
        options: &RespondOptions,
        on_event: &mut EventSink<'_>,
    ) -> Result<Message, AgentError> {
        self.run(alias, options, Some(on_event), None).await
    }

    /// Answers dialog `alias` with JSON matching `T`'s schema (from `schemars`), parsed into `T`. An
    /// answer that does not parse or match is shown to the model with the problem and asked again, up
    /// to `max_exception_retry` times; failed attempts never enter the dialog.
    pub async fn respond_structured<T>(&self, alias: &str) -> Result<T, AgentError>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let options = RespondOptions::new().output_schema(T::schema_name(), schema_of::<T>());
        // The type may be stricter than its schema (a number too big for a u32): check both, so a
        // failure is retried like a schema failure and never reaches the dialog.
        let fits = |value: &Value| {
            serde_json::from_value::<T>(value.clone())
                .map(drop)
                .map_err(|e| format!("the answer does not fit the expected type ({e})"))
        };
        let message = self.run(alias, &options, None, Some(&fits)).await?;
        serde_json::from_str(strip_fence(message.text())).map_err(|e| AgentError::InvalidAnswer {
            agent: self.name.clone(),
            alias: alias.to_owned(),
            attempts: 1,
            problem: e.to_string(),
        })
    }

    async fn run(
        &self,
        alias: &str,
        options: &RespondOptions,
        sink: Option<&mut EventSink<'_>>,
        fits: Option<&AnswerCheck<'_>>,
    ) -> Result<Message, AgentError> {
        let (mut work, _busy) = self.begin(alias)?;
        let asked_len = work.len();
        if let Some(text) = &options.message {
            work.push(Message::user(text.clone()));
        }
        let override_box;
        let toolbox = match &options.tools {
            Some(tools) => {
                override_box = Toolbox::new(tools.clone()).map_err(AgentError::Build)?;
                &override_box
            }
            None => &self.toolbox,
        };
        let override_schema;
        let schema = match &options.output_schema {
            Some((name, value)) => {
                override_schema = OutputSchema::new(name, value).map_err(AgentError::Build)?;
                Some(&override_schema)
            }
            None => self.output_schema.as_ref(),
        };
        let turn = self.turn(alias, &mut work, toolbox, schema.map(|s| (s, fits)), sink);
        let answer =
            match self.model_args.deadline {
                Some(limit) => tokio::time::timeout(limit, turn).await.map_err(|_| {
                    AgentError::Deadline {
                        agent: self.name.clone(),
                        alias: alias.to_owned(),
                        after: limit,
                    }
                })??,
                None => turn.await?,
            };
        self.commit(alias, &work, asked_len)?;
        Ok(answer)
    }

    /// The loop on a working copy of the dialog (same id, shared prefix): model, then tools, then
    /// model again, until an answer without tool calls that matches the schema, if any.
    async fn turn(
        &self,
        alias: &str,
        work: &mut Dialog,
        toolbox: &Toolbox,
        schema: Option<(&OutputSchema, Option<&AnswerCheck<'_>>)>,
        mut sink: Option<&mut EventSink<'_>>,
    ) -> Result<Message, AgentError> {
        let mut rounds = 0u32;
        let mut failed_answers = 0u32;
        let mut feedback: Vec<Message> = Vec::new();
        let mut done_calls: HashSet<(String, String)> = HashSet::new();
        let mut used_ids: HashSet<String> = work
            .messages()
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
            .collect();
        loop {
            let last_round = rounds >= self.max_interrupt_steps;
            let mut request = self.chat_request(work)?;
            if !feedback.is_empty() {
                let mut messages: MessageLog = request.messages.clone();
                for message in &feedback {
                    messages.push(message.clone());
                }
                request.messages = messages;
            }
            if !toolbox.is_empty() {
                request.tools = toolbox.specs();
                if last_round {
                    // The bound is reached: one more answer, and it may not call tools.
                    request.tool_choice = Some(json!("none"));
                }
            }
            if let Some((schema, _)) = schema {
                request.response_format = Some(schema.response_format());
            }
            let response = self
                .call_with_retries(alias, &request, sink.as_deref_mut())
                .await?;
            let mut message = response.message;
            if !message.tool_calls.is_empty() && (last_round || toolbox.is_empty()) {
                tracing::warn!(
                    agent = %self.name,
                    dialog = alias,
                    calls = message.tool_calls.len(),
                    "the model called tools it was not offered; the calls are dropped"
                );
                message.tool_calls.clear();
                // Without its calls the message must still be a valid assistant message.
                message.content.get_or_insert_with(String::new);
            }
            if !message.tool_calls.is_empty() {
                unique_call_ids(&mut message.tool_calls, rounds, &mut used_ids);
                // An answer to the schema feedback that calls tools moves on: the feedback is dropped.
                feedback.clear();
                work.push(message.clone());
                if let Some(sink) = sink.as_deref_mut() {
                    for call in &message.tool_calls {
                        sink(StreamEvent::ToolCall(call));
                    }
                }
                let tools_started = std::time::Instant::now();
                let results = self
                    .run_tools(toolbox, &message.tool_calls, &mut done_calls)
                    .await;
                if let Some(trace) = &self.trace {
                    trace.tool_time(&work.id().to_string(), tools_started.elapsed());
                }
                for (call, (content, is_error)) in message.tool_calls.iter().zip(results) {
                    if let Some(sink) = sink.as_deref_mut() {
                        sink(StreamEvent::ToolResult {
                            call,
                            content: &content,
                            is_error,
                        });
                    }
                    work.push(Message::tool(call.id.clone(), content));
                }
                rounds += 1;
                continue;
            }
            if let Some((schema, fits)) = schema {
                let checked = schema
                    .check(message.text())
                    .and_then(|value| fits.map_or(Ok(()), |fits| fits(&value)));
                if let Err(problem) = checked {
                    failed_answers += 1;
                    if failed_answers > self.max_exception_retry {
                        return Err(AgentError::InvalidAnswer {
                            agent: self.name.clone(),
                            alias: alias.to_owned(),
                            attempts: failed_answers,
                            problem,
                        });
                    }
                    tracing::info!(agent = %self.name, dialog = alias, %problem, "answer rejected; asking again");
                    // Shown to the model, never added to the dialog.
                    feedback = vec![message, Message::user(schema_feedback(&problem))];
                    continue;
                }
            }
            work.push(message.clone());
            return Ok(message);
        }
    }

    /// Runs one turn's tool calls concurrently; each result is (content, is_error), in call order.
    async fn run_tools(
        &self,
        toolbox: &Toolbox,
        calls: &[ToolCall],
        done: &mut HashSet<(String, String)>,
    ) -> Vec<(String, bool)> {
        let mut repeated = Vec::with_capacity(calls.len());
        for call in calls {
            let key = (call.name.clone(), canonical_arguments(&call.arguments));
            repeated.push(!done.insert(key));
        }
        let runs = calls.iter().zip(repeated).map(|(call, repeated)| async move {
            if repeated {
                return (
                    "note: this exact call was already made while answering this message; its result is above, so it was not run again".to_owned(),
                    false,
                );
            }
            match self.run_tool(toolbox, call).await {
                Ok(content) => (content, false),
                Err(problem) => (format!("error: {problem}"), true),
            }
        });
        join_all(runs).await
    }

    async fn run_tool(&self, toolbox: &Toolbox, call: &ToolCall) -> Result<String, String> {
        let Some((tool, schema)) = toolbox.get(&call.name) else {
            return Err(format!(
                "there is no tool `{}`; the tools are: {}",
                call.name,
                toolbox.names().join(", ")
            ));
        };
        let raw = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let arguments: Value = serde_json::from_str(raw).map_err(|e| {
            format!(
                "the arguments are not valid JSON ({e}); call the tool again with a JSON object"
            )
        })?;
        schema.check(&arguments).map_err(|problem| {
            format!("the arguments do not match the tool's parameters: {problem}")
        })?;
        tracing::debug!(agent = %self.name, tool = %call.name, "calling tool");
        tool.call(arguments)
            .await
            .map(|output| output.into_content())
            .map_err(|e| e.0)
    }

    /// Sends Dynamo's end-of-session request for dialog `alias` (opt-in; never sent by [`close`]).
    ///
    /// On stock Dynamo this is a real, one-token inference over the dialog's messages, carrying
    /// `x-dynamo-session-final: true`; its answer is not added to the dialog. Needs the `dynamo` profile.
    ///
    /// [`close`]: Agent::close
    pub async fn finish(&self, alias: &str) -> Result<(), AgentError> {
        let hints = self
            .hints
            .as_ref()
            .ok_or_else(|| AgentError::NoHints(self.name.clone()))?;
        let (snapshot, _busy) = self.begin(alias)?;
        let hint_fields = hints
            .dialog_final_request_fields(&snapshot)
            .map_err(|e| self.hints_error(e))?;
        let mut args = (*self.model_args).clone();
        args.params.remove("max_completion_tokens");
        args.params.insert("max_tokens".into(), 1.into());
        let request = ChatRequest::new(
            self.model.clone(),
            snapshot.messages().clone(),
            args.into(),
            hint_fields,
        );
        self.call_with_retries(alias, &request, None)
            .await
            .map(drop)
    }

    /// Marks `alias` busy and takes an O(1) snapshot of it.
    fn begin(&self, alias: &str) -> Result<(Dialog, BusyGuard<'_>), AgentError> {
        let mut table = self.table();
        let index = table
            .position(alias)
            .ok_or_else(|| self.unknown(&table, alias))?;
        let slot = &mut table.slots[index];
        if slot.busy {
            return Err(AgentError::DialogBusy {
                agent: self.name.clone(),
                alias: alias.to_owned(),
            });
        }
        slot.busy = true;
        let snapshot = slot.dialog.snapshot();
        let guard = BusyGuard {
            agent: self,
            dialog: snapshot.id(),
        };
        Ok((snapshot, guard))
    }

    fn hints_error(&self, source: lllm_core::HintsError) -> AgentError {
        AgentError::Hints {
            agent: self.name.clone(),
            source,
        }
    }

    /// The request for a dialog: its messages and the hints of *that* dialog (session = its id, parent =
    /// the dialog it was forked from).
    pub fn chat_request(&self, dialog: &Dialog) -> Result<ChatRequest, AgentError> {
        let hint_fields = match &self.hints {
            Some(hints) => hints
                .dialog_request_fields(dialog, &self.model_args)
                .map_err(|e| self.hints_error(e))?,
            None => Default::default(),
        };
        let mut request = ChatRequest::new(
            self.model.clone(),
            dialog.messages().clone(),
            self.model_args.clone(),
            hint_fields,
        );
        request.dialog = Some(dialog.id());
        request.parent_dialog = dialog.parent_id();
        Ok(request)
    }

    async fn call_with_retries(
        &self,
        alias: &str,
        request: &ChatRequest,
        mut sink: Option<&mut EventSink<'_>>,
    ) -> Result<ChatResponse, AgentError> {
        let timeout = self.model_args.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let mut retry = 0;
        loop {
            let mut streamed = false;
            let mut first_piece = None;
            let sent = std::time::Instant::now();
            let attempt = async {
                match sink.as_deref_mut() {
                    Some(sink) => {
                        let mut forward = |delta: Delta<'_>| {
                            streamed = true;
                            first_piece.get_or_insert_with(std::time::Instant::now);
                            match delta {
                                Delta::Text(text) => sink(StreamEvent::Text(text)),
                                Delta::Reasoning(text) => sink(StreamEvent::Reasoning(text)),
                            }
                        };
                        self.invoker.invoke_stream(request, &mut forward).await
                    }
                    None => self.invoker.invoke(request).await,
                }
            };
            let error = match tokio::time::timeout(timeout, attempt).await {
                Ok(Ok(response)) => {
                    if let Some(usage) = &response.message.usage {
                        self.add_usage(usage);
                    }
                    if let Some(trace) = &self.trace {
                        trace.record(Answered {
                            agent: &self.name,
                            request,
                            response: &response,
                            sent,
                            first_piece,
                            priority: self
                                .hints
                                .as_ref()
                                .and_then(|h| h.priority())
                                .map(i64::from),
                            osl: self
                                .hints
                                .as_ref()
                                .and_then(|h| h.osl_sent(&self.model_args))
                                .map(u64::from),
                        });
                    }
                    return Ok(response);
                }
                Ok(Err(error)) => error,
                Err(_) => InvokeError::Timeout(timeout),
            };
            // Text already shown cannot be taken back, so a stream that failed midway is not retried.
            let delay = if streamed {
                None
            } else {
                self.retry.delay(retry, &error)
            };
            match delay {
                Some(wait) => {
                    tracing::warn!(
                        agent = %self.name,
                        dialog = alias,
                        attempt = retry + 1,
                        wait_ms = duration_ms(wait),
                        error = %error,
                        "model call failed; retrying"
                    );
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                None => {
                    return Err(AgentError::Invoke {
                        agent: self.name.clone(),
                        alias: alias.to_owned(),
                        attempts: retry + 1,
                        source: error,
                    })
                }
            }
        }
    }

    /// Appends what the respond added to its working copy, unless the dialog was closed (or replaced)
    /// while the call was under way.
    fn commit(&self, alias: &str, work: &Dialog, asked_len: usize) -> Result<(), AgentError> {
        let mut table = self.table();
        let slot = table
            .position(alias)
            .map(|i| &mut table.slots[i])
            .filter(|s| s.dialog.id() == work.id())
            .ok_or_else(|| AgentError::DialogClosed {
                agent: self.name.clone(),
                alias: alias.to_owned(),
            })?;
        for message in work.messages().iter().skip(asked_len) {
            slot.dialog.push(message.clone());
        }
        Ok(())
    }
}

/// An extra check of a structured answer (beyond its schema), such as fitting a Rust type.
type AnswerCheck<'a> = dyn Fn(&Value) -> Result<(), String> + Sync + 'a;

/// Gives every call an id that is neither empty nor used before in the dialog, since results are
/// matched to calls by id (servers send empty ids, or restart `call_0` every turn).
fn unique_call_ids(calls: &mut [ToolCall], round: u32, used: &mut HashSet<String>) {
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.trim().is_empty() || used.contains(&call.id) {
            let mut n = 0;
            call.id = loop {
                let candidate = format!("call_{round}_{i}_{n}");
                if !used.contains(&candidate) {
                    break candidate;
                }
                n += 1;
            };
        }
        used.insert(call.id.clone());
    }
}

/// Arguments in a canonical form, so that `{"a":1, "b":2}` and `{"b":2,"a":1}` count as the same call.
fn canonical_arguments(raw: &str) -> String {
    serde_json::from_str::<Value>(raw)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.trim().to_owned())
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl OutputSchema {
    pub(crate) fn new(name: &str, schema: &Value) -> Result<OutputSchema, String> {
        let compiled = Schema::compile(schema).map_err(|p| format!("output schema {p}"))?;
        let name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        Ok(OutputSchema {
            name: if name.is_empty() {
                "answer".into()
            } else {
                name
            },
            schema: schema.clone(),
            compiled,
        })
    }

    fn response_format(&self) -> Value {
        json!({"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema}})
    }

    /// Parses `text` as JSON (allowing a ```json fence around it) and checks it against the schema.
    fn check(&self, text: &str) -> Result<Value, String> {
        let value: Value = serde_json::from_str(strip_fence(text))
            .map_err(|e| format!("the answer is not valid JSON ({e})"))?;
        self.compiled.check(&value)?;
        Ok(value)
    }
}

/// The text inside a Markdown code fence, if the whole answer is one.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|inner| inner.trim_start_matches("json").trim())
        .unwrap_or(trimmed)
}
