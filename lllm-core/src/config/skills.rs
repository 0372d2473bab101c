//! An agent's `skills:` folders, loaded and checked when the tactic loads: a bad skill is an error
//! of the tactic, naming both the `skills:` entry and the `SKILL.md`.

use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::span::At;
use crate::skills::SkillSet;

/// The skills of `raw` (each folder relative to the file that names it), or the first that does
/// not load.
pub(crate) fn load(raw: Option<At<Vec<At<String>>>>, label: &str) -> Result<SkillSet, ConfigError> {
    let Some(list) = raw else {
        return Ok(SkillSet::default());
    };
    let dirs: Vec<PathBuf> = list
        .value
        .iter()
        .map(|dir| resolve(dir.origin.file(), &dir.value))
        .collect();
    SkillSet::load(&dirs)
        .map_err(|e| ConfigError::new(list.origin.clone(), e).in_field(format!("{label}.skills")))
}

/// `dir` as written in `file`: absolute as is, else beside the file.
fn resolve(file: &Path, dir: &str) -> PathBuf {
    let dir = Path::new(dir);
    match file.parent() {
        Some(parent) if dir.is_relative() => parent.join(dir),
        _ => dir.to_path_buf(),
    }
}
