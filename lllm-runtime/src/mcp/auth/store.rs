//! The token file: rmcp's stored credentials for one server, kept owner-only (file 0600, created
//! folders 0700), written whole through a temporary file and a rename, and bound to the server's
//! URL so that tokens are never sent to another server sharing the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// Largest token file read: tokens are a few kilobytes.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// What the file holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    /// The MCP server the tokens are for.
    server: String,
    credentials: StoredCredentials,
}

/// One server's token file.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    pub(crate) path: PathBuf,
    server: String,
}

impl TokenFile {
    pub(crate) fn new(path: PathBuf, server: &str) -> Self {
        TokenFile {
            path,
            server: server.to_owned(),
        }
    }

    /// The credentials for this server, if the file has them. A file another user could read, or
    /// one that is not a file, is refused rather than used.
    pub(crate) fn read(&self) -> Result<Option<StoredCredentials>, String> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{} is not a token file (not a file, or over {MAX_FILE_BYTES} bytes)",
                self.path.display()
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(format!(
                    "{} can be read by other users (mode {mode:o}): `chmod 600` it, or log in again",
                    self.path.display()
                ));
            }
        }
        let text = std::fs::read(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        // Serde's message could quote the file; it says where instead.
        let saved: Saved = serde_json::from_slice(&text).map_err(|e| {
            format!(
                "{} is not a token file lllm wrote (line {}, column {})",
                self.path.display(),
                e.line(),
                e.column()
            )
        })?;
        Ok((saved.server == self.server).then_some(saved.credentials))
    }

    /// Replaces the file's content: a new file (0600) beside it, renamed over it.
    pub(crate) fn write(&self, credentials: StoredCredentials) -> Result<(), String> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        make_private_dir(dir)?;
        let saved = Saved {
            server: self.server.clone(),
            credentials,
        };
        let text = serde_json::to_vec_pretty(&saved).map_err(|e| e.to_string())?;
        let name = self
            .path
            .file_name()
            .map_or_else(|| "tokens".into(), |n| n.to_string_lossy().into_owned());
        let temporary = dir.join(format!(".{name}.{:016x}", fastrand::u64(..)));
        let written =
            write_private(&temporary, &text).and_then(|()| std::fs::rename(&temporary, &self.path));
        if let Err(e) = written {
            std::fs::remove_file(&temporary).ok();
            return Err(format!("cannot write {}: {e}", self.path.display()));
        }
        Ok(())
    }
}

/// Makes `dir` and its missing parents, each new one 0700.
fn make_private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))
}

/// Writes a new file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// How long a refresh waits for another process refreshing the same tokens.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl TokenFile {
    /// `.NAME.lock` beside the file, locked for one refresh: two processes sharing the tokens (the
    /// shards of a batch, workers) must not both spend the same refresh token, which the
    /// authorization server rotates.
    #[cfg(unix)]
    fn try_lock(&self) -> Result<Option<nix::fcntl::Flock<std::fs::File>>, String> {
        use nix::fcntl::{Flock, FlockArg};
        use std::os::unix::fs::OpenOptionsExt;
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        make_private_dir(dir)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let path = dir.join(format!(".{}.lock", name.unwrap_or_default()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            // A symlink planted where the lock goes must not make lllm create a file elsewhere.
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(lock)),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, e)) => Err(format!("cannot lock {}: {e}", path.display())),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    #[cfg(unix)]
    async fn acquire_refresh_guard(
        &self,
    ) -> Result<Option<rmcp::transport::auth::CredentialRefreshGuard>, AuthError> {
        let deadline = tokio::time::Instant::now() + LOCK_WAIT;
        loop {
            match self.try_lock().map_err(AuthError::CredentialStoreError)? {
                Some(lock) => {
                    return Ok(Some(rmcp::transport::auth::CredentialRefreshGuard::new(
                        lock,
                    )))
                }
                None if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                None => {
                    return Err(AuthError::CredentialStoreError(format!(
                        "another process has been refreshing the tokens of {} for {} s",
                        self.path.display(),
                        LOCK_WAIT.as_secs()
                    )))
                }
            }
        }
    }

    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(AuthError::CredentialStoreError(format!(
                    "cannot remove {}: {e}",
                    self.path.display()
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lllm-token-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        dir
    }

    #[test]
    fn tokens_are_written_owner_only_and_read_back_for_their_server_only() {
        use std::os::unix::fs::PermissionsExt;
        let root = dir("modes");
        let file = TokenFile::new(root.join("a/b/t.json"), "http://127.0.0.1:1/mcp");
        let credentials = StoredCredentials::new("client".into(), None, vec![], None);
        file.write(credentials).expect("written");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&root.join("a/b/t.json")), 0o600);
        assert_eq!(mode(&root.join("a/b")), 0o700);
        assert_eq!(mode(&root.join("a")), 0o700);
        assert_eq!(
            file.read().expect("read").expect("some").client_id,
            "client"
        );
        let other = TokenFile::new(root.join("a/b/t.json"), "http://127.0.0.1:2/mcp");
        assert!(other.read().expect("read").is_none());
        std::fs::set_permissions(
            root.join("a/b/t.json"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        let refused = file.read().expect_err("readable by others");
        assert!(refused.contains("other users (mode 644)"), "{refused}");
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn one_refresh_at_a_time_holds_the_lock_beside_the_file() {
        let root = dir("lock");
        let file = TokenFile::new(root.join("t.json"), "u");
        let held = file.try_lock().expect("lock").expect("free");
        assert!(file.try_lock().expect("lock").is_none(), "taken while held");
        drop(held);
        assert!(file.try_lock().expect("lock").is_some(), "free again");
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn a_file_lllm_did_not_write_is_refused_without_quoting_it() {
        let root = dir("foreign");
        std::fs::create_dir_all(&root).expect("dir");
        let path = root.join("t.json");
        write_private(&path, b"{\"secret-ish\": 1").expect("write");
        let refused = TokenFile::new(path, "u").read().expect_err("foreign");
        assert!(refused.contains("not a token file lllm wrote"), "{refused}");
        assert!(!refused.contains("secret-ish"), "{refused}");
        std::fs::remove_dir_all(&root).ok();
    }
}
