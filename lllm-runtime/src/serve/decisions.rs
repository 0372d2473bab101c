//! The decisions about a run: `POST /v1/runs/{id}/approval` and `/cancel`. They are taken one at a
//! time per run (a lock per run id, held from reading where the run is to changing it), so an
//! approval and a cancel sent at the same instant cannot both act on a waiting run: the first
//! decides, and the second sees what the first did. A cancel that finds the run ended otherwise
//! answers 409 with the run, whose status says how it ended.

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

use super::auth::Caller;
use super::body::read_body;
use super::error::ApiError;
use super::input::parse_body;
use super::questions::{NotTaken, Reply};
use super::runs::{record, view};
use super::store::{RunRecord, RunState, Stopped};
use super::watch::start_recorded;
use super::ServeState;
use crate::engine::{plan_resume, Resumable};
use crate::events::RunStatus;
use crate::journal::PendingCall;
use crate::tools::{Decision, Decisions};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Approval {
    decision: Verdict,
    #[serde(default)]
    calls: Option<Vec<String>>,
    /// The answer to the run's question (its form's fields).
    #[serde(default)]
    content: Option<Value>,
    /// The id of the question answered (`question.id` of the run), so that an answer meant for
    /// one question (or for the calls) never answers another that came since.
    #[serde(default)]
    question: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    Approve,
    Reject,
}

/// `POST /v1/runs/{id}/cancel`: returns once the run stopped and its journal records it.
pub(crate) async fn cancel(
    State(state): State<Arc<ServeState>>,
    caller: Option<axum::Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = record(&state, &Caller::of(caller), &id)?;
    let _deciding = state.decisions.lock(&id).await;
    let cancelled = match record.state() {
        RunState::Live { handle, base } => {
            let running = handle.outcome().is_none();
            if running {
                handle.cancel().await;
            }
            match handle.status() {
                // Paused, before the cancel or as it came: nothing runs, and it waits no more.
                RunStatus::RequiresAction => {
                    stop_waiting(&record, base + handle.last_event_id())?;
                    true
                }
                // By this cancel, unless it was cancelled before.
                RunStatus::Cancelled => running,
                _ => false,
            }
        }
        RunState::Stopped { stopped, last } if stopped.status == RunStatus::RequiresAction => {
            stop_waiting(&record, last)?;
            true
        }
        RunState::Stopped { .. } => false,
    };
    let run = view(&state, &record).0;
    if cancelled {
        return Ok(Json(run));
    }
    let status = run["status"].as_str().unwrap_or("ended").to_owned();
    Err(ApiError::conflict(format!("the run already ended ({status})")).with_run(run))
}

/// Cancels a run that waits for a confirmation: nothing runs; its journal records the cancel. Its
/// status is a new event, after the one of id `last`.
fn stop_waiting(record: &RunRecord, last: u64) -> Result<(), ApiError> {
    if let Some(journal) = &record.journal {
        crate::journal::Journal::record_cancel(journal)
            .map_err(|e| ApiError::internal(lllm_core::full_message(&e)))?;
    }
    let stopped = Stopped {
        status: RunStatus::Cancelled,
        output: None,
        error: None,
        pending: Vec::new(),
    };
    record.set_state(RunState::Stopped {
        stopped,
        last: last + 1,
    });
    record.ended(RunStatus::Cancelled, None, last + 1);
    Ok(())
}

/// `POST /v1/runs/{id}/approval`: approves or rejects the pending calls (all, or those named) and
/// continues the run from its journal.
pub(crate) async fn approve(
    State(state): State<Arc<ServeState>>,
    caller: Option<axum::Extension<Caller>>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let approval: Approval = parse_body(&read_body(&state, body).await?)?;
    let record = record(&state, &Caller::of(caller), &id)?;
    let _deciding = state.decisions.lock(&id).await;
    let conflict = |message: String| ApiError::conflict(message).with_run(view(&state, &record).0);
    if let Some(answered) = answer_question(&state, &record, &approval)? {
        return Ok(answered);
    }
    if let Some(question) = &approval.question {
        return Err(conflict(format!(
            "`question`: `{}` does not wait any more: the run asks no question now",
            super::shorten(question)
        )));
    }
    if approval.content.is_some() {
        return Err(conflict(
            "the run asks no question: `content` answers one".into(),
        ));
    }
    let (pending, base) = match record.state() {
        // Its status shows with its outcome, which holds the pending calls.
        RunState::Live { handle, base } if handle.status() == RunStatus::RequiresAction => {
            (handle.pending(), base + handle.last_event_id())
        }
        // Numbered on after its status event, which a restarted server numbers as its record says.
        RunState::Stopped { stopped, last } if stopped.status == RunStatus::RequiresAction => {
            (stopped.pending, last)
        }
        _ => return Err(conflict("the run does not wait for an approval".into())),
    };
    let decisions = decisions(&approval, &pending)?;
    let meta = record.meta();
    let model = state.model(&meta.model)?;
    let journal = record
        .journal
        .clone()
        .ok_or_else(|| conflict("the run has no journal to continue from".into()))?;
    let plan = match plan_resume(&journal, false, Vec::new()) {
        Ok(Resumable::Unfinished { plan, .. }) => plan,
        Ok(Resumable::Finished { .. }) => return Err(conflict("the run already ended".into())),
        Err(e) => return Err(conflict(lllm_core::full_message(&e))),
    };
    // The conversation's turn among its caller's, as the run that started it took it.
    let caller = Caller(meta.caller.as_deref().unwrap_or_default().into());
    let ticket = state.admission.admit(&caller.scoped(&meta.session)).await?;
    record
        .continues(base)
        .map_err(|e| ApiError::internal(format!("the run's record cannot be written: {e}")))?;
    let plan = plan
        .confirm(record.log.confirm(decisions))
        .observer(record.log.observer())
        .stream(true);
    start_recorded(&state.engine, model, &record, plan, base, ticket);
    Ok(view(&state, &record))
}

/// Answers the question the run waits on, if it waits on one: `approve` with the form's `content`,
/// `reject` to decline it.
fn answer_question(
    state: &ServeState,
    record: &RunRecord,
    approval: &Approval,
) -> Result<Option<Json<Value>>, ApiError> {
    let Some(shown) = record.log.questions.shown() else {
        return Ok(None);
    };
    let waiting = shown["id"].as_str().unwrap_or_default();
    if let Some(question) = approval.question.as_deref().filter(|q| *q != waiting) {
        return Err(ApiError::conflict(format!(
            "`question`: `{}` does not wait any more; the run now asks `{waiting}`",
            super::shorten(question)
        ))
        .with_run(view(state, record).0));
    }
    if approval.calls.is_some() {
        return Err(ApiError::invalid(
            "`calls`: the run waits on a question, not on calls; answer it with `content`",
        )
        .param("calls"));
    }
    let reply = match approval.decision {
        Verdict::Approve => Reply::Approve,
        Verdict::Reject => Reply::Reject,
    };
    match record.log.questions.answer(reply, approval.content.clone()) {
        Ok(()) => Ok(Some(view(state, record))),
        // Answered or gone between the look and the answer: as if it had not waited.
        Err(NotTaken::NoQuestion) => Ok(None),
        Err(NotTaken::Invalid(why)) => Err(ApiError::invalid(why).param("content")),
    }
}

/// The decisions of `approval` over the `pending` calls.
fn decisions(approval: &Approval, pending: &[PendingCall]) -> Result<Decisions, ApiError> {
    let decision = match approval.decision {
        Verdict::Approve => Decision::Approve,
        Verdict::Reject => Decision::Decline,
    };
    let known: HashSet<&str> = pending.iter().map(|p| p.call.as_str()).collect();
    let named: Vec<&str> = match &approval.calls {
        Some(calls) => calls.iter().map(String::as_str).collect(),
        None => known.iter().copied().collect(),
    };
    if let Some(unknown) = named.iter().find(|c| !known.contains(*c)) {
        return Err(ApiError::invalid(format!(
            "`calls`: `{}` is not a pending call of the run (pending: {})",
            super::shorten(unknown),
            pending
                .iter()
                .map(|p| p.call.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(named
        .into_iter()
        .fold(Decisions::new(), |d, call| d.decide(call, decision)))
}
