//! Conversations under the state directory: a file per conversation, named by its key's digest,
//! written whole (a temporary file renamed), read back at start, the newest last.

use std::path::{Path, PathBuf};

use super::snapshot::Snapshot;
use super::Bounds;
use crate::serve::files::{self, create_private_dir, write_whole};

/// The folder of conversations under a state directory.
pub(crate) fn folder(state: &Path) -> std::io::Result<PathBuf> {
    let dir = state.join("conversations");
    create_private_dir(&dir)?;
    Ok(dir)
}

/// Writes `bytes` (a snapshot) as the conversation's file.
pub(crate) fn write(dir: &Path, stem: &str, bytes: &[u8]) -> std::io::Result<()> {
    write_whole(&dir.join(format!("{stem}.json")), bytes)
}

/// Removes a forgotten conversation's file (one already gone is no error).
pub(crate) fn remove(dir: &Path, stem: &str) {
    files::remove(
        &dir.join(format!("{stem}.json")),
        "a forgotten conversation's file",
    );
}

/// The snapshots of `dir` within `bounds`, oldest first, each with its size: the newest files are
/// read until the bounds are reached and the older ones removed, so that start-up never reads more
/// than is kept. Files that are not regular files, are past the byte bound, unreadable or not a
/// snapshot (a hostile or half-written state directory) are skipped with a warning.
pub(crate) fn read_back(dir: &Path, bounds: Bounds) -> Vec<(Snapshot, usize)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                // A write that never finished.
                let _ = std::fs::remove_file(entry.path());
                return None;
            }
            let meta = entry.metadata().ok()?;
            let fits = meta.is_file() && meta.len() <= bounds.bytes as u64;
            if !name.ends_with(".json") || !fits {
                tracing::warn!(
                    "skipped {} in the conversations folder: not a conversation file of at most {} bytes",
                    entry.path().display(),
                    bounds.bytes
                );
                return None;
            }
            Some((meta.modified().ok()?, entry.path()))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    let mut kept = Vec::new();
    let mut bytes = 0;
    for (_, path) in found {
        if kept.len() >= bounds.count {
            // Older than every kept one: forgotten, as it would have been while running.
            let _ = std::fs::remove_file(&path);
            continue;
        }
        match read_one(&path) {
            Some((snapshot, size)) if bytes + size <= bounds.bytes => {
                bytes += size;
                kept.push((snapshot, size));
            }
            Some(_) => {
                let _ = std::fs::remove_file(&path);
            }
            // Not a snapshot of this server's: left as it is, never read as one.
            None => {}
        }
    }
    kept.reverse();
    kept
}

fn read_one(path: &Path) -> Option<(Snapshot, usize)> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice::<Snapshot>(&bytes) {
        Ok(snapshot)
            if path
                .file_stem()
                .is_some_and(|s| *s == *snapshot.key.file_stem()) =>
        {
            Some((snapshot, bytes.len()))
        }
        Ok(_) => {
            tracing::warn!(
                "skipped the conversation file {}: its name is not its key's",
                path.display()
            );
            None
        }
        Err(error) => {
            tracing::warn!("skipped the conversation file {}: {error}", path.display());
            None
        }
    }
}
