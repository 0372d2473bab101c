//! The journal's file: created whole, opened to resume, held by one run at a time.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::JournalError;

/// A journal being created: its temporary file, locked, which becomes the journal once its start
/// line is in it.
pub(super) struct NewJournal {
    /// Where the journal goes (a symbolic link resolved to its target).
    path: PathBuf,
    temporary: PathBuf,
    file: File,
}

impl NewJournal {
    /// Checks that `path` can take a new journal (a regular file that is empty, or nothing; never a
    /// link to nothing), and creates the locked temporary file beside it.
    pub(super) fn prepare(path: &Path) -> Result<NewJournal, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_owned(),
            source,
        };
        let path = match std::fs::metadata(path) {
            Ok(meta) => {
                if let Some(what) = lllm_core::not_regular(&meta) {
                    return Err(JournalError::NotAFile {
                        path: path.to_owned(),
                        what,
                    });
                }
                if meta.len() > 0 {
                    return Err(if holds_a_journal(path) {
                        JournalError::Exists {
                            path: path.to_owned(),
                        }
                    } else {
                        JournalError::NotAJournal {
                            path: path.to_owned(),
                        }
                    });
                }
                // An empty file, maybe behind a link: the journal takes its place.
                path.canonicalize().map_err(io)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Only a link is refused: a journal another run created since the first look
                // is found when this one is published.
                let link = std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink());
                if link.unwrap_or(false) {
                    return Err(JournalError::DanglingLink {
                        path: path.to_owned(),
                    });
                }
                path.to_owned()
            }
            Err(e) => return Err(io(e)),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let temporary = path.with_file_name(format!(
            ".{}.{}-{}.new",
            name.as_deref().unwrap_or("journal"),
            std::process::id(),
            fastrand::u32(..)
        ));
        let file = private_create_new(&temporary).map_err(io)?;
        // Nobody else knows the temporary file: the lock is free, and it stays with the journal.
        file.try_lock().ok();
        Ok(NewJournal {
            path,
            temporary,
            file,
        })
    }

    /// The temporary file's path, while the start line is written.
    pub(super) fn temporary(&self) -> &Path {
        &self.temporary
    }

    /// A handle on the temporary file (the same file the journal becomes).
    pub(super) fn file(&self) -> Result<File, JournalError> {
        self.file.try_clone().map_err(|source| JournalError::Io {
            path: self.temporary.clone(),
            source,
        })
    }

    /// Makes the temporary file the journal, once `started` (its start line written) succeeded; the
    /// journal's path. A journal another run created meanwhile is not replaced.
    pub(super) fn publish(
        self,
        started: Result<(), JournalError>,
    ) -> Result<PathBuf, JournalError> {
        let published = started.and_then(|()| self.link());
        std::fs::remove_file(&self.temporary).ok();
        published.map(|()| self.path)
    }

    fn link(&self) -> Result<(), JournalError> {
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        // An empty file in the way goes (it held nothing); a journal that appeared since the check
        // stays, and this run is refused.
        if std::fs::metadata(&self.path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            std::fs::remove_file(&self.path).map_err(io)?;
        }
        match std::fs::hard_link(&self.temporary, &self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(JournalError::Exists {
                path: self.path.clone(),
            }),
            // A file system without hard links: renamed instead (no other run can be creating
            // this very file at once without having failed the check above first).
            Err(_) => std::fs::rename(&self.temporary, &self.path).map_err(io),
        }
    }
}

/// Opens the journal in `path` for appending, to resume it: a regular file only (opening a FIFO
/// would wait forever), locked for this run.
pub(super) fn open_to_resume(path: &Path) -> Result<File, JournalError> {
    let io = |source| JournalError::Io {
        path: path.to_owned(),
        source,
    };
    let not_a_file = |meta: &std::fs::Metadata| {
        lllm_core::not_regular(meta).map(|what| JournalError::NotAFile {
            path: path.to_owned(),
            what,
        })
    };
    if let Some(refused) = not_a_file(&std::fs::metadata(path).map_err(io)?) {
        return Err(refused);
    }
    let mut options = OpenOptions::new();
    options.append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO swapped in after the check opens at once instead of waiting, and is refused below.
        options.custom_flags(nix::libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(io)?;
    if let Some(refused) = not_a_file(&file.metadata().map_err(io)?) {
        return Err(refused);
    }
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(JournalError::Busy {
            path: path.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

/// Whether the file's first line is a run's start.
fn holds_a_journal(path: &Path) -> bool {
    use std::io::Read;
    let mut first = [0u8; 32];
    let read = File::open(path)
        .and_then(|mut f| f.read(&mut first))
        .unwrap_or(0);
    first[..read].starts_with(br#"{"event":"start""#)
}

/// Creates `path`, which must not exist, readable by its owner only (it holds the conversation).
fn private_create_new(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Opens `path` for appending; a file it creates is readable by its owner only (it holds the
/// conversation).
pub(crate) fn private_append(path: &Path, create: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}
