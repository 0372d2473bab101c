//! The respond loop, on a working copy of the dialog: model, then tools, then model again, until an
//! answer without tool calls that matches the schema, if any. Retries, timeouts and traces are the
//! invoker layers' (see `crate::layers`); this file only decides what to ask next.

use std::collections::HashSet;
use std::sync::Arc;

use lllm_core::{Demand, Dialog, DialogId, InferenceHints, Message, MessageLog};
use serde_json::json;
use tracing::Instrument;

use super::answer::{schema_feedback, AnswerCheck, OutputSchema};
use super::respond::{EventSink, RespondOptions, StreamEvent};
use super::sample::DialogSampler;
use super::task_calls::TaskCalls;
use super::tool_round::{run_tools, unique_call_ids, CallLog, Round};
use super::{Agent, AgentError, AgentErrorKind, DemandSource};
use crate::invoker::{ChatRequest, ChatResponse, Delta};
use crate::layers::Service as _;
use crate::tasks::Children;
use crate::telemetry::{self, AgentFacts};
use crate::tools::Toolbox;

/// Marks a dialog as waiting for an answer, and clears the mark however the respond ends: success,
/// error, or its future being dropped (cancellation).
pub(super) struct BusyGuard<'a> {
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

/// The state of one respond's loop.
struct Turn<'a, 'e> {
    agent: &'a Agent,
    /// The tools of its requests: the respond's own, or the agent's as they are now.
    toolbox: Arc<Toolbox>,
    /// Whether they are the agent's, which a server's changed list changes between requests.
    agents_tools: bool,
    schema: Option<&'a OutputSchema>,
    fits: Option<&'a AnswerCheck<'a>>,
    sink: Option<&'a mut EventSink<'e>>,
    rounds: u32,
    failed_answers: u32,
    /// A rejected answer and the problem, shown to the model but never added to the dialog.
    feedback: Vec<Message>,
    calls: CallLog,
    used_ids: HashSet<String>,
    /// Tokens in and out over the respond's calls, for its span.
    tokens: (u64, u64),
    /// What waits for the answer (`priority: auto`); none: a lone request of the agent's class.
    demand: Option<DemandSource>,
    /// The dialog's alias (a compacted window is journaled as its next dialog).
    alias: &'a str,
    /// Whether the respond compacted its window already (at most once).
    compacted: bool,
    /// Whether the next answer is the first of a new window, whose size is checked.
    first_of_window: bool,
    /// The tasks this respond started (with subagents): stopped if the respond ends before them.
    children: Option<Children>,
}

impl Agent {
    /// Runs a respond on `alias`: the loop on a working copy, bounded by the deadline, then the commit.
    pub(super) async fn run(
        &self,
        alias: &str,
        options: RespondOptions,
        sink: Option<&mut EventSink<'_>>,
        fits: Option<&AnswerCheck<'_>>,
    ) -> Result<Message, AgentError> {
        let span = telemetry::agent_span(&self.facts(), alias);
        let result = self
            .run_in(alias, options, sink, fits)
            .instrument(span.clone())
            .await;
        if let Err(kind) = &result {
            telemetry::record_failure(&span, kind.error_type(), &kind.to_string());
        }
        result.map_err(|kind| self.error(Some(alias), kind))
    }

    /// What this agent's spans say about it.
    fn facts(&self) -> AgentFacts {
        AgentFacts {
            agent: self.name.clone(),
            model: self.model.clone(),
            profile: self.hints.as_ref().map(InferenceHints::profile),
        }
    }

    async fn run_in(
        &self,
        alias: &str,
        options: RespondOptions,
        sink: Option<&mut EventSink<'_>>,
        fits: Option<&AnswerCheck<'_>>,
    ) -> Result<Message, AgentErrorKind> {
        let (mut work, _busy) = self.begin(alias)?;
        let original = work.id();
        let span = tracing::Span::current();
        telemetry::record_dialog(&span, work.id());
        telemetry::follow_fork(&span, work.id(), work.parent_id());
        telemetry::remember(&span, work.id());
        let asked_len = work.len();
        if let Some(text) = options.message {
            work.push(Message::user(text));
        }
        let toolbox = options.tools.map(Toolbox::new).transpose();
        let toolbox = toolbox.map_err(AgentErrorKind::Tools)?;
        let schema = options
            .output_schema
            .map(|(name, value)| OutputSchema::new(&name, &value))
            .transpose()?;
        let turn = Turn {
            agent: self,
            agents_tools: toolbox.is_none(),
            toolbox: toolbox.map_or_else(|| self.toolbox(), Arc::new),
            schema: schema.as_ref().or(self.output_schema.as_ref()),
            fits,
            sink,
            rounds: 0,
            failed_answers: 0,
            feedback: Vec::new(),
            calls: CallLog::default(),
            used_ids: used_call_ids(&work),
            tokens: (0, 0),
            demand: options.demand,
            alias,
            compacted: false,
            first_of_window: false,
            children: self
                .subagents
                .as_ref()
                .map(|_| Children::new(self.run.tasks.clone())),
        };
        let answer = match self.model_args.endpoint.deadline {
            Some(after) => tokio::time::timeout(after, turn.run(&mut work))
                .await
                .map_err(|_| AgentErrorKind::Deadline { after })??,
            None => turn.run(&mut work).await?,
        };
        self.commit(alias, &work, asked_len, original)?;
        Ok(answer)
    }

    /// Marks `alias` busy and takes an O(1) snapshot of it.
    pub(super) fn begin(&self, alias: &str) -> Result<(Dialog, BusyGuard<'_>), AgentErrorKind> {
        let mut table = self.table();
        let index = table
            .position(alias)
            .ok_or_else(|| AgentErrorKind::UnknownDialog {
                known: table.aliases(),
            })?;
        let slot = &mut table.slots[index];
        if slot.busy {
            return Err(AgentErrorKind::DialogBusy);
        }
        slot.busy = true;
        let snapshot = slot.dialog.snapshot();
        let guard = BusyGuard {
            agent: self,
            dialog: snapshot.id(),
        };
        Ok((snapshot, guard))
    }

    /// Sends `request` through the invoker layers (budget, journal, retries, trace, timeout),
    /// streaming to `sink` when there is one, and counts its tokens.
    pub(super) async fn call(
        &self,
        request: &ChatRequest,
        sink: Option<&mut EventSink<'_>>,
    ) -> Result<ChatResponse, AgentErrorKind> {
        let result = match sink {
            Some(sink) => {
                let mut forward = |delta: Delta<'_>| {
                    let event = match delta {
                        Delta::Text(text) => StreamEvent::Text(text),
                        Delta::Reasoning(text) => StreamEvent::Reasoning(text),
                    };
                    sink(event);
                    self.observe(event);
                };
                self.invoker.send(request, Some(&mut forward)).await
            }
            None => self.invoker.send(request, None).await,
        };
        let response = result?.response;
        if let Some(usage) = &response.message.usage {
            self.add_usage(usage);
        }
        Ok(response)
    }

    /// Appends what the respond added to its working copy, or puts its new window in place of the
    /// dialog when it compacted, unless the dialog was closed (or replaced) while the call was
    /// under way.
    fn commit(
        &self,
        alias: &str,
        work: &Dialog,
        asked_len: usize,
        original: DialogId,
    ) -> Result<(), AgentErrorKind> {
        let mut table = self.table();
        let slot = table
            .position(alias)
            .map(|i| &mut table.slots[i])
            .filter(|s| s.dialog.id() == original)
            .ok_or(AgentErrorKind::DialogClosed)?;
        if work.id() != original {
            // The busy mark is the old window's, which its guard can no longer find.
            slot.dialog = work.clone();
            slot.busy = false;
            return Ok(());
        }
        for message in work.messages().iter().skip(asked_len) {
            slot.dialog.push(message.clone());
        }
        Ok(())
    }
}

impl Turn<'_, '_> {
    /// Asks until an answer is accepted; tool rounds and re-asks happen on `work` (same id as the
    /// dialog, shared prefix), so every request carries the dialog's own hints.
    async fn run(mut self, work: &mut Dialog) -> Result<Message, AgentErrorKind> {
        loop {
            self.compact_if_due(work).await?;
            let last_round = self.rounds >= self.agent.max_tool_rounds;
            if self.agents_tools {
                self.toolbox = self.agent.tools_for_next_request(&self.toolbox).await;
            }
            let request = self.request(work, last_round)?;
            let response = self.agent.call(&request, self.sink.as_deref_mut()).await?;
            if let Some(usage) = &response.message.usage {
                self.tokens.0 += usage.prompt_tokens;
                self.tokens.1 += usage.completion_tokens;
                telemetry::record_usage(&tracing::Span::current(), self.tokens.0, self.tokens.1);
                if std::mem::take(&mut self.first_of_window) {
                    if let Some(compaction) = &self.agent.compaction {
                        compaction.check_after(usage.prompt_tokens)?;
                    }
                }
            }
            let message = self.offered_calls_only(response.message, last_round);
            if !message.tool_calls.is_empty() {
                self.tool_round(work, message).await?;
                continue;
            }
            if self.accepts(&message)? {
                // The answers of this respond's tasks still running when the model answered.
                let children = self.children.as_ref();
                let results = match children {
                    Some(children) => super::task_calls::wait_for_children(children).await,
                    None => None,
                };
                if let Some(results) = results {
                    // One more turn with the answers of the tasks it did not wait for.
                    work.push(message);
                    work.push(Message::user(results));
                    self.rounds += 1;
                    continue;
                }
                work.push(message.clone());
                return Ok(message);
            }
        }
    }

    /// Compacts the window when its last answer's prompt passed the threshold, at most once per
    /// respond. A summary that fails is reported and the respond goes on in the old window.
    async fn compact_if_due(&mut self, work: &mut Dialog) -> Result<(), AgentErrorKind> {
        let Some(compaction) = self.agent.compaction.as_ref().filter(|_| !self.compacted) else {
            return Ok(());
        };
        let Some(before) = compaction.due(self.agent, work).await? else {
            return Ok(());
        };
        self.compacted = true;
        let tools = self.toolbox.specs();
        let demand = self.demand();
        match self
            .agent
            .compact(compaction, self.alias, work, &tools, &demand, before)
            .await
        {
            Ok(window) => {
                *work = window;
                self.first_of_window = true;
                Ok(())
            }
            Err(error @ (AgentErrorKind::Compaction { .. } | AgentErrorKind::Summarizer(_))) => {
                let problem = lllm_core::full_message(&error);
                tracing::warn!(%problem, "the window was not compacted");
                Ok(())
            }
            Err(other) => Err(other),
        }
    }

    fn demand(&self) -> Demand {
        match &self.demand {
            Some(source) => source.get(),
            None => Demand::of_class(self.agent.run.class),
        }
    }

    fn request(&self, work: &Dialog, last_round: bool) -> Result<ChatRequest, AgentErrorKind> {
        let mut request = self.agent.request_for(work, &self.demand())?;
        request.notes.dialog_alias = Some(self.alias.to_owned());
        if !self.feedback.is_empty() {
            let mut messages: MessageLog = request.messages.clone();
            for message in &self.feedback {
                messages.push(message.clone());
            }
            request.messages = messages;
        }
        if !self.toolbox.is_empty() {
            request.tools = self.toolbox.specs();
            if last_round {
                // The bound is reached: one more answer, and it may not call tools.
                request.tool_choice = Some(json!("none"));
            }
        }
        request.response_format = self.schema.map(OutputSchema::response_format);
        // Servers refuse a call without its results or a result without its call (HTTP 400).
        if let Some(problem) = lllm_core::pairing_problem(request.messages.iter()) {
            return Err(AgentErrorKind::Unpaired(problem));
        }
        Ok(request)
    }

    /// Drops tool calls the model made although it was offered no tools (or no more rounds).
    fn offered_calls_only(&self, mut message: Message, last_round: bool) -> Message {
        if !message.tool_calls.is_empty() && (last_round || self.toolbox.is_empty()) {
            tracing::warn!(
                calls = message.tool_calls.len(),
                "the model called tools it was not offered; the calls are dropped"
            );
            message.tool_calls.clear();
            // Without its calls the message must still be a valid assistant message.
            message.content.get_or_insert_with(String::new);
        }
        message
    }

    async fn tool_round(
        &mut self,
        work: &mut Dialog,
        mut message: Message,
    ) -> Result<(), AgentErrorKind> {
        unique_call_ids(&mut message.tool_calls, self.rounds, &mut self.used_ids);
        // An answer to the schema feedback that calls tools moves on: the feedback is dropped.
        self.feedback.clear();
        // A task forks the dialog as the model last saw it: before the answer holding the call.
        let from = self.children.as_ref().map(|_| work.snapshot());
        // What a server asks during the calls is answered for the dialog as it was before this
        // answer, whose calls have no results yet.
        let sampler = DialogSampler {
            agent: self.agent,
            calling: work.snapshot(),
            demand: self.demand(),
        };
        // Skills loaded before this answer: its own `load_skill` calls hold from the next round.
        let loaded_skills = match &self.agent.skills {
            Some(_) => lllm_core::skills::loaded_skills(work.messages().iter()),
            None => Vec::new(),
        };
        work.push(message.clone());
        for call in &message.tool_calls {
            self.emit(StreamEvent::ToolCall(call));
        }
        let tasks = self
            .children
            .as_ref()
            .zip(from)
            .map(|(children, from)| TaskCalls {
                agent: self.agent,
                from: std::sync::Mutex::new(from),
                children,
            });
        let calls = &message.tool_calls;
        let round = Round {
            agent: &self.agent.name,
            toolbox: &self.toolbox,
            pipeline: &self.agent.tool_calls,
            dialog: work.id(),
            parallel: self.agent.max_parallel_tools,
            tasks: tasks.as_ref(),
            sampler: &sampler,
            loaded_skills: &loaded_skills,
        };
        let results = run_tools(&round, calls, &mut self.calls).await?;
        for (call, result) in calls.iter().zip(results) {
            self.emit(StreamEvent::ToolResult {
                call,
                content: &result.content,
                is_error: result.is_error,
            });
            work.push(Message::tool(call.id.clone(), result.content));
        }
        if let Some(journal) = &self.agent.run.journal {
            // The caller answered this round's calls with a new message instead of results.
            let turns = calls
                .iter()
                .filter_map(|c| journal.caller_turn_after(work.id(), &c.id));
            for text in turns.collect::<Vec<_>>() {
                work.push(Message::user(text));
            }
        }
        self.rounds += 1;
        Ok(())
    }

    /// Shows `event` to the respond's sink, if it streams, and to the run's observer.
    fn emit(&mut self, event: StreamEvent<'_>) {
        if let Some(sink) = self.sink.as_deref_mut() {
            sink(event);
        }
        self.agent.observe(event);
    }

    /// Whether the answer is final: it matches the schema, if any. A rejected answer is shown to the
    /// model with the problem, up to `max_answer_retries` times.
    fn accepts(&mut self, message: &Message) -> Result<bool, AgentErrorKind> {
        let Some(schema) = self.schema else {
            return Ok(true);
        };
        let Err(problem) = schema.check(message.text(), self.fits) else {
            return Ok(true);
        };
        self.failed_answers += 1;
        if self.failed_answers > self.agent.max_answer_retries {
            return Err(AgentErrorKind::InvalidAnswer {
                attempts: self.failed_answers,
                problem,
            });
        }
        tracing::info!(%problem, "answer rejected; asking again");
        self.feedback = vec![message.clone(), Message::user(schema_feedback(&problem))];
        Ok(false)
    }
}

/// The tool call ids already in the dialog, which new calls must not reuse.
fn used_call_ids(dialog: &Dialog) -> HashSet<String> {
    dialog
        .messages()
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
        .collect()
}
