//! The state directory's files, as every store of the server writes them: private (owner only),
//! written whole under a name nobody can have planted and renamed into place, removed without
//! caring whether they were there.

use std::path::Path;

/// Creates `path` and its parents, readable by the owner only.
pub(crate) fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
}

/// Opens `path` for writing, created readable by the owner only, emptied if it was there.
pub(crate) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Writes `bytes` as `path`, whole: into a new private file beside it (a fresh name, never an
/// existing file or a planted link), then renamed over `path`. A reader sees the old file or the new
/// one, never half of one.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", lllm_core::DialogId::new()));
    let written = (|| {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        options.open(&temporary)?.write_all(bytes)?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Removes `path`; one already gone is no error, another failure is logged as about `what`.
pub(crate) fn remove(path: &Path, what: &str) {
    if let Err(error) = std::fs::remove_file(path) {
        if error.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(file = %path.display(), %error, "{what} cannot be removed");
        }
    }
}
