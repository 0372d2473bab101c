//! Where the recording layer writes each attempt: the run's trace, its observer, and the agent's
//! call counts.

use std::sync::Arc;
use std::time::Duration;

use crate::endpoints::CallCounter;
use crate::events::{ModelCall, RunEvent, RunObserver};
use crate::invoker::ChatRequest;
use crate::run_context::RunContext;
use crate::trace::{Answered, TraceRecorder};

/// What is told about each attempt of a model call.
pub(crate) trait Sink: Send + Sync + std::fmt::Debug {
    /// The attempt was answered.
    fn answered(&self, answered: &Answered<'_>);

    /// The attempt failed, after waiting `queue_wait` for a slot.
    fn failed(&self, request: &ChatRequest, queue_wait: Duration) {
        let _ = (request, queue_wait);
    }
}

/// The sinks of an agent of `run`: the run's trace and observer when it has them, and `calls`.
pub(crate) fn of(run: &RunContext, calls: Arc<CallCounter>) -> Vec<Arc<dyn Sink>> {
    let mut sinks: Vec<Arc<dyn Sink>> = Vec::with_capacity(3);
    if let Some(trace) = &run.trace {
        sinks.push(trace.clone());
    }
    if let Some(observer) = &run.observer {
        sinks.push(Arc::new(Observer(observer.clone())));
    }
    sinks.push(calls);
    sinks
}

/// A row of the trace per answered attempt.
impl Sink for TraceRecorder {
    fn answered(&self, answered: &Answered<'_>) {
        self.record(answered);
    }
}

/// Endpoints answering, fallbacks, hops and waits.
impl Sink for CallCounter {
    fn answered(&self, answered: &Answered<'_>) {
        let request = answered.request;
        let endpoint = request.endpoint().unwrap_or_else(|| "default".to_owned());
        self.count(|c| {
            c.hops += u64::from(request.notes.moved);
            c.queue_wait += answered.queue_wait;
            *c.answered_by.entry(endpoint).or_default() += 1;
            if request.notes.hop > 0 {
                c.fallback_answers += 1;
            }
        });
    }

    fn failed(&self, request: &ChatRequest, queue_wait: Duration) {
        self.count(|c| {
            c.hops += u64::from(request.notes.moved);
            c.queue_wait += queue_wait;
        });
    }
}

/// A [`RunEvent::ModelCall`] per answered attempt, with the hints the request carried as sent and
/// what the server said of its tokens and worker.
#[derive(Debug)]
struct Observer(RunObserver);

impl Sink for Observer {
    fn answered(&self, answered: &Answered<'_>) {
        let (request, response) = (answered.request, answered.response);
        let hints = request.sent_hints();
        let (session, parent_session) = request.recorded_sessions();
        let notes = &request.notes;
        self.0.notify(&RunEvent::ModelCall(Box::new(ModelCall {
            agent: answered.agent.to_owned(),
            alias: notes.dialog_alias.clone(),
            dialog: notes.dialog,
            parent_dialog: notes.parent_dialog,
            session,
            parent_session,
            priority: hints.wire.priority,
            tier: hints
                .wire
                .strict_priority
                .unwrap_or(u64::from(notes.urgency.tier)),
            usage: response.message.usage,
            worker: response.worker.clone(),
            hop: notes.hop,
            window: notes.window,
            queue_wait: answered.queue_wait,
            took: answered.sent.elapsed(),
            at: std::time::SystemTime::now(),
        })));
    }
}
