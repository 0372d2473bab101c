//! An agent's `skills:` folders, loaded and checked when the tactic loads: a bad skill is an error
//! of the tactic, naming both the `skills:` entry and the `SKILL.md`.

use std::path::{Path, PathBuf};

use super::error::{ConfigError, ConfigErrorKind};
use super::raw::RawTool;
use super::span::At;
use crate::skills::{SkillSet, LOAD_SKILL, READ_SKILL_FILE};

/// The skills of `raw` (each folder relative to the file that names it), or the first that does
/// not load. An agent with skills is offered the skill tools: none of its `tools` may take their
/// names.
pub(crate) fn load(
    raw: Option<At<Vec<At<String>>>>,
    tools: Option<&At<Vec<At<RawTool>>>>,
    label: &str,
) -> Result<SkillSet, ConfigError> {
    let Some(list) = raw.filter(|l| !l.value.is_empty()) else {
        return Ok(SkillSet::default());
    };
    let tools = tools.map(|t| t.value.as_slice()).unwrap_or_default();
    for (i, tool) in tools.iter().enumerate() {
        let name = &tool.value.name;
        if [LOAD_SKILL, READ_SKILL_FILE].contains(&name.value.as_str()) {
            let kind = ConfigErrorKind::Invalid(
                "this is the name of a skill tool (load_skill, read_skill_file), which an agent with `skills:` is offered; rename the tool",
            );
            return Err(ConfigError::new(name.origin.clone(), kind)
                .in_field(format!("{label}.tools[{i}].name")));
        }
    }
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
