//! Layers around an [`Invoker`]: what happens to every model call of an agent besides sending it.
//!
//! An agent sends through `Retrying<Traced<TimeLimited<I>>>`, composed once when it is built, so the
//! respond loop only decides *what* to ask (tool rounds, structured-output re-asks). Each layer resends
//! or watches the request it was given, so every attempt carries the dialog's own hints.
//!
//! The order matters: the timeout bounds one attempt; the trace sees one row per answered attempt, timed
//! from that attempt's start; retries wrap both, and make one `chat` span per attempt (see
//! `crate::telemetry`).

mod retrying;
mod time_limited;
mod traced;

use std::sync::Arc;

pub(crate) use retrying::Retrying;
pub(crate) use time_limited::TimeLimited;
pub(crate) use traced::Traced;

use crate::invoker::{Delta, Invoker};
use crate::retry::RetryPolicy;
use crate::telemetry::AgentFacts;
use crate::trace::TraceRecorder;

/// Where streamed pieces go, as [`Invoker::invoke_stream`] takes them.
pub(crate) type DeltaSink<'a> = dyn for<'d> FnMut(Delta<'d>) + Send + 'a;

/// The invoker stack of an agent.
pub(crate) type Stack = Retrying<Traced<TimeLimited<Arc<dyn Invoker>>>>;

/// Wraps `invoker` in the agent's layers.
pub(crate) fn stack(
    invoker: Arc<dyn Invoker>,
    retry: RetryPolicy,
    facts: AgentFacts,
    trace: Option<Arc<TraceRecorder>>,
) -> Stack {
    let traced = Traced::new(TimeLimited::new(invoker), &facts.agent, trace);
    Retrying::new(traced, retry).spans(facts)
}

#[cfg(test)]
mod tests;
