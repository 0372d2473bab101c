//! A file of a skill, read for the model: contained in the skill's folder (no `..`, no absolute
//! path, no symbolic link anywhere on the way, only a regular file), bounded in size.

use std::io::Read;
use std::path::{Component, Path};

use super::MAX_SKILL_FILE_BYTES;

/// The text of `path` inside `dir` (canonical), or why it is refused, in words.
pub(super) fn read_contained(dir: &Path, path: &str) -> Result<String, String> {
    let relative = Path::new(path);
    if path.is_empty() || relative.is_absolute() {
        return Err(format!(
            "`{}` is not a path relative to the skill's folder",
            shown(path)
        ));
    }
    let mut at = dir.to_path_buf();
    for component in relative.components() {
        match component {
            Component::Normal(part) => at.push(part),
            Component::CurDir => {}
            _ => {
                return Err(format!(
                    "`{}` leaves the skill's folder: `..` and absolute paths are refused",
                    shown(path)
                ))
            }
        }
        // Every step on the way is looked at without following it: a link is refused, whether
        // it points inside the folder or out of it.
        let meta = at
            .symlink_metadata()
            .map_err(|e| format!("`{}` cannot be read: {e}", shown(path)))?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "`{}` is or goes through a symbolic link: a skill's files are read only from inside its folder",
                shown(path)
            ));
        }
    }
    read_regular_nofollow(&at).map_err(|problem| format!("`{}` {problem}", shown(path)))
}

/// Reads `path` when, opened without following a link, it is a regular file of at most
/// [`MAX_SKILL_FILE_BYTES`]; the check is on the open handle, so a file swapped after the walk
/// is seen for what it is.
fn read_regular_nofollow(path: &Path) -> Result<String, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // No link followed at the last step; a FIFO opens at once instead of waiting for a writer.
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| format!("cannot be opened: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if let Some(kind) = crate::files::not_regular(&meta) {
        return Err(format!(
            "is {kind}, not a regular file: only regular files are read"
        ));
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "has {} bytes, more than {MAX_SKILL_FILE_BYTES}: too large to read whole",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "has more than {MAX_SKILL_FILE_BYTES} bytes: too large to read whole"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

/// A path as echoed to the model: at most 200 characters.
fn shown(path: &str) -> String {
    path.chars().take(200).collect()
}
