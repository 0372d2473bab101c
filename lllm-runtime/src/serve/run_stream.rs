//! A run answering one HTTP request (a chat completion or a response): admitted, started, waited
//! for or streamed, and cancelled when the client goes away before it ended.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;

use super::admission::Ticket;
use super::auth::Caller;
use super::caller_tools::CallerResult;
use super::conversations::{history_digest, Entry};
use super::error::ApiError;
use super::failure::{failure, Failure};
use super::identity::{Identified, Source};
use super::input::{Turn, CLIENT_SYSTEM_VAR};
use super::memo::{AnswerIds, Memo};
use super::paused::{forget, Named, PausedRun, PausedRuns};
use super::session::{CallerSession, ECHO_HEADER, SOURCE_HEADER};
use super::store::{new_run_id, RunMeta, RunState};
use super::{Model, ServeState};
use crate::conversation::Conversation;
use crate::engine::{plan_resume, JournalPlan, Resumable, RunError, RunHandle, RunOutput, RunPlan};
use crate::events::RunEvent;
use crate::journal::{Journal, JournalError, PendingCall};

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
    /// The run paused on calls of the caller's tools: they are handed to the caller.
    Handed(Handback<'a>),
    /// The run failed (or was cancelled).
    Failed(&'a Failure),
}

/// What a run paused on the caller's calls hands back: the calls, the tokens of the downstream
/// requests up to the pause (as an answer reports its run's), the model's text beside the calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Handback<'a> {
    pub(crate) pending: &'a [PendingCall],
    pub(crate) usage: &'a lllm_core::Usage,
    pub(crate) text: &'a str,
}

impl<'a> Handback<'a> {
    /// The hand-back of a run that paused (none for another end).
    pub(crate) fn of(error: &'a RunError) -> Option<Handback<'a>> {
        match error {
            RunError::Paused {
                pending, at_pause, ..
            } => Some(Handback {
                pending,
                usage: &at_pause.usage,
                text: &at_pause.text,
            }),
            _ => None,
        }
    }
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
    /// Where a run that may pause on the caller's tools is held (its journal), when it may.
    held: Option<Held>,
    /// Whether the run was offered the caller's tools (a pause hands their calls to the caller).
    hands: bool,
}

/// A run offered the caller's tools: its journal, and where it is held when it pauses.
#[derive(Debug)]
struct Held {
    runs: Arc<PausedRuns>,
    journal: PathBuf,
    /// The response that hands the calls (Responses), named by the caller's next request.
    response: Option<String>,
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
    /// The caller's function tools, for the agents with `client_tools` (checked; none when the
    /// tactic has no such agent).
    pub(crate) caller_tools: Vec<lllm_core::ToolSpec>,
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
        let mut plan = RunPlan::new()
            .input(ask.turn.input)
            .vars(vars)
            .conversation(conversation)
            .dialogs(continuation.dialogs)
            .stream(ask.stream)
            .observer(log.observer());
        let mut held = None;
        if !ask.caller_tools.is_empty() {
            // A run that may hand calls to the caller is journaled: its journal holds it paused.
            let journal = state.paused.new_journal();
            plan = plan
                .caller_tools(ask.caller_tools)
                .journal(JournalPlan::Create(journal.clone()));
            held = Some(Held {
                runs: state.paused.clone(),
                journal,
                response: memo.answer_ids.as_ref().map(|ids| ids.response.clone()),
            });
        }
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
            hands: held.is_some(),
            held,
        })
    }

    /// Continues `paused` with what the caller gave (its results, a pending call without one
    /// answered "not run"; or a new user message, every pending call answered "not run" and the
    /// message given after them), recorded in its journal where the calls were: the run is
    /// replayed from its journal, so its next request extends the paused one. `answer_ids`: where
    /// a Responses answer is kept.
    pub(crate) async fn resume(
        state: &ServeState,
        model: &Model,
        paused: PausedRun,
        given: Given<'_>,
        (stream, source): (bool, &'static str),
        answer_ids: Option<AnswerIds>,
    ) -> Result<LiveRun, ApiError> {
        let caller = Caller(paused.memo.key.caller.as_str().into());
        let ticket = state
            .admission
            .admit(&caller.scoped(&paused.session.id))
            .await?;
        let plan = match plan_resume(&paused.journal, true, Vec::new()) {
            Ok(Resumable::Unfinished { plan, .. }) => plan,
            Ok(Resumable::Finished { .. }) => {
                return Err(ApiError::conflict("the paused run already answered"))
            }
            Err(e) => return Err(ApiError::internal(lllm_core::full_message(&e))),
        };
        let mut memo = paused.memo;
        if let JournalPlan::Resume(journal) = plan.journal_plan() {
            record_given(journal, &paused.pending, &given)
                .map_err(|e| ApiError::internal(lllm_core::full_message(&e)))?;
        }
        if let Given::Turn(text) = given {
            memo.transcript.push(Entry::user(text));
        }
        let log = state.runs.new_log();
        let plan = plan.stream(stream).observer(log.observer());
        let handle = state.engine.start(model.tactic.clone(), plan);
        shown(
            state,
            model,
            (&paused.session, &caller),
            source,
            &handle,
            log,
        );
        memo.answer_ids = answer_ids;
        Ok(LiveRun {
            handle,
            ticket: Some(ticket),
            session: paused.session,
            model: model.id.clone(),
            secrets: model.tactic.secrets().clone(),
            held: Some(Held {
                runs: state.paused.clone(),
                journal: paused.journal,
                response: memo.answer_ids.as_ref().map(|ids| ids.response.clone()),
            }),
            memo: Some(memo),
            source: paused.source,
            hands: true,
        })
    }

    /// Keeps the conversation of a run that answered, or holds a run paused on the caller's calls
    /// until its results come, before its turn is handed on.
    fn ended(&mut self, outcome: &Outcome) {
        let memo = self.memo.take();
        match (outcome.as_ref(), memo, self.held.take()) {
            (Err(RunError::Paused { pending, .. }), Some(memo), Some(held)) => {
                held.runs.hold(PausedRun {
                    memo,
                    session: self.session.clone(),
                    source: self.source,
                    journal: held.journal,
                    pending: pending.clone(),
                    response: held.response,
                    paused_at: super::now(),
                });
            }
            (result, memo, held) => {
                if let (Ok(output), Some(memo)) = (result, memo) {
                    memo.keep(output);
                }
                if let Some(held) = held {
                    forget(&held.journal);
                }
            }
        }
        self.ticket.take();
    }

    /// Whether the run may hand calls to the caller (it was offered the caller's tools).
    pub(crate) fn hands_calls(&self) -> bool {
        self.hands
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
                Err(error) => match Handback::of(error).filter(|_| live.hands) {
                    Some(handback) => render(Step::Handed(handback)),
                    None => render(Step::Failed(&Failure::of(&live.secrets, error))),
                },
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
        // A run cancelled is continued by no request: its journal goes.
        if let Some(held) = self.held.take() {
            forget(&held.journal);
        }
        self.ticket.take();
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            // Dropped before it ended: the client went away. The turn is held until the run stopped.
            let handle = self.handle.clone();
            let held = self.held.take();
            tokio::spawn(async move {
                handle.cancel().await;
                if let Some(held) = held {
                    forget(&held.journal);
                }
                drop(ticket);
            });
        }
    }
}

/// The run paused on the caller's calls that a request with a new user message (`turn`) and no
/// results continues, when `model` takes the caller's tools: the one of the conversation `named`,
/// else the one whose transcript is the request's history.
pub(crate) fn paused_for_turn(
    state: &ServeState,
    model: &Model,
    (caller, named): (&Caller, &Named<'_>),
    turn: &Turn,
) -> Option<PausedRun> {
    if !model.tactic.takes_caller_tools() {
        return None;
    }
    let history = history_digest(
        &caller.0,
        &model.id,
        &turn.client_system,
        turn.seed.iter().map(|m| (m.role, m.text())),
    );
    state
        .paused
        .take_for_turn((&caller.0, &model.id), named, &history)
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

/// What the caller's next request gives a paused run.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Given<'a> {
    /// Results of the calls it was handed.
    Results(&'a [CallerResult]),
    /// A new user message and no results: the caller moved on.
    Turn(&'a str),
}

/// Records in `journal` what the caller gave for the `pending` calls: each call's result, or "not
/// run" for a call without one; a new user message follows the round of the first pending call,
/// in its dialog (the run's, or the fork's, that paused first).
fn record_given(
    journal: &Journal,
    pending: &[PendingCall],
    given: &Given<'_>,
) -> Result<(), JournalError> {
    let results = match given {
        Given::Results(results) => *results,
        Given::Turn(_) => &[],
    };
    let missing = match given {
        Given::Results(_) => "not run: the caller sent no result for this call",
        Given::Turn(_) => "not run: the caller sent a new message instead of this call's result",
    };
    for call in pending {
        match results.iter().find(|r| r.call == call.call) {
            Some(result) => journal.caller_result(call.dialog, &call.call, Ok(&result.output))?,
            None => journal.caller_result(call.dialog, &call.call, Err(missing))?,
        }
    }
    if let (Given::Turn(text), Some(first)) = (given, pending.first()) {
        journal.caller_turn(first.dialog, &first.call, text)?;
    }
    Ok(())
}
