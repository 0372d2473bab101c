//! A run started in the background: its events as they come, its status, a way to cancel it, and
//! its result.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio::sync::watch;

use super::{Engine, PreparedTactic, RunError, RunOutput, RunPlan};
use crate::events::{RunEvent, RunObserver, RunStatus};
use crate::journal::{Journal, PendingCall};

/// Events a handle keeps for late subscribers; older ones are dropped (a subscriber that asks for
/// them gets what is left).
const KEPT_EVENTS: usize = 10_000;

/// An event with its number in the run (from 1), so that a subscriber can resume after the last one
/// it saw.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamedEvent {
    /// The event's number.
    pub id: u64,
    /// The event.
    pub event: RunEvent,
}

/// A run in the background, made by [`Engine::start`]. Dropping the handle does not stop the run;
/// [`cancel`](Self::cancel) does.
#[derive(Debug, Clone)]
pub struct RunHandle {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    log: Mutex<Log>,
    /// The number of the last event, and whether the run ended.
    latest: watch::Sender<(u64, bool)>,
    /// Set to ask the run to stop.
    cancel: watch::Sender<bool>,
    /// Set once the run's task is gone (ended, or dropped with the runtime).
    gone: watch::Sender<bool>,
}

/// Tells the handle the run's task is gone when dropped, however the task ends.
struct Gone(Arc<Shared>);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.gone.send_replace(true);
    }
}

#[derive(Debug)]
struct Log {
    events: VecDeque<StreamedEvent>,
    next: u64,
    status: RunStatus,
    outcome: Option<Arc<Result<RunOutput, RunError>>>,
    /// Set once the run ended, before its end shows: later events are dropped, so its last status
    /// gets the id [`BeforeEnd`] was told.
    ending: bool,
}

/// What must be done once a run ended and before its end shows, given the run's outcome and the id
/// its last status event gets: until it returns, the run's status, events and outcome are those of
/// a running run. A server writes its record of the run there, so that a client that saw the run
/// pause or end finds the record saying so, even after the server was killed.
pub type BeforeEnd = Box<dyn FnOnce(&Result<RunOutput, RunError>, u64) + Send>;

impl Engine {
    /// Starts `plan` on `tactic` in the background, on the current Tokio runtime, and returns its
    /// handle. The plan's own observer still sees every event.
    pub fn start(&self, tactic: Arc<PreparedTactic>, plan: RunPlan) -> RunHandle {
        self.start_with(tactic, plan, Box::new(|_, _| {}))
    }

    /// [`start`](Self::start), calling `before_end` once the run ended, before its end shows.
    pub fn start_with(
        &self,
        tactic: Arc<PreparedTactic>,
        plan: RunPlan,
        before_end: BeforeEnd,
    ) -> RunHandle {
        let shared = Arc::new(Shared {
            log: Mutex::new(Log {
                events: VecDeque::new(),
                next: 1,
                status: RunStatus::Queued,
                outcome: None,
                ending: false,
            }),
            latest: watch::channel((0, false)).0,
            cancel: watch::channel(false).0,
            gone: watch::channel(false).0,
        });
        let watcher = shared.clone();
        let outer = plan.observer.clone();
        let plan = plan.observer(RunObserver::new(move |event| {
            watcher.push(event.clone());
            if let Some(outer) = &outer {
                outer.notify(event);
            }
        }));
        let engine = self.clone();
        let runner = shared.clone();
        let gone = Gone(shared.clone());
        let mut cancel = shared.cancel.subscribe();
        let journal = plan.journal_path();
        tokio::spawn(async move {
            let _gone = gone;
            runner.push(RunEvent::Status(RunStatus::Running));
            let outcome = tokio::select! {
                outcome = engine.run(&tactic, plan) => Some(outcome),
                _ = cancel.wait_for(|asked| *asked) => None,
            };
            // A cancelled run's future is dropped by now: its requests are closed and its tools'
            // process groups killed, and it let go of its journal, which records the cancel.
            let outcome = outcome.unwrap_or_else(|| {
                // A run cancelled before its journal was created has none to write to.
                if let Some(path) = journal.filter(|path| path.exists()) {
                    if let Err(error) = Journal::record_cancel(&path) {
                        tracing::warn!(
                            "the journal does not record the cancel: {}",
                            lllm_core::full_message(&error)
                        );
                    }
                }
                Err(RunError::Cancelled)
            });
            runner.end(outcome, before_end);
        });
        RunHandle { shared }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, event: RunEvent) {
        let id = {
            let mut log = self.lock();
            if log.ending {
                return;
            }
            log.append(event)
        };
        self.latest.send_replace((id, false));
    }

    /// The run ended (answered, failed, paused or cancelled): `before_end`, then its last status and
    /// its outcome, shown together (a paused run shows its pending calls with its status).
    fn end(&self, outcome: Result<RunOutput, RunError>, before_end: BeforeEnd) {
        let status = match &outcome {
            Ok(_) => RunStatus::Completed,
            Err(e) if e.is_paused() => RunStatus::RequiresAction,
            Err(RunError::Cancelled) => RunStatus::Cancelled,
            Err(_) => RunStatus::Failed,
        };
        let next = {
            let mut log = self.lock();
            if log.ending {
                return;
            }
            log.ending = true;
            log.next
        };
        before_end(&outcome, next);
        let last = {
            let mut log = self.lock();
            let last = log.append(RunEvent::Status(status));
            log.outcome = Some(Arc::new(outcome));
            last
        };
        self.latest.send_replace((last, true));
    }
}

impl Log {
    /// Adds `event` (a status sets the run's), returning its id.
    fn append(&mut self, event: RunEvent) -> u64 {
        if let RunEvent::Status(status) = event {
            self.status = status;
        }
        let id = self.next;
        self.next += 1;
        self.events.push_back(StreamedEvent { id, event });
        if self.events.len() > KEPT_EVENTS {
            self.events.pop_front();
        }
        id
    }
}

impl RunHandle {
    /// Where the run is.
    pub fn status(&self) -> RunStatus {
        self.shared.lock().status
    }

    /// The run's result once it ended: its output, or why it has none.
    pub fn outcome(&self) -> Option<Arc<Result<RunOutput, RunError>>> {
        self.shared.lock().outcome.clone()
    }

    /// Waits for the run to end, and returns its result.
    pub async fn wait(&self) -> Arc<Result<RunOutput, RunError>> {
        let mut latest = self.shared.latest.subscribe();
        loop {
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            if latest.changed().await.is_err() {
                if let Some(outcome) = self.outcome() {
                    return outcome;
                }
                return Arc::new(Err(RunError::Cancelled));
            }
        }
    }

    /// Where the run is and the number of its latest event (0 before the first), read together:
    /// each status is an event, so the number changes whenever the status does.
    pub fn status_and_latest(&self) -> (RunStatus, u64) {
        let log = self.shared.lock();
        (log.status, log.next - 1)
    }

    /// The number of the run's latest event (0 before the first).
    pub fn last_event_id(&self) -> u64 {
        self.shared.latest.borrow().0
    }

    /// The calls that wait for a confirmation, when the run paused.
    pub fn pending(&self) -> Vec<PendingCall> {
        match self.outcome().as_deref() {
            Some(Err(RunError::Paused { pending, .. })) => pending.clone(),
            _ => Vec::new(),
        }
    }

    /// Stops the run and returns once it stopped: its requests are closed, its tool calls dropped
    /// (a command tool's process group killed), its journal records the cancel, and only then its
    /// status becomes `cancelled`. A run that already ended is left as it is.
    pub async fn cancel(&self) {
        self.shared.cancel.send_replace(true);
        let mut gone = self.shared.gone.subscribe();
        // The sender lives in `shared`, which this handle holds: the wait ends when the task does.
        let _ = gone.wait_for(|gone| *gone).await;
    }

    /// The run's events after the `after`-th (0: from the first still kept), then each new one as it
    /// happens; the stream ends after the run's last event.
    pub fn events(&self, after: u64) -> impl Stream<Item = StreamedEvent> + Send + 'static {
        let shared = self.shared.clone();
        let latest = shared.latest.subscribe();
        futures::stream::unfold(
            (shared, latest, after, VecDeque::new()),
            |(shared, mut latest, mut seen, mut ready)| async move {
                loop {
                    if let Some(event) = ready.pop_front() {
                        let event: StreamedEvent = event;
                        seen = event.id;
                        return Some((event, (shared, latest, seen, ready)));
                    }
                    let ended = {
                        let log = shared.lock();
                        ready.extend(log.events.iter().filter(|e| e.id > seen).cloned());
                        log.outcome.is_some()
                    };
                    if !ready.is_empty() {
                        continue;
                    }
                    if ended || latest.changed().await.is_err() {
                        return None;
                    }
                }
            },
        )
    }
}
