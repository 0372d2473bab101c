//! A run answering one HTTP request (a chat completion or a response): admitted, started, waited
//! for or streamed, and cancelled when the client goes away before it ended.

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;

use super::admission::Ticket;
use super::auth::Caller;
use super::conversations::{ConversationKey, Conversations, Entry, Snapshot};
use super::error::ApiError;
use super::failure::{failure, Failure};
use super::identity::{Identified, Source};
use super::input::{Turn, CLIENT_SYSTEM_VAR};
use super::session::{CallerSession, ECHO_HEADER, SOURCE_HEADER};
use super::store::{new_run_id, RunMeta, RunState};
use super::{Model, ServeState};
use crate::conversation::Conversation;
use crate::engine::{RunError, RunHandle, RunOutput, RunPlan};
use crate::events::RunEvent;

/// What a finished run left, as a renderer sees it.
pub(crate) type Outcome = Arc<Result<RunOutput, RunError>>;

/// A piece of a streamed run, for a renderer to turn into events.
#[derive(Debug)]
pub(crate) enum Step<'a> {
    /// The run started: the stream's first events go out at once.
    Started,
    /// Answer text as it arrived.
    Text(&'a str),
    /// The run answered.
    Answered(&'a RunOutput),
    /// The run failed (or was cancelled).
    Failed(&'a Failure),
}

/// A started run, its conversation's turn held until it ends. Dropped before it ended (the client
/// went away), it cancels the run.
#[derive(Debug)]
pub(crate) struct LiveRun {
    pub(crate) handle: RunHandle,
    ticket: Option<Ticket>,
    pub(crate) session: CallerSession,
    pub(crate) model: String,
    secrets: lllm_core::secret::Secrets,
    memo: Option<Memo>,
    source: Source,
}

/// What a request asks of a model: its turn, its conversation, and where its answer is kept.
#[derive(Debug)]
pub(crate) struct Ask {
    pub(crate) turn: Turn,
    pub(crate) identified: Identified,
    /// The ids a Responses answer is kept under (none when the client asked not to store it).
    pub(crate) answer_ids: Option<AnswerIds>,
    pub(crate) stream: bool,
    /// The API asked (`chat.completions`, `responses`), as the console names it.
    pub(crate) source: &'static str,
}

/// The ids of a Responses answer: the response's and its message item's.
#[derive(Debug, Clone)]
pub(crate) struct AnswerIds {
    pub(crate) response: String,
    pub(crate) item: String,
}

/// What is kept of a run's conversation when it answers.
#[derive(Debug)]
struct Memo {
    store: Arc<Conversations>,
    key: ConversationKey,
    session: String,
    tactic: String,
    client_system: String,
    /// The transcript up to and including the run's input.
    transcript: Vec<Entry>,
    answer_ids: Option<AnswerIds>,
}

impl Memo {
    fn keep(self, output: &RunOutput) {
        let mut transcript = self.transcript;
        if !output.answer.is_empty() {
            // A client sends no assistant message without text back: neither is it kept.
            transcript.push(Entry {
                role: lllm_core::Role::Assistant,
                text: output.answer.clone(),
                response: self.answer_ids.as_ref().map(|ids| ids.response.clone()),
                item: self.answer_ids.map(|ids| ids.item),
            });
        }
        let dialogs = output
            .agents
            .iter()
            .map(|agent| (agent.name.clone(), agent.dialogs.clone()))
            .collect();
        self.store.remember(Snapshot {
            key: self.key,
            session: self.session,
            tactic: self.tactic,
            client_system: self.client_system,
            transcript,
            dialogs,
        });
    }
}

impl LiveRun {
    /// Admits and starts `ask` on `model`: once its conversation's turn came, the run continues
    /// the conversation's stored dialogs, or starts fresh ones seeded from the client's history.
    pub(crate) async fn start(
        state: &ServeState,
        model: &Model,
        ask: Ask,
    ) -> Result<LiveRun, ApiError> {
        let session = ask.identified.session.clone();
        let source = ask.identified.source;
        let caller = Caller(ask.identified.key.caller.as_str().into());
        let ticket = state.admission.admit(&caller.scoped(&session.id)).await?;
        let continuation =
            ask.identified
                .continuation(&state.conversations, &ask.turn, &model.fingerprint);
        let mut vars = lllm_core::PromptVars::new();
        vars.insert(
            CLIENT_SYSTEM_VAR.into(),
            Value::from(continuation.client_system.clone()),
        );
        let conversation = Conversation::new(session.id.clone())
            .parent(session.parent.clone())
            .seed(continuation.seed);
        let mut transcript = continuation.transcript;
        transcript.push(Entry::user(ask.turn.input.clone()));
        let memo = Memo {
            store: state.conversations.clone(),
            key: continuation.key,
            session: session.id.clone(),
            tactic: model.fingerprint.clone(),
            client_system: continuation.client_system,
            transcript,
            answer_ids: ask.answer_ids,
        };
        let log = state.runs.new_log();
        let plan = RunPlan::new()
            .input(ask.turn.input)
            .vars(vars)
            .conversation(conversation)
            .dialogs(continuation.dialogs)
            .stream(ask.stream)
            .observer(log.observer());
        let handle = state.engine.start(model.tactic.clone(), plan);
        shown(state, model, (&session, &caller), ask.source, &handle, log);
        Ok(LiveRun {
            handle,
            ticket: Some(ticket),
            session,
            model: model.id.clone(),
            secrets: model.tactic.secrets().clone(),
            memo: Some(memo),
            source,
        })
    }

    /// Keeps the conversation of a run that answered, before its turn is handed on.
    fn ended(&mut self, outcome: &Outcome) {
        if let (Ok(output), Some(memo)) = (outcome.as_ref(), self.memo.take()) {
            memo.keep(output);
        }
        self.ticket.take();
    }

    /// Waits for the run's end.
    pub(crate) async fn wait(&mut self) -> Outcome {
        let outcome = self.handle.wait().await;
        self.ended(&outcome);
        outcome
    }

    /// The failure of a run as an error before the first byte, its message without secrets.
    pub(crate) fn failure(&self, error: &RunError) -> ApiError {
        failure(&self.secrets, error)
    }

    /// The session header of the response.
    pub(crate) fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&self.session.id) {
            headers.insert(ECHO_HEADER, value);
        }
        headers.insert(SOURCE_HEADER, HeaderValue::from_static(self.source.name()));
        headers
    }

    /// The run as server-sent events: `render` turns each step into events; the stream ends after
    /// the events of the run's end. A client that goes away cancels the run.
    pub(crate) fn sse(
        self,
        mut render: impl FnMut(Step<'_>) -> Vec<Event> + Send + 'static,
    ) -> Response {
        let headers = self.headers();
        let (sender, receiver) = mpsc::channel::<Event>(64);
        tokio::spawn(async move {
            let mut live = self;
            for out in render(Step::Started) {
                if sender.send(out).await.is_err() {
                    return live.cancel().await;
                }
            }
            let mut events = Box::pin(live.handle.events(0));
            loop {
                let next = tokio::select! {
                    next = events.next() => next,
                    () = sender.closed() => return live.cancel().await,
                };
                let Some(event) = next else { break };
                if let RunEvent::Text { text, .. } = &event.event {
                    for out in render(Step::Text(text)) {
                        if sender.send(out).await.is_err() {
                            return live.cancel().await;
                        }
                    }
                }
            }
            let outcome = live.handle.wait().await;
            live.ended(&outcome);
            let ended = match outcome.as_ref() {
                Ok(output) => render(Step::Answered(output)),
                Err(error) => render(Step::Failed(&Failure::of(&live.secrets, error))),
            };
            for out in ended {
                if sender.send(out).await.is_err() {
                    break;
                }
            }
        });
        let stream = receiver_stream(receiver);
        (headers, Sse::new(stream).keep_alive(KeepAlive::default())).into_response()
    }

    async fn cancel(mut self) {
        self.handle.cancel().await;
        self.ticket.take();
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            // Dropped before it ended: the client went away. The turn is held until the run stopped.
            let handle = self.handle.clone();
            tokio::spawn(async move {
                handle.cancel().await;
                drop(ticket);
            });
        }
    }
}

/// Shows a run answering one request in the console, in memory, until it is forgotten.
fn shown(
    state: &ServeState,
    model: &Model,
    (session, caller): (&CallerSession, &Caller),
    source: &'static str,
    handle: &RunHandle,
    log: Arc<super::log::RunLog>,
) {
    let meta = RunMeta {
        id: new_run_id(),
        model: model.id.clone(),
        created: super::now(),
        created_ns: 0,
        session: session.id.clone(),
        caller: caller.recorded(),
        idempotency: None,
        source: Some(source.to_owned()),
        status: None,
        error: None,
        last_event: 0,
        running: false,
        sources: Vec::new(),
    };
    let live = RunState::Live {
        handle: handle.clone(),
        base: 0,
    };
    let record = state.runs.add_in_memory(meta, live, log);
    super::watch::watch(model, record, handle.clone());
}

fn receiver_stream(
    receiver: mpsc::Receiver<Event>,
) -> impl Stream<Item = Result<Event, Infallible>> + Send {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (Ok(event), receiver))
    })
}
