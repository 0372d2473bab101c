//! A fresh folder of lllm's own under the temporary directory, which other local users can write
//! to: a random name, made by this process (an existing path, a folder or a link someone planted,
//! is never used), readable by its owner only.

use std::path::{Path, PathBuf};

/// Names tried before giving up: each is 64 random bits, so a second one is only needed when
/// someone planted the first.
const TRIES: usize = 16;

/// Makes `PREFIX-RANDOM` under the temporary directory.
pub(crate) fn fresh(prefix: &str) -> std::io::Result<PathBuf> {
    let names = std::iter::repeat_with(|| format!("{prefix}-{:016x}", fastrand::u64(..)));
    make_in(&std::env::temp_dir(), names.take(TRIES))
}

/// Makes the first of `names` under `parent` that does not exist yet, mode 0700.
fn make_in(parent: &Path, names: impl IntoIterator<Item = String>) -> std::io::Result<PathBuf> {
    let mut builder = std::fs::DirBuilder::new();
    // Not recursive: `mkdir` fails on any existing path, a link included, instead of using it.
    builder.recursive(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    for name in names {
        let path = parent.join(name);
        match builder.create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "every name tried in {} exists already (someone is planting them)",
            parent.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planted_folders_and_links_are_passed_over_and_the_new_folder_is_private() {
        let parent = std::env::temp_dir().join(format!("lllm-private-dir-{}", std::process::id()));
        std::fs::create_dir_all(parent.join("planted")).expect("parent");
        let elsewhere = parent.join("planted");
        std::os::unix::fs::symlink(&elsewhere, parent.join("link")).expect("link");
        let names = ["planted", "link", "fresh"].map(str::to_owned);
        let made = make_in(&parent, names).expect("made");
        assert_eq!(made, parent.join("fresh"));
        let meta = std::fs::symlink_metadata(&made).expect("meta");
        assert!(meta.is_dir());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let none = make_in(&parent, ["planted", "link"].map(str::to_owned));
        assert!(none.is_err_and(|e| e.to_string().contains("exists already")));
        let first = fresh("lllm-test").expect("fresh");
        let second = fresh("lllm-test").expect("fresh");
        assert_ne!(first, second);
        for path in [&first, &second, &parent] {
            std::fs::remove_dir_all(path).ok();
        }
    }
}
