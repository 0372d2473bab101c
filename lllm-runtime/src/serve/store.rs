//! The runs of `/v1/runs`: in memory while the server runs, and under the state directory (a record
//! and a journal per run), so that a server started again serves their status and continues a
//! waiting run on approval.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::files::{create_private_dir, private_file};
use super::log::{Changes, RunLog};
use super::ServeError;
use crate::engine::{RunError, RunHandle};
use crate::events::RunStatus;
use crate::journal::{Journal, PendingCall};

/// Runs kept in memory; past it, the oldest ended ones are forgotten (their files stay).
const KEPT_RUNS: usize = 10_000;
/// Ended runs that answered one request (a chat completion, a response) kept for the console: they
/// never push out the runs of `/v1/runs`.
const KEPT_REQUEST_RUNS: usize = 1_000;
/// The largest run record read back.
const MAX_RECORD_BYTES: u64 = 64 * 1024;
/// How far past its record's `last_event` a run read back that was running shows its status: the
/// server that ran it may have numbered events after the record was written, never this many.
const LOST_EVENTS: u64 = 1 << 32;

/// What is written of a run beside its journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunMeta {
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) created: u64,
    /// When it was created, in nanoseconds since the Unix epoch, made unique and increasing by the
    /// store (0 until it adds the run; a record of an earlier version has none): the list's order,
    /// finer than `created`'s seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) created_ns: u64,
    pub(crate) session: String,
    /// Whose run it is: the digest of the serve key that started it (none without a key). Another
    /// key's requests never see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caller: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idempotency: Option<(String, String)>,
    /// The API that started it, when not `/v1/runs` (`chat.completions`, `responses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) source: Option<String>,
    /// The final status, once the run ended for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// The id of the run's latest event when the record was written, so that a server started
    /// again numbers the run's later events after it (ids grow for the life of a run).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) last_event: u64,
    /// Whether the run was running when the record was written (started, or continued after an
    /// approval): its server may have numbered events after `last_event`, how many the record
    /// cannot say. A pause or an end writes the record again, before it shows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) running: bool,
    /// Where the tools of the calls a paused run waits for come from: noted by this process's
    /// log when the run asked, kept here for a server started again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sources: Vec<CallSource>,
}

/// Where the tool of one pending call comes from (`command`, `mcp:NAME`, ...).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CallSource {
    pub(crate) agent: Option<String>,
    pub(crate) call: String,
    pub(crate) source: String,
}

impl RunMeta {
    /// Where the tool of `agent`'s pending call `call` comes from, as the record keeps it.
    pub(crate) fn source_of(&self, agent: Option<&str>, call: &str) -> Option<String> {
        self.sources
            .iter()
            .find(|s| s.agent.as_deref() == agent && s.call == call)
            .map(|s| s.source.clone())
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A run that is not running: how it ended, or what it waits for.
#[derive(Debug, Clone)]
pub(crate) struct Stopped {
    pub(crate) status: RunStatus,
    pub(crate) output: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) pending: Vec<PendingCall>,
}

/// Where a run is.
#[derive(Debug, Clone)]
pub(crate) enum RunState {
    /// Started by this server: its handle (its events numbered after `base`).
    Live { handle: RunHandle, base: u64 },
    /// Ended, waiting after a restart, or cancelled while waiting: shown as one status event, whose
    /// id is `last`.
    Stopped { stopped: Stopped, last: u64 },
}

/// One run.
#[derive(Debug)]
pub(crate) struct RunRecord {
    pub(crate) meta: Mutex<RunMeta>,
    pub(crate) state: Mutex<RunState>,
    pub(crate) journal: Option<PathBuf>,
    /// What the console shows of it.
    pub(crate) log: Arc<RunLog>,
    /// Whether an earlier server started it: its log holds what happened since this one did.
    pub(crate) read_back: bool,
    dir: Option<PathBuf>,
    /// Held while the record is changed and written.
    writing: Mutex<()>,
}

impl RunRecord {
    /// Whether `caller` (a key's digest, empty without a key) started the run.
    pub(crate) fn is_of(&self, caller: &str) -> bool {
        self.meta().caller.as_deref().unwrap_or("") == caller
    }

    pub(crate) fn meta(&self) -> RunMeta {
        self.meta.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the run ended for good (its record has its final status).
    fn has_ended(&self) -> bool {
        self.meta
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .status
            .is_some()
    }

    pub(crate) fn state(&self) -> RunState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set_state(&self, state: RunState) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = state;
        self.log.touch();
    }

    /// Records where the run stopped beside its journal: its final status (and error), or none when
    /// it waits, and `last_event`, the id of its latest event. A final status stays: the watcher of
    /// a paused run may report the pause after a cancel ended the run.
    pub(crate) fn ended(&self, status: RunStatus, error: Option<String>, last_event: u64) {
        let written = self.change(|meta| {
            if meta.status.is_some() {
                return false;
            }
            meta.status = status.is_final().then(|| status.as_str().to_owned());
            meta.error = error;
            meta.last_event = meta.last_event.max(last_event);
            meta.running = false;
            true
        });
        if let Err(e) = written {
            tracing::warn!("the record of run {} was not written: {e}", self.meta().id);
        }
    }

    /// Notes where the tools of the `pending` calls come from, as this process's log noted them,
    /// for the record the pause writes next (a server started again has no such log).
    pub(crate) fn note_sources(&self, pending: &[PendingCall]) {
        let sources = pending
            .iter()
            .filter_map(|p| {
                Some(CallSource {
                    source: self.log.source(p.agent.as_deref(), &p.call)?,
                    agent: p.agent.clone(),
                    call: p.call.clone(),
                })
            })
            .collect();
        self.meta.lock().unwrap_or_else(|p| p.into_inner()).sources = sources;
    }

    /// Records that the run runs again after its event `last_event` (an approval continues it),
    /// before it does.
    pub(crate) fn continues(&self, last_event: u64) -> std::io::Result<()> {
        self.change(|meta| {
            meta.last_event = meta.last_event.max(last_event);
            meta.running = true;
            true
        })
    }

    /// Changes the record by `change` (which says whether it did) and writes it. One change and its
    /// write at a time, so that the file holds the latest change; readers of the record do not wait
    /// for the write.
    fn change(&self, change: impl FnOnce(&mut RunMeta) -> bool) -> std::io::Result<()> {
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let meta = {
            let mut meta = self.meta.lock().unwrap_or_else(|p| p.into_inner());
            if !change(&mut meta) {
                return Ok(());
            }
            meta.clone()
        };
        self.log.touch();
        match &self.dir {
            Some(dir) => write_meta(dir, &meta),
            None => Ok(()),
        }
    }
}

/// Every run this server knows.
#[derive(Debug)]
pub(crate) struct RunStore {
    dir: Option<PathBuf>,
    runs: Mutex<HashMap<String, Arc<RunRecord>>>,
    /// The ids of the runs that answered one request, oldest first.
    request_runs: Mutex<VecDeque<String>>,
    changes: Changes,
    /// The latest `created_ns` given.
    latest_created: Mutex<u64>,
}

impl RunStore {
    /// The store under `dir` (`runs/` in it), with the runs an earlier server left there.
    pub(crate) fn open(dir: Option<PathBuf>) -> Result<Self, ServeError> {
        let Some(dir) = dir else {
            return Ok(RunStore {
                dir: None,
                runs: Mutex::default(),
                request_runs: Mutex::default(),
                changes: Changes::default(),
                latest_created: Mutex::default(),
            });
        };
        let runs_dir = dir.join("runs");
        create_private_dir(&runs_dir).map_err(|source| ServeError::State {
            path: runs_dir.clone(),
            source,
        })?;
        let mut runs = HashMap::new();
        let changes = Changes::default();
        let entries = std::fs::read_dir(&runs_dir).map_err(|source| ServeError::State {
            path: runs_dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                match read_back(&runs_dir, &path, &changes) {
                    Ok(record) => {
                        runs.insert(record.meta().id.clone(), Arc::new(record));
                    }
                    Err(problem) => {
                        tracing::warn!("skipped the run record {}: {problem}", path.display())
                    }
                }
            }
        }
        let latest = runs.values().map(|r| order_key(&r.meta())).max();
        Ok(RunStore {
            dir: Some(runs_dir),
            runs: Mutex::new(runs),
            request_runs: Mutex::default(),
            changes,
            latest_created: Mutex::new(latest.unwrap_or(0)),
        })
    }

    /// A log for a new run, whose changes this store's watchers hear of.
    pub(crate) fn new_log(&self) -> Arc<RunLog> {
        RunLog::new(self.changes.clone())
    }

    /// Wakes on every change of any run.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The runs, newest first, at most `limit`.
    pub(crate) fn newest(&self, limit: usize, caller: &str) -> Vec<Arc<RunRecord>> {
        let mut runs: Vec<(u64, String, Arc<RunRecord>)> = self
            .lock()
            .values()
            .filter(|r| r.is_of(caller))
            .map(|r| {
                let meta = r.meta();
                (order_key(&meta), meta.id, r.clone())
            })
            .collect();
        runs.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        runs.into_iter().take(limit).map(|(_, _, r)| r).collect()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<RunRecord>> {
        self.lock().get(id).cloned()
    }

    /// The run `caller` started with idempotency key `key`, if any.
    pub(crate) fn by_key(&self, caller: &str, key: &str) -> Option<Arc<RunRecord>> {
        self.lock()
            .values()
            .filter(|r| r.is_of(caller))
            .find(|r| r.meta().idempotency.as_ref().is_some_and(|(k, _)| k == key))
            .cloned()
    }

    /// Where a new run's journal goes (none without a state directory).
    pub(crate) fn journal_for(&self, id: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|dir| dir.join(format!("{id}.journal")))
    }

    /// A creation time for a new run: now in nanoseconds, after every one given before (a clock
    /// that stepped back, or two runs in one nanosecond, never reorder the list).
    fn next_created(&self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let mut latest = self
            .latest_created
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *latest = now.max(latest.saturating_add(1));
        *latest
    }

    /// Adds a run, writing its record.
    pub(crate) fn add(
        &self,
        mut meta: RunMeta,
        state: RunState,
        log: Arc<RunLog>,
    ) -> Result<Arc<RunRecord>, String> {
        meta.created_ns = self.next_created();
        if let Some(dir) = &self.dir {
            write_meta(dir, &meta)
                .map_err(|e| format!("the run's record cannot be written: {e}"))?;
        }
        let record = Arc::new(RunRecord {
            journal: self.journal_for(&meta.id),
            meta: Mutex::new(meta),
            state: Mutex::new(state),
            log,
            read_back: false,
            dir: self.dir.clone(),
            writing: Mutex::default(),
        });
        Ok(self.insert(record))
    }

    /// Adds a run that answers one request (a chat completion, a response): kept in memory for
    /// the console, never written (its conversation is the client's to keep).
    pub(crate) fn add_in_memory(
        &self,
        mut meta: RunMeta,
        state: RunState,
        log: Arc<RunLog>,
    ) -> Arc<RunRecord> {
        meta.created_ns = self.next_created();
        self.insert(Arc::new(RunRecord {
            journal: None,
            meta: Mutex::new(meta),
            state: Mutex::new(state),
            log,
            read_back: false,
            dir: None,
            writing: Mutex::default(),
        }))
    }

    fn insert(&self, record: Arc<RunRecord>) -> Arc<RunRecord> {
        {
            let (id, answers_a_request) = {
                let meta = record.meta.lock().unwrap_or_else(|p| p.into_inner());
                (meta.id.clone(), meta.source.is_some())
            };
            let mut runs = self.lock();
            runs.insert(id.clone(), record.clone());
            if answers_a_request {
                let mut order = self.request_runs.lock().unwrap_or_else(|p| p.into_inner());
                order.push_back(id);
                forget_request_runs(&mut runs, &mut order);
            }
            forget_oldest_ended(&mut runs);
        }
        self.changes.bump();
        record
    }

    /// Cancels every live run.
    pub(crate) async fn cancel_all(&self) {
        let live: Vec<RunHandle> = self
            .lock()
            .values()
            .filter_map(|r| match r.state() {
                RunState::Live { handle, .. } => Some(handle),
                RunState::Stopped { .. } => None,
            })
            .collect();
        futures::future::join_all(live.iter().map(RunHandle::cancel)).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<RunRecord>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a run goes in the list: its creation in nanoseconds (a record without one: its second).
fn order_key(meta: &RunMeta) -> u64 {
    match meta.created_ns {
        0 => meta.created.saturating_mul(1_000_000_000),
        ns => ns,
    }
}

fn forget_oldest_ended(runs: &mut HashMap<String, Arc<RunRecord>>) {
    while runs.len() > KEPT_RUNS {
        let oldest = runs
            .iter()
            .filter(|(_, r)| r.meta().status.is_some())
            .min_by_key(|(_, r)| order_key(&r.meta()))
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => runs.remove(&id),
            None => break,
        };
    }
}

/// Forgets the oldest ended runs that answered one request, past [`KEPT_REQUEST_RUNS`]; `order`
/// holds their ids, oldest first (one still running goes to the back).
fn forget_request_runs(runs: &mut HashMap<String, Arc<RunRecord>>, order: &mut VecDeque<String>) {
    let mut looked = 0;
    while order.len() > KEPT_REQUEST_RUNS && looked < order.len() {
        let Some(id) = order.pop_front() else { break };
        match runs.get(&id) {
            Some(run) if !run.has_ended() => {
                order.push_back(id);
                looked += 1;
            }
            _ => {
                runs.remove(&id);
            }
        }
    }
}

/// A run an earlier server left: its record, and where its journal says it is.
fn read_back(dir: &Path, path: &Path, changes: &Changes) -> Result<RunRecord, String> {
    let bytes =
        lllm_core::read_regular(path, MAX_RECORD_BYTES).map_err(|e| lllm_core::full_message(&e))?;
    let meta: RunMeta = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    if !is_run_id(&meta.id) || path.file_stem().and_then(|s| s.to_str()) != Some(meta.id.as_str()) {
        return Err("its id does not match its file name".into());
    }
    let journal = dir.join(format!("{}.journal", meta.id));
    let stopped = stopped_from(&meta, &journal);
    // Its status is its latest event, shown again under the same id (1 for a record that has none);
    // past any id its server may have given, when it was running.
    let last = if meta.running {
        meta.last_event.saturating_add(LOST_EVENTS)
    } else {
        meta.last_event.max(1)
    };
    Ok(RunRecord {
        meta: Mutex::new(meta),
        state: Mutex::new(RunState::Stopped { stopped, last }),
        journal: Some(journal),
        log: RunLog::new(changes.clone()),
        read_back: true,
        dir: Some(dir.to_owned()),
        writing: Mutex::default(),
    })
}

/// Where a run read back is: its record's final status, else what its journal holds.
fn stopped_from(meta: &RunMeta, journal: &Path) -> Stopped {
    let mut stopped = Stopped {
        status: RunStatus::Failed,
        output: None,
        error: meta.error.clone(),
        pending: Vec::new(),
    };
    let read = Journal::resume(journal);
    if let Ok(journal) = &read {
        stopped.output = journal.finished();
    }
    stopped.status = match (meta.status.as_deref(), &read) {
        (Some("completed"), _) => RunStatus::Completed,
        (Some("cancelled"), _) => RunStatus::Cancelled,
        (Some(_), _) => RunStatus::Failed,
        (None, Ok(j)) if j.finished().is_some() => RunStatus::Completed,
        (None, Ok(j)) if j.was_cancelled() => RunStatus::Cancelled,
        (None, Ok(j)) if !j.pending_calls().is_empty() => {
            stopped.pending = j.pending_calls();
            RunStatus::RequiresAction
        }
        (None, _) => {
            stopped.error = Some(format!(
                "the server stopped while the run was running; resuming its journal {} continues it",
                journal.display()
            ));
            RunStatus::Failed
        }
    };
    stopped
}

/// A new run id: `run_` and 32 hex digits.
pub(crate) fn new_run_id() -> String {
    format!(
        "run_{}",
        lllm_core::DialogId::new().to_string().replace('-', "")
    )
}

/// Whether `id` is one this server made (`run_` and hex): safe as a file name.
pub(crate) fn is_run_id(id: &str) -> bool {
    id.strip_prefix("run_")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Writes a run's record through its fixed temporary name (`.ID.json.tmp`, opened as it is: the
/// adversarial suite holds a record's write open by placing a pipe there), flushed, then renamed.
fn write_meta(dir: &Path, meta: &RunMeta) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(meta).map_err(std::io::Error::other)?;
    let temporary = dir.join(format!(".{}.json.tmp", meta.id));
    {
        use std::io::Write as _;
        let mut file = private_file(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&temporary, dir.join(format!("{}.json", meta.id)))
}

/// The run's failure message, as the record keeps it (no secret: see the callers).
pub(crate) fn status_of(outcome: &Result<crate::engine::RunOutput, RunError>) -> RunStatus {
    match outcome {
        Ok(_) => RunStatus::Completed,
        Err(e) if e.is_paused() => RunStatus::RequiresAction,
        Err(RunError::Cancelled) => RunStatus::Cancelled,
        Err(_) => RunStatus::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_run(store: &RunStore, created: u64, ended: bool) -> String {
        let meta = RunMeta {
            id: new_run_id(),
            model: "m".into(),
            created,
            created_ns: 0,
            session: "s".into(),
            caller: None,
            idempotency: None,
            source: Some("chat.completions".into()),
            status: ended.then(|| "completed".into()),
            error: None,
            last_event: 0,
            running: false,
            sources: Vec::new(),
        };
        let stopped = Stopped {
            status: RunStatus::Completed,
            output: None,
            error: None,
            pending: Vec::new(),
        };
        let id = meta.id.clone();
        store.add_in_memory(
            meta,
            RunState::Stopped { stopped, last: 1 },
            store.new_log(),
        );
        id
    }

    #[test]
    fn runs_that_answered_a_request_are_kept_up_to_their_cap_and_a_running_one_stays() {
        let store = RunStore::open(None).expect("store");
        let running = request_run(&store, 0, false);
        let first = request_run(&store, 1, true);
        for n in 0..KEPT_REQUEST_RUNS + 50 {
            request_run(&store, 2 + n as u64, true);
        }
        assert_eq!(store.lock().len(), KEPT_REQUEST_RUNS);
        assert!(store.get(&running).is_some(), "a running run was forgotten");
        assert!(store.get(&first).is_none(), "the oldest ended run was kept");
    }
}
