//! A paused run as written beside its journal (`ID.paused`, JSON, mode 0600), so that a server
//! started again on the same `--state` holds it again: the conversation it answers, its session,
//! and where its calls came from. The calls themselves are the journal's pending calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::PausedRun;
use crate::journal::Journal;
use crate::serve::conversations::{ConversationKey, Conversations, Entry};
use crate::serve::files::{self, write_whole};
use crate::serve::identity::Source;
use crate::serve::memo::{AnswerIds, Memo};
use crate::serve::session::CallerSession;

/// The extension of a paused run's record.
const RECORD: &str = "paused";
/// The extension of a run's journal.
const JOURNAL: &str = "journal";
/// The largest record read back (a record holds its conversation's transcript).
const MAX_RECORD_BYTES: u64 = 256 * 1024 * 1024;

/// What a paused run's record holds.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    key: ConversationKey,
    /// The digest of the tactic file that made the run's dialogs.
    #[serde(default)]
    tactic: String,
    client_system: String,
    transcript: Vec<Entry>,
    answer_ids: Option<(String, String)>,
    session: String,
    parent: Option<String>,
    source: String,
    response: Option<String>,
    /// When the run paused, in Unix seconds.
    paused_at: u64,
}

/// The record of the run whose journal is `journal`.
fn record_path(journal: &Path) -> PathBuf {
    journal.with_extension(RECORD)
}

/// Writes `run`'s record (whole, under a temporary name first).
pub(super) fn write(run: &PausedRun) -> std::io::Result<()> {
    let record = Record {
        key: run.memo.key.clone(),
        tactic: run.memo.tactic.clone(),
        client_system: run.memo.client_system.clone(),
        transcript: run.memo.transcript.clone(),
        answer_ids: run
            .memo
            .answer_ids
            .as_ref()
            .map(|ids| (ids.response.clone(), ids.item.clone())),
        session: run.session.id.clone(),
        parent: run.session.parent.clone(),
        source: run.source.name().to_owned(),
        response: run.response.clone(),
        paused_at: run.paused_at,
    };
    let bytes = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
    write_whole(&record_path(&run.journal), &bytes)
}

/// Removes the journal `journal` and its record (files already gone are no error).
pub(crate) fn remove(journal: &Path) {
    for path in [journal.to_owned(), record_path(journal)] {
        files::remove(&path, "a served run's file");
    }
}

/// Removes the record of a run taken out of the index (its continuation holds the journal).
pub(super) fn unrecord(journal: &Path) {
    files::remove(&record_path(journal), "a paused run's record");
}

/// The paused runs `dir` holds, oldest first. A record that cannot be read, or whose journal has
/// no pending call, is removed with its journal; so is a journal without a record (a run that was
/// running when the server stopped: no request can continue it).
pub(super) fn read_all(dir: &Path, store: &Arc<Conversations>) -> Vec<PausedRun> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut runs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        match path.extension().and_then(|e| e.to_str()) {
            Some(JOURNAL) if !record_path(&path).exists() => remove(&path),
            Some(RECORD) => {
                let journal = path.with_extension(JOURNAL);
                match read_one(&path, &journal, store) {
                    Some(run) => runs.push(run),
                    None => remove(&journal),
                }
            }
            _ => {}
        }
    }
    runs.sort_by_key(|r| r.paused_at);
    runs
}

fn read_one(path: &Path, journal: &Path, store: &Arc<Conversations>) -> Option<PausedRun> {
    let bytes = lllm_core::read_regular(path, MAX_RECORD_BYTES).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    let pending = Journal::resume(journal).ok()?.pending_calls();
    if pending.is_empty() {
        return None;
    }
    Some(PausedRun {
        memo: Memo {
            store: store.clone(),
            key: record.key,
            session: record.session.clone(),
            tactic: record.tactic,
            client_system: record.client_system,
            transcript: record.transcript,
            answer_ids: record
                .answer_ids
                .map(|(response, item)| AnswerIds { response, item }),
        },
        session: CallerSession {
            id: record.session,
            parent: record.parent,
        },
        source: Source::from_name(&record.source).unwrap_or(Source::Minted),
        journal: journal.to_owned(),
        pending,
        response: record.response,
        paused_at: record.paused_at,
    })
}
