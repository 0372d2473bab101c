#![doc = include_str!("../../../docs/skills.md")]

mod error;
mod file;
mod front;
mod load;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::{SkillError, SkillProblem};

/// Most skills one agent may have: the index the model reads in every request is bounded.
pub const MAX_SKILLS: usize = 256;
/// Most bytes of the index appended to the system prompt (names and descriptions).
pub const MAX_INDEX_BYTES: usize = 32 * 1024;
/// Most bytes of one `SKILL.md` (front matter and body).
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Most bytes of a file `read_skill_file` returns.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;
/// Most characters of a skill's description (the Agent Skills format's bound).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Most entries of one skills folder looked at: a folder of a million files is refused, not listed.
pub const MAX_FOLDER_ENTRIES: usize = 4 * MAX_SKILLS;

/// One skill: a folder with a `SKILL.md` (front matter `name`, `description`, optional
/// `allowed-tools`; other keys kept out of the way) and the files beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    name: String,
    description: String,
    allowed_tools: Option<Vec<String>>,
    dir: PathBuf,
    body: Arc<str>,
}

impl Skill {
    /// The skill's name (its folder's).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What the skill is for, as the index shows it.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// The tools a dialog that loaded the skill may call (`allowed-tools`), when set.
    pub fn allowed_tools(&self) -> Option<&[String]> {
        self.allowed_tools.as_deref()
    }
    /// The skill's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The Markdown body of `SKILL.md`, read once at load (a run sees the same body throughout).
    pub fn body(&self) -> &str {
        &self.body
    }
    /// Whether the skill lets a dialog that loaded it call `tool`: an `allowed-tools` entry is a
    /// tool name, optionally followed by a pattern in parentheses (`Bash(git:*)`), which names the
    /// tool only.
    pub fn allows(&self, tool: &str) -> bool {
        self.allowed_tools.as_ref().is_none_or(|allowed| {
            allowed
                .iter()
                .any(|entry| entry.split('(').next().unwrap_or(entry).trim() == tool)
        })
    }
}

/// An agent's skills, in name order (the index is the same on every load of the same folders).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillSet {
    skills: Vec<Skill>,
}

impl SkillSet {
    /// Loads every skill of `dirs` (each `DIR/NAME/SKILL.md`), checked: front matter, name
    /// matching its folder, no duplicates, no links, sizes and count bounded.
    pub fn load<P: AsRef<Path>>(dirs: &[P]) -> Result<SkillSet, SkillError> {
        load::load(dirs.iter().map(AsRef::as_ref))
    }

    /// The skills, in name order.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// Whether there is no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.skills[i])
    }

    /// The index appended to the system prompt: fixed for the run (names and descriptions only,
    /// never a body), so that loading a skill never changes the cached prefix.
    pub fn index(&self) -> String {
        let mut index = String::from(INDEX_HEAD);
        for skill in &self.skills {
            index.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        index
    }

    /// The text of `path` (relative, inside the folder of skill `name`), or why it is refused, in
    /// words the model reads: no `..`, no absolute path, no link, only a regular file, bounded.
    pub fn read_file(&self, name: &str, path: &str) -> Result<String, String> {
        let skill = self.get(name).ok_or_else(|| self.unknown(name))?;
        file::read_contained(&skill.dir, path)
    }

    /// The refusal of an unknown skill name, naming the known ones.
    pub fn unknown(&self, name: &str) -> String {
        let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        format!(
            "no skill `{}`; the skills are: {}",
            name.chars().take(64).collect::<String>(),
            known.join(", ")
        )
    }
}

/// The index's opening: what the model may do with the list.
const INDEX_HEAD: &str = "\n\n# Skills\nThese skills are available. When a task matches one, call `load_skill` with its name to read its instructions; call `read_skill_file` with its name and a relative path to read a file it mentions.";

/// The names of the skills loaded in a dialog, from its messages: each `load_skill` call whose
/// result is in the dialog and is not an error. Which skills are loaded is the dialog's own state:
/// forks, resumes and journals carry it with the messages.
pub fn loaded_skills<'m>(messages: impl IntoIterator<Item = &'m crate::Message>) -> Vec<String> {
    let messages: Vec<&crate::Message> = messages.into_iter().collect();
    // The calls answered without an error, by id: one pass, whatever the dialog's length.
    let answered: std::collections::HashSet<&str> = messages
        .iter()
        .filter(|m| !m.text().starts_with("error:"))
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut loaded = Vec::new();
    for call in messages.iter().flat_map(|m| &m.tool_calls) {
        if call.name != LOAD_SKILL || !answered.contains(call.id.as_str()) {
            continue;
        }
        let name = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|a| a.get("name").and_then(|n| n.as_str()).map(str::to_owned));
        if let Some(name) = name.filter(|n| !loaded.contains(n)) {
            loaded.push(name);
        }
    }
    loaded
}

/// The tool that loads a skill.
pub const LOAD_SKILL: &str = "load_skill";
/// The tool that reads a file of a skill.
pub const READ_SKILL_FILE: &str = "read_skill_file";

#[cfg(test)]
mod tests;
