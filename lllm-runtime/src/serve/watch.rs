//! The end of a served run: its record written, its admission let go.

use std::sync::Arc;

use super::admission::Ticket;
use super::failure::Failure;
use super::store::{status_of, RunRecord, RunState, Stopped};
use super::Model;
use crate::engine::{BeforeEnd, Engine, RunError, RunHandle, RunPlan};

/// Starts `plan` as the run of `record` (of `/v1/runs`), its events numbered after `base` (those
/// of its earlier parts). When it ends, its record is written with its status and the id of its
/// last event, and its admission let go, before its end shows: a client that saw it pause or end
/// finds the record saying so, even after the server was killed.
pub(crate) fn start_recorded(
    engine: &Engine,
    model: &Model,
    record: &Arc<RunRecord>,
    plan: RunPlan,
    base: u64,
    ticket: Ticket,
) -> RunHandle {
    let secrets = model.tactic.secrets().clone();
    let ending = record.clone();
    let before_end: BeforeEnd = Box::new(move |outcome, last| {
        drop(ticket);
        if let Err(RunError::Paused { pending, .. }) = outcome {
            ending.note_sources(pending);
        }
        let error = match outcome {
            Err(e) if !e.is_paused() => Some(Failure::of(&secrets, e).message),
            _ => None,
        };
        ending.ended(status_of(outcome), error, base + last);
    });
    let handle = engine.start_with(model.tactic.clone(), plan, before_end);
    record.set_state(RunState::Live {
        handle: handle.clone(),
        base,
    });
    // The record changed before the end showed: the console hears of the end again once it shows.
    let (shown, log) = (handle.clone(), record.log.clone());
    tokio::spawn(async move {
        shown.wait().await;
        log.touch();
    });
    handle
}

/// Notes the end of a run that answered one request (kept in memory only), and lets go of its
/// handle and the events it holds then.
pub(crate) fn watch(model: &Model, record: Arc<RunRecord>, handle: RunHandle) {
    let secrets = model.tactic.secrets().clone();
    tokio::spawn(async move {
        let outcome = handle.wait().await;
        let error = match outcome.as_ref() {
            Err(e) if !e.is_paused() => Some(Failure::of(&secrets, e).message),
            _ => None,
        };
        let status = status_of(&outcome);
        let last = handle.last_event_id();
        record.ended(status, error.clone(), last);
        let output = outcome.as_ref().as_ref().ok().map(|o| o.answer.clone());
        let stopped = Stopped {
            status,
            output,
            error,
            pending: Vec::new(),
        };
        record.set_state(RunState::Stopped { stopped, last });
    });
}
