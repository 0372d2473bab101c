//! Conversations under the state directory: a file per conversation, named by its key's digest,
//! written whole (a temporary file renamed), read back at start, the newest last.

use std::path::{Path, PathBuf};

use super::snapshot::Snapshot;
use crate::serve::store::{create_private_dir, private_file};

/// The folder of conversations under a state directory.
pub(crate) fn folder(state: &Path) -> std::io::Result<PathBuf> {
    let dir = state.join("conversations");
    create_private_dir(&dir)?;
    Ok(dir)
}

/// Writes `bytes` (a snapshot) as the conversation's file.
pub(crate) fn write(dir: &Path, stem: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = dir.join(format!(".{stem}.json.tmp"));
    {
        use std::io::Write as _;
        let mut file = private_file(&temporary)?;
        file.write_all(bytes)?;
    }
    std::fs::rename(&temporary, dir.join(format!("{stem}.json")))
}

/// Removes a forgotten conversation's file (one already gone is no error).
pub(crate) fn remove(dir: &Path, stem: &str) {
    let path = dir.join(format!("{stem}.json"));
    if let Err(error) = std::fs::remove_file(&path) {
        if error.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!("could not remove {}: {error}", path.display());
        }
    }
}

/// The snapshots of `dir`, oldest first, each with its size; files past `max_bytes`, unreadable or
/// not a snapshot (a hostile or half-written state directory) are skipped with a warning.
pub(crate) fn read_all(dir: &Path, max_bytes: u64) -> Vec<(Snapshot, usize)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            if !meta.is_file() || meta.len() > max_bytes {
                tracing::warn!(
                    "skipped the conversation file {}: not a file, or past {max_bytes} bytes",
                    e.path().display()
                );
                return None;
            }
            Some((meta.modified().ok()?, e.path()))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .filter_map(|(_, path)| read_one(&path))
        .collect()
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
