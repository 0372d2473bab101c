//! Layers around an [`Invoker`]: what happens to every model call of an agent besides sending it.
//!
//! An agent sends through
//! `Pausable<Budgeted<Journaled<Retrying<Recorded<Admitted<TimeLimited<Arc<dyn Invoker>>>>>>>>`,
//! composed once when it is built, so the respond loop only decides *what* to ask (tool rounds,
//! structured-output re-asks). Every layer is one [`Service`]: it answers a request, streaming to
//! a sink when there is one, so each is written once for both ways of sending; the invoker at the
//! bottom is adapted to it. Each layer resends or watches the request it was given, so every
//! attempt carries the dialog's own hints.
//!
//! The order matters: the timeout bounds one attempt's HTTP request; admission waits for a slot of
//! the attempt's endpoint outside it (holding nothing while it waits) and tells the endpoint's
//! breaker how the attempt went; the recording layer sees each attempt from outside the wait, in
//! its own `chat` span (the `queue` span inside it), and writes each answered one to the run's
//! sinks (trace, observer, call counts), timed from when it was sent, its wait beside it. The
//! retries wrap all of that, in one loop whose policies decide what is sent next: the same request
//! after a backoff, or the request rewritten for the next fallback endpoint. The journal sits
//! outside the retries: an answer it holds is never sent again, and an answer is journaled once,
//! whatever it took to get. The budget is outermost: a request answered from the journal counts
//! against the run's limits as a sent one does, so a resumed run spends what it replays.
//! Outermost, a run that pauses for a confirmation sends nothing more.

mod admitted;
mod budgeted;
mod fallback_hop;
mod journaled;
mod pausable;
mod policy;
mod recorded;
mod retrying;
mod service;
mod sinks;
mod time_limited;

use std::sync::Arc;

pub(crate) use admitted::Admitted;
pub(crate) use budgeted::Budgeted;
pub(crate) use journaled::Journaled;
pub(crate) use pausable::Pausable;
pub(crate) use recorded::Recorded;
pub(crate) use retrying::Retrying;
pub(crate) use service::{CallError, DeltaSink, Reply, Service};
pub(crate) use time_limited::TimeLimited;

use crate::endpoints::CallCounter;
use crate::invoker::Invoker;
use crate::retry::RetryPolicy;
use crate::run_context::RunContext;
use crate::telemetry::AgentFacts;

/// The invoker stack of an agent.
pub(crate) type Stack =
    Pausable<Budgeted<Journaled<Retrying<Recorded<Admitted<TimeLimited<Arc<dyn Invoker>>>>>>>>;

/// Wraps `invoker` in the agent's layers: its retries, recorded in its spans and `calls`, inside
/// what its run shares (`run`: the endpoints' state, trace, observer, journal, budget and pause).
pub(crate) fn stack(
    invoker: Arc<dyn Invoker>,
    facts: AgentFacts,
    retry: RetryPolicy,
    calls: Arc<CallCounter>,
    run: &RunContext,
) -> Stack {
    let admitted = Admitted::new(TimeLimited::new(invoker), run.endpoints.clone());
    let recorded = Recorded::new(admitted, facts, sinks::of(run, calls));
    let retrying = Retrying::new(recorded, retry, run.endpoints.clone());
    let journaled = Journaled::new(retrying, run.journal.clone());
    let budgeted = Budgeted::new(journaled, run.budget.clone());
    Pausable::new(budgeted, Some(run.pause.clone()))
}

#[cfg(test)]
mod tests;
