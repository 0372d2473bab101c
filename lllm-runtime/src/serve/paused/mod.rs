//! Served runs paused on calls of the caller's tools, until the caller's next request brings the
//! results. Each paused run is held by its journal (under `--state` in `handed/`, else in a private
//! temporary folder) and a record beside it (`disk.rs`), so a server started again holds it again;
//! this index finds it by the calls it waits for, for the caller and model that made it only.
//! Bounded: at most [`DEFAULT_MAX_PAUSED_RUNS`] held (the oldest forgotten first), each for at most
//! [`DEFAULT_PAUSE_KEPT`]; a forgotten run's files are removed.

mod disk;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::caller_tools::CallerResult;
use super::conversations::Conversations;
use super::error::ApiError;
use super::files::create_private_dir;
use super::identity::Source;
use super::memo::Memo;
use super::session::CallerSession;
use super::ServeError;
use crate::journal::PendingCall;

pub(crate) use disk::remove as forget;

/// The most paused runs held at once by default: past it, the oldest is forgotten.
pub const DEFAULT_MAX_PAUSED_RUNS: usize = 1024;
/// How long a paused run waits for the caller's results by default (an hour): a harness whose
/// user confirms a command takes minutes, one that went away never comes back.
pub const DEFAULT_PAUSE_KEPT: Duration = Duration::from_secs(3600);

/// How many paused runs are held, and how long each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PauseBounds {
    pub(crate) max: usize,
    pub(crate) kept: Duration,
}

/// A run that waits for the caller's results.
#[derive(Debug)]
pub(crate) struct PausedRun {
    /// The conversation, kept when the continued run answers.
    pub(crate) memo: Memo,
    pub(crate) session: CallerSession,
    pub(crate) source: Source,
    /// The run's journal.
    pub(crate) journal: PathBuf,
    /// The calls handed to the caller.
    pub(crate) pending: Vec<PendingCall>,
    /// The id of the response that handed them (Responses), which `previous_response_id` names.
    pub(crate) response: Option<String>,
    /// When it paused, in Unix seconds.
    pub(crate) paused_at: u64,
}

/// Where a continuation request says its conversation is.
#[derive(Debug, Default)]
pub(crate) struct Named<'a> {
    /// The conversation id a header, `prompt_cache_key` or `conversation` names.
    pub(crate) conversation: Option<String>,
    /// `previous_response_id`.
    pub(crate) previous: Option<&'a str>,
}

/// The paused runs, oldest first.
#[derive(Debug)]
pub(crate) struct PausedRuns {
    dir: PathBuf,
    runs: Mutex<Vec<PausedRun>>,
    bounds: PauseBounds,
}

impl PausedRuns {
    /// Holds paused runs' journals in `handed/` under `state` (the runs an earlier server paused
    /// are held again), or without one in a private temporary folder of this process.
    pub(crate) fn open(
        state: Option<&Path>,
        store: &Arc<Conversations>,
        bounds: PauseBounds,
    ) -> Result<PausedRuns, ServeError> {
        let dir = match state {
            Some(state) => state.join("handed"),
            None => std::env::temp_dir().join(format!(
                "lllm-serve-{}-{}",
                std::process::id(),
                lllm_core::DialogId::new()
            )),
        };
        create_private_dir(&dir).map_err(|source| ServeError::State {
            path: dir.clone(),
            source,
        })?;
        let runs = PausedRuns {
            runs: Mutex::new(disk::read_all(&dir, store)),
            dir,
            bounds,
        };
        runs.sweep(&mut runs.lock());
        Ok(runs)
    }

    /// A file for a new run's journal.
    pub(crate) fn new_journal(&self) -> PathBuf {
        self.dir
            .join(format!("{}.journal", lllm_core::DialogId::new()))
    }

    /// Holds `run` until its results come, its record written beside its journal; past the
    /// bounds, the oldest are forgotten.
    pub(crate) fn hold(&self, run: PausedRun) {
        if let Err(e) = disk::write(&run) {
            tracing::warn!(journal = %run.journal.display(), error = %e, "a paused run's record cannot be written: a restart forgets it");
        }
        let mut runs = self.lock();
        runs.push(run);
        self.sweep(&mut runs);
    }

    /// Forgets the runs past their time, then the oldest past the count.
    fn sweep(&self, runs: &mut Vec<PausedRun>) {
        let now = super::now();
        let kept = self.bounds.kept.as_secs();
        runs.retain(|run| {
            let live = now.saturating_sub(run.paused_at) < kept;
            if !live {
                forget(&run.journal);
            }
            live
        });
        while runs.len() > self.bounds.max {
            forget(&runs.remove(0).journal);
        }
    }

    /// The paused run of `caller` and `model` that waits for every call of `results` (in the
    /// conversation `named`, when the request names one), taken out of the index; otherwise a 400
    /// naming a call id it does not know.
    pub(crate) fn take(
        &self,
        (caller, model): (&str, &str),
        named: &Named<'_>,
        results: &[CallerResult],
        field: &str,
    ) -> Result<PausedRun, ApiError> {
        let mut runs = self.lock();
        self.sweep(&mut runs);
        let matches = |run: &PausedRun| {
            run.memo.key.caller == caller
                && run.memo.key.model == model
                && named
                    .conversation
                    .as_ref()
                    .is_none_or(|id| *id == run.memo.key.id)
                && named
                    .previous
                    .is_none_or(|p| run.response.as_deref() == Some(p))
                && results
                    .iter()
                    .all(|r| run.pending.iter().any(|p| p.call == r.call))
        };
        if let Some(i) = runs.iter().position(matches) {
            let run = runs.remove(i);
            disk::unrecord(&run.journal);
            return Ok(run);
        }
        let first = results.first().map(|r| r.call.as_str()).unwrap_or("");
        Err(ApiError::invalid(format!(
            "`{field}`: the call `{}` is not one this server handed to you and still waits for (a result answers a call of the latest answer of its conversation, once)",
            super::shorten(first)
        )))
    }

    /// The paused run of `caller` and `model` that a request bringing a new user message and no
    /// results continues, taken out of the index: the one of the conversation `named` names (a
    /// header, `prompt_cache_key`, `conversation`, `previous_response_id`), else the one whose
    /// transcript is the request's history (`history`, its digest, as a stateless client sends
    /// it: the hand-back has no text, so it is not in the history).
    pub(crate) fn take_for_turn(
        &self,
        (caller, model): (&str, &str),
        named: &Named<'_>,
        history: &str,
    ) -> Option<PausedRun> {
        let mut runs = self.lock();
        self.sweep(&mut runs);
        let ours = |run: &PausedRun| run.memo.key.caller == caller && run.memo.key.model == model;
        let by_name = |run: &PausedRun| {
            named
                .conversation
                .as_ref()
                .is_some_and(|id| *id == run.memo.key.id)
                || named
                    .previous
                    .is_some_and(|p| run.response.as_deref() == Some(p))
        };
        let by_history = |run: &PausedRun| run.memo.history_digest() == history;
        let i = match named.conversation.is_some() || named.previous.is_some() {
            true => runs.iter().position(|run| ours(run) && by_name(run)),
            false => runs.iter().position(|run| ours(run) && by_history(run)),
        }?;
        let run = runs.remove(i);
        disk::unrecord(&run.journal);
        Some(run)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PausedRun>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}
