//! The end of a served run: its record written, its admission let go.

use std::sync::Arc;

use super::admission::Ticket;
use super::failure::Failure;
use super::store::{status_of, RunRecord, RunState, Stopped};
use super::Model;
use crate::engine::RunHandle;

/// Writes the run's record when it ends, and lets go of its admission (if it holds one) then.
/// `base`: the id of the run's event before the handle's first.
pub(crate) fn watch(
    model: &Model,
    record: Arc<RunRecord>,
    handle: RunHandle,
    base: u64,
    ticket: Option<Ticket>,
) {
    let secrets = model.tactic.secrets().clone();
    tokio::spawn(async move {
        let outcome = handle.wait().await;
        drop(ticket);
        let error = match outcome.as_ref() {
            Err(e) if !e.is_paused() => Some(Failure::of(&secrets, e).message),
            _ => None,
        };
        let status = status_of(&outcome);
        let last = base + handle.last_event_id();
        record.ended(status, error.clone(), last);
        if record.meta().source.is_some() {
            // A run that answered one request lets go of its handle, and the events it holds.
            let output = outcome.as_ref().as_ref().ok().map(|o| o.answer.clone());
            let stopped = Stopped {
                status,
                output,
                error,
                pending: Vec::new(),
            };
            record.set_state(RunState::Stopped { stopped, last });
        }
    });
}
