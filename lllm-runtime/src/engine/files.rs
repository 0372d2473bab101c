//! The files one run reads and writes, each in its role, checked before anything is written: none is
//! another (the same file by another name, a link or a hard link), inputs are regular files, and
//! outputs are regular files or new ones.

use std::path::{Path, PathBuf};

/// A file of a run cannot be used in its role.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Two roles name the same file.
    #[error("the {second_role} {} is the same file as the {first_role} {}: give the {second_role} a file of its own", second.display(), first.display())]
    SameFile {
        /// The role named first.
        first_role: &'static str,
        /// Its path.
        first: PathBuf,
        /// The role that names it again.
        second_role: &'static str,
        /// Its path.
        second: PathBuf,
    },
    /// The file is not a regular file (a directory, a FIFO, a device).
    #[error("cannot {} the {role} {}: it is {what}, not a regular file", if *output { "write" } else { "read" }, path.display())]
    NotAFile {
        /// Whether the run writes it.
        output: bool,
        /// The role.
        role: &'static str,
        /// The path.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// A symbolic link that points to nothing: following it would create a file elsewhere.
    #[error("cannot write the {role} {}: it is a symbolic link to a file that does not exist; give the file itself", path.display())]
    DanglingLink {
        /// The role.
        role: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// An input cannot be found or read.
    #[error("cannot read the {role} {}", path.display())]
    Unreadable {
        /// The role.
        role: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The files of one run, each with its role (`tactic`, `journal`, `trace`, ...), named so in
/// messages.
#[derive(Debug, Default, Clone)]
pub struct RunFiles {
    files: Vec<(&'static str, PathBuf, bool)>,
}

/// What identifies a file: its device and inode when it exists, else where it would be created.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    New(PathBuf),
}

impl RunFiles {
    /// No file yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A file the run reads: it must exist and be a regular file.
    pub fn input(mut self, role: &'static str, path: impl Into<PathBuf>) -> Self {
        self.files.push((role, path.into(), false));
        self
    }

    /// A file the run writes: a regular file, or one that does not exist yet (not through a link to
    /// nothing).
    pub fn output(mut self, role: &'static str, path: impl Into<PathBuf>) -> Self {
        self.files.push((role, path.into(), true));
        self
    }

    /// Checks every file in its role, then that no two roles name one file.
    pub fn check(&self) -> Result<(), FileError> {
        let mut seen: Vec<(&'static str, &Path, Identity)> = Vec::new();
        for (role, path, output) in &self.files {
            let identity = identity(role, path, *output)?;
            if let Some((first_role, first, _)) = seen.iter().find(|(_, _, id)| *id == identity) {
                return Err(FileError::SameFile {
                    first_role,
                    first: first.to_path_buf(),
                    second_role: role,
                    second: path.clone(),
                });
            }
            seen.push((role, path, identity));
        }
        Ok(())
    }
}

fn identity(role: &'static str, path: &Path, output: bool) -> Result<Identity, FileError> {
    let regular = |meta: std::fs::Metadata| match lllm_core::not_regular(&meta) {
        Some(what) => Err(FileError::NotAFile {
            output,
            role,
            path: path.to_owned(),
            what,
        }),
        None => Ok(inode(&meta)),
    };
    match std::fs::metadata(path) {
        Ok(meta) => regular(meta),
        Err(e) if output && e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => Err(FileError::DanglingLink {
                    role,
                    path: path.to_owned(),
                }),
                // Another process created the file between the two looks (a second batch on
                // the same output): it is that file now, not a link.
                Ok(meta) => regular(meta),
                Err(_) => Ok(Identity::New(new_file_identity(path))),
            }
        }
        Err(source) => Err(FileError::Unreadable {
            role,
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt as _;
    Identity::Inode(meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> Identity {
    Identity::New(PathBuf::new())
}

/// Where a file that does not exist yet would be: its folder resolved, its name as given.
fn new_file_identity(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    match (absolute.parent(), absolute.file_name()) {
        (Some(folder), Some(name)) => folder
            .canonicalize()
            .unwrap_or_else(|_| folder.to_owned())
            .join(name),
        _ => absolute,
    }
}
