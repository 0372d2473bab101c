//! Why a skill does not load: the file (and line, when the problem sits at one) and what is wrong.

use std::fmt;
use std::path::PathBuf;

use super::{MAX_DESCRIPTION_CHARS, MAX_FOLDER_ENTRIES, MAX_INDEX_BYTES, MAX_SKILLS};
use crate::ReadProblem;

/// A skill (or a skills folder) that does not load.
#[derive(Debug)]
pub struct SkillError {
    /// The file or folder.
    pub file: PathBuf,
    /// The 1-based line and column, when the problem sits at one.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub problem: SkillProblem,
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, column)) => write!(f, "{}:{line}:{column}: ", self.file.display())?,
            None => write!(f, "{}: ", self.file.display())?,
        }
        write!(f, "{}", self.problem)
    }
}

impl std::error::Error for SkillError {}

/// What is wrong with a skill.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillProblem {
    /// `SKILL.md` does not open with front matter.
    #[error("no front matter: SKILL.md must start with a `---` line, YAML with `name` and `description`, then a `---` line")]
    NoFrontMatter,
    /// The front matter does not parse as YAML.
    #[error("the front matter is not YAML: {0}")]
    NotYaml(String),
    /// The front matter is YAML of another shape than a mapping.
    #[error("the front matter must be a mapping of keys (`name`, `description`, `allowed-tools`)")]
    NotAMapping,
    /// A required key is missing or empty.
    #[error("`{0}` is required in the front matter, as non-empty text")]
    Missing(&'static str),
    /// A key holds a value of another type.
    #[error("`{key}` must be {expected}")]
    WrongType {
        /// The key.
        key: &'static str,
        /// What it takes.
        expected: &'static str,
    },
    /// The name is not the folder's.
    #[error("the name `{name}` is not its folder's (`{folder}`): a skill is named by its folder")]
    NameNotFolder {
        /// The front matter's name.
        name: String,
        /// The folder's.
        folder: String,
    },
    /// The name is not one a tool argument can carry plainly.
    #[error(
        "the name `{0}` is not a skill name: lowercase letters, digits and hyphens, at most 64"
    )]
    BadName(String),
    /// The description is longer than the bound.
    #[error("the description has {0} characters; at most {MAX_DESCRIPTION_CHARS}")]
    LongDescription(usize),
    /// Two skills have one name.
    #[error("the skill `{name}` is also in {}: skill names must be unique", first.display())]
    Duplicate {
        /// The name.
        name: String,
        /// The other skill's `SKILL.md`.
        first: PathBuf,
    },
    /// `SKILL.md` (or the folder) cannot be read.
    #[error("cannot read it: {0}")]
    Read(ReadProblem),
    /// A skill folder or its `SKILL.md` is a symbolic link.
    #[error("it is a symbolic link: a skill's folder and SKILL.md must be real, so that what the skill reads stays inside it")]
    Link,
    /// `SKILL.md` is not UTF-8.
    #[error("the file is not valid UTF-8")]
    NotUtf8,
    /// More skills than the index may show.
    #[error("more than {MAX_SKILLS} skills: the index every request carries is bounded; give the agent fewer skill folders")]
    TooMany,
    /// A skills folder with more entries than are looked at.
    #[error("the folder has more than {MAX_FOLDER_ENTRIES} entries: a skills folder holds skill folders only")]
    TooManyEntries,
    /// The index would pass its bound.
    #[error("the skills' index would have {0} bytes, more than {MAX_INDEX_BYTES}: shorten descriptions or give the agent fewer skills")]
    IndexTooLarge(usize),
}
