//! Reading the files a tactic names (the tactic, its `base:` files, its prompts) with limits: a file
//! is read only when it is what it claims to be (a regular file), never past a size limit, and only
//! from inside the folder it must stay in.

use std::io::Read;
use std::path::Path;

/// Default of the most bytes one file of a tactic (the tactic, a `base:` file, a prompt) may have:
/// far above any real tactic, and it keeps a wrong path (a log, a device) from being read whole.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How many times [`DEFAULT_MAX_FILE_BYTES`] (or the configured per-file limit) all the files one
/// load reads may have together.
pub const TOTAL_BYTES_FACTOR: u64 = 4;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadProblem {
    /// The file system refused (missing, permission denied, a loop of links).
    Io(std::io::Error),
    /// Not a regular file: what it is instead (`a directory`, `a named pipe (FIFO)`, ...).
    NotAFile(&'static str),
    /// Larger than the limit (bytes).
    TooLarge(u64),
}

impl std::fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadProblem::Io(e) => write!(f, "{e}"),
            ReadProblem::NotAFile(what) => write!(f, "it is {what}, not a regular file"),
            ReadProblem::TooLarge(limit) => write!(f, "it is larger than {limit} bytes"),
        }
    }
}

impl std::error::Error for ReadProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadProblem::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// What a file is, when it is not a regular file (`a directory`, `a named pipe (FIFO)`, `a
/// device`, ...): files that lllm reads or writes whole must be regular ones, since reading a FIFO
/// or a device may never end.
pub fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    odd_kind(meta, false)
}

/// Reads `path` whole when it is a regular file of at most `limit` bytes (symbolic links followed):
/// never a FIFO or a device, never past the limit.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadProblem> {
    read_bounded(path, limit, false)
}

/// What a file is, when it is not a regular file.
fn odd_kind(meta: &std::fs::Metadata, allow_pipe: bool) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return (!allow_pipe).then_some("a named pipe (FIFO)");
        }
        if kind.is_char_device() || kind.is_block_device() {
            return Some("a device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Reads `path` (symbolic links followed) when it is a regular file (or, with `allow_pipe`, a pipe)
/// of at most `limit` bytes. The type is checked before the file is opened (opening a FIFO blocks),
/// and again on the open handle, in case the file was swapped in between (the open does not block
/// then).
pub(crate) fn read_bounded(
    path: &Path,
    limit: u64,
    allow_pipe: bool,
) -> Result<Vec<u8>, ReadProblem> {
    let meta = std::fs::metadata(path).map_err(ReadProblem::Io)?;
    if let Some(kind) = odd_kind(&meta, allow_pipe) {
        return Err(ReadProblem::NotAFile(kind));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(ReadProblem::TooLarge(limit));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // A regular file opened without blocking reads as usual; a FIFO swapped in after the check
    // above opens at once (instead of waiting for a writer) and is refused below.
    #[cfg(unix)]
    if meta.is_file() {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(ReadProblem::Io)?;
    let opened = file.metadata().map_err(ReadProblem::Io)?;
    if let Some(kind) = odd_kind(&opened, allow_pipe) {
        return Err(ReadProblem::NotAFile(kind));
    }
    let expected = usize::try_from(opened.len().min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadProblem::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadProblem::TooLarge(limit));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = std::env::temp_dir().join(format!("lllm-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("a.yaml");
        std::fs::write(&file, "12345").expect("write");
        assert_eq!(read_bounded(&file, 5, false).ok(), Some(b"12345".to_vec()));
        assert!(matches!(
            read_bounded(&file, 4, false),
            Err(ReadProblem::TooLarge(4))
        ));
        assert!(matches!(
            read_bounded(&dir, 100, false),
            Err(ReadProblem::NotAFile("a directory"))
        ));
        #[cfg(unix)]
        {
            assert!(matches!(
                read_bounded(Path::new("/dev/zero"), 100, true),
                Err(ReadProblem::NotAFile("a device"))
            ));
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
