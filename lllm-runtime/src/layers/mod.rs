//! Layers around an [`Invoker`]: what happens to every model call of an agent besides sending it.
//!
//! An agent sends through
//! `Pausable<Budgeted<Journaled<Retrying<Admitted<Observed<Traced<TimeLimited<I>>>>>>>>`,
//! composed once when it is built, so the respond loop only decides *what* to ask (tool rounds, structured-output
//! re-asks). Each layer resends or watches the request it was given, so every attempt carries the
//! dialog's own hints.
//!
//! The order matters: the timeout bounds one attempt; the trace sees one row per answered attempt,
//! timed from that attempt's start; retries wrap both, and make one `chat` span per attempt (see
//! `crate::telemetry`); the retries also move a call on to the next fallback endpoint, so there is
//! one retry loop. Admission waits for a slot of the attempt's endpoint inside the retries (each
//! attempt waits again, holding nothing while it waits) and outside the trace and the timeout (the
//! trace times the request, not the wait, and records the wait beside it); the run's observer sees
//! each answered attempt where the trace does, so a console shows what the trace records. The journal sits outside the retries: an answer it holds is never sent again,
//! and an answer is journaled once, whatever it took to get. The budget is outermost: a request
//! answered from the journal counts against the run's limits as a sent one does, so a resumed run
//! spends what it replays. Outermost, a run that pauses for a confirmation sends nothing more.

mod admitted;
mod budgeted;
mod journaled;
mod observed;
mod pausable;
mod retrying;
mod time_limited;
mod traced;

use std::sync::Arc;

use async_trait::async_trait;

pub(crate) use admitted::Admitted;
pub(crate) use budgeted::Budgeted;
pub(crate) use journaled::Journaled;
pub(crate) use observed::Observed;
pub(crate) use pausable::Pausable;
pub(crate) use retrying::Retrying;
pub(crate) use time_limited::TimeLimited;
pub(crate) use traced::Traced;

use crate::budget::LimitReached;
use crate::endpoints::CallCounter;
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker};
use crate::journal::JournalError;
use crate::retry::RetryPolicy;
use crate::run_context::RunContext;
use crate::telemetry::AgentFacts;

/// Where streamed pieces go, as [`Invoker::invoke_stream`] takes them.
pub(crate) type DeltaSink<'a> = dyn for<'d> FnMut(Delta<'d>) + Send + 'a;

/// Why a call through the layers has no answer: the agent turns it into its own error kind.
#[derive(Debug)]
pub(crate) enum CallError {
    /// A limit of the run forbids the request.
    Limit(LimitReached),
    /// The journal cannot record the answer.
    Journal(JournalError),
    /// The run pauses for a confirmation (a call of `tool`): nothing more is sent.
    Paused {
        /// The tool whose call paused the run.
        tool: String,
    },
    /// The server did not answer, after `attempts` requests.
    Invoke {
        /// Requests sent.
        attempts: u32,
        /// The last failure.
        error: InvokeError,
    },
}

/// One model call as the respond loop makes it: sent through whatever layers the agent has, answered
/// or failed once.
#[async_trait]
pub(crate) trait Service: Send + Sync + std::fmt::Debug {
    /// Answers `request`, streaming to `sink` when there is one.
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<ChatResponse, CallError>;
}

/// The invoker stack of an agent.
pub(crate) type Stack = Pausable<
    Budgeted<Journaled<Retrying<Admitted<Observed<Traced<TimeLimited<Arc<dyn Invoker>>>>>>>>,
>;

/// Wraps `invoker` in the agent's layers: its retries, counted in `calls`, inside what its run
/// shares (`run`: the trace, observer, journal, budget and pause).
pub(crate) fn stack(
    invoker: Arc<dyn Invoker>,
    facts: AgentFacts,
    retry: RetryPolicy,
    calls: Arc<CallCounter>,
    run: &RunContext,
) -> Stack {
    let traced = Traced::new(TimeLimited::new(invoker), &facts.agent, run.trace.clone());
    let observed = Observed::new(traced, &facts.agent, run.observer.clone());
    let admitted = Admitted::new(observed, run.endpoints.clone());
    let retrying = Retrying::new(admitted, retry, run.endpoints.clone())
        .spans(facts)
        .counting(Some(calls));
    let journaled = Journaled::new(retrying, run.journal.clone());
    let budgeted = Budgeted::new(journaled, run.budget.clone());
    Pausable::new(budgeted, Some(run.pause.clone()))
}

#[cfg(test)]
mod tests;
