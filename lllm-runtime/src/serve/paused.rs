//! Served runs paused on calls of the caller's tools, until the caller's next request brings the
//! results. Each paused run is held by its journal (under `--state` in `handed/`, else in a private
//! temporary folder); this index finds it by the calls it waits for, for the caller and model that
//! made it only.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::caller_tools::CallerResult;
use super::error::ApiError;
use super::identity::Source;
use super::memo::Memo;
use super::session::CallerSession;
use super::store::create_private_dir;
use super::ServeError;
use crate::journal::PendingCall;

/// The most paused runs held at once: past it, the oldest is forgotten (its journal removed).
pub(crate) const MAX_PAUSED_RUNS: usize = 1024;

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
}

/// Where a continuation request says its conversation is.
#[derive(Debug, Default)]
pub(crate) struct Named<'a> {
    /// The conversation id a header, `prompt_cache_key` or `conversation` names.
    pub(crate) conversation: Option<String>,
    /// `previous_response_id`.
    pub(crate) previous: Option<&'a str>,
}

/// The conversation a continuation request names: a session header, else `prompt_cache_key`,
/// else Responses' `conversation` (as the identity rule reads them).
pub(crate) fn named_conversation(
    headers: &axum::http::HeaderMap,
    prompt_cache_key: Option<&str>,
    conversation: Option<&str>,
) -> Option<String> {
    let named = |raw: &str| lllm_core::safe_session_id(raw.trim());
    super::session::header_id(headers)
        .or_else(|| prompt_cache_key.and_then(named))
        .or_else(|| conversation.and_then(named))
}

/// The paused runs, oldest first.
#[derive(Debug)]
pub(crate) struct PausedRuns {
    dir: PathBuf,
    runs: Mutex<Vec<PausedRun>>,
}

impl PausedRuns {
    /// Holds paused runs' journals in `handed/` under `state`, or without one in a private
    /// temporary folder of this process.
    pub(crate) fn open(state: Option<&Path>) -> Result<PausedRuns, ServeError> {
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
        Ok(PausedRuns {
            dir,
            runs: Mutex::default(),
        })
    }

    /// A file for a new run's journal.
    pub(crate) fn new_journal(&self) -> PathBuf {
        self.dir
            .join(format!("{}.journal", lllm_core::DialogId::new()))
    }

    /// Holds `run` until its results come; past [`MAX_PAUSED_RUNS`], the oldest is forgotten.
    pub(crate) fn hold(&self, run: PausedRun) {
        let mut runs = self.lock();
        runs.push(run);
        while runs.len() > MAX_PAUSED_RUNS {
            let oldest = runs.remove(0);
            forget(&oldest.journal);
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
            return Ok(runs.remove(i));
        }
        let first = results.first().map(|r| r.call.as_str()).unwrap_or("");
        Err(ApiError::invalid(format!(
            "`{field}`: the call `{}` is not one this server handed to you and still waits for (a result answers a call of the latest answer of its conversation, once)",
            super::shorten(first)
        )))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PausedRun>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes a journal no run needs any more (a run that answered or failed).
pub(crate) fn forget(journal: &Path) {
    if let Err(e) = std::fs::remove_file(journal) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(journal = %journal.display(), error = %e, "a served run's journal cannot be removed");
        }
    }
}
