//! What a tactic is called where a name is needed: spans, served model ids.

use std::path::Path;

/// The name of the tactic in `path`: the file's stem, or for a file called `tactic.yaml` its folder's
/// name (`examples/fork_tree/tactic.yaml` is `fork_tree`).
pub fn tactic_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let folder = || {
        std::path::absolute(path).ok().and_then(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .map(|d| d.to_string_lossy().into_owned())
        })
    };
    match stem {
        Some(stem) if stem == "tactic" => folder().unwrap_or(stem),
        Some(stem) => stem,
        None => "tactic".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tactic_is_named_by_its_file_or_its_folder() {
        assert_eq!(tactic_name(Path::new("a/review.yaml")), "review");
        assert_eq!(
            tactic_name(Path::new("examples/fork_tree/tactic.yaml")),
            "fork_tree"
        );
    }
}
