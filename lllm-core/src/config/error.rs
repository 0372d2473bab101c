//! Errors of tactic files. Each names the file and, when the problem sits at a key, its line and column.

use std::fmt;
use std::path::Path;

use super::origin::{Origin, Position};
use super::steps_error::StepsError;
use crate::endpoint::ModelArgsError;
use crate::hints::HintsError;
use crate::prompt::PromptError;

/// A tactic file cannot be loaded: where, which field, and what is wrong.
#[derive(Debug)]
pub struct ConfigError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    origin: Origin,
    field: Option<String>,
    kind: ConfigErrorKind,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.0.origin)?;
        if let Some(field) = &self.0.field {
            write!(f, "{field}: ")?;
        }
        write!(f, "{}", self.0.kind)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            // Their text is already the message; naming them as the cause would print it twice.
            ConfigErrorKind::ModelArgs(_)
            | ConfigErrorKind::Tool(_)
            | ConfigErrorKind::Env(_)
            | ConfigErrorKind::Skill(_) => None,
            kind => std::error::Error::source(kind),
        }
    }
}

/// What is wrong with a tactic file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file (or a file it names) cannot be read.
    #[error("cannot read the file")]
    Read(#[source] std::io::Error),
    /// The file is larger than a tactic's file may be, or the files read so far are together.
    #[error("the file has more than {limit} bytes, the limit of a tactic's files (raise it with LLLM_MAX_FILE_BYTES)")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The files a tactic reads (itself, its bases, its prompts) are together larger than allowed.
    #[error("the tactic's files have more than {limit} bytes together (the limit is {factor} times LLLM_MAX_FILE_BYTES)")]
    TooLargeTogether {
        /// The limit in bytes.
        limit: u64,
        /// The limit as a multiple of the per-file limit.
        factor: u64,
    },
    /// A file that must be a regular file is something else.
    #[error("{what}, not a regular file: only regular files are read")]
    NotAFile {
        /// What it is (`a directory`, `a named pipe (FIFO)`, `a device`, ...).
        what: &'static str,
    },
    /// A file a tactic names resolves (through `..` or a symbolic link) outside the folder it must
    /// stay in.
    #[error("{what} resolves to {}, outside {}: a tactic may only name files inside its own folder", resolved.display(), root.display())]
    Outside {
        /// What the file is (`the base`).
        what: &'static str,
        /// Where it leads.
        resolved: std::path::PathBuf,
        /// The folder it must stay in.
        root: std::path::PathBuf,
    },
    /// A `base:` chain is longer than allowed.
    #[error("the chain of base files is longer than {limit} files")]
    BaseTooDeep {
        /// The most files of a chain.
        limit: usize,
    },
    /// A setting of the loader (such as `LLLM_MAX_FILE_BYTES`) cannot be used.
    #[error("{name}: {problem}")]
    Setting {
        /// The setting.
        name: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The file is not UTF-8.
    #[error("the file is not valid UTF-8; save it as UTF-8")]
    NotUtf8,
    /// The file holds nothing.
    #[error("the file is empty; a tactic needs at least `agent_configs` with one agent")]
    Empty,
    /// The YAML does not parse, or a value has the wrong type.
    #[error("{message}")]
    Yaml {
        /// The parser's explanation, without its position (the error's origin has it).
        message: String,
    },
    /// A key the format does not have (shown shortened when it is long).
    #[error("unknown key `{}`, expected one of {}{}", shorten(key), backticked(.expected), did_you_mean(*.suggestion))]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The keys allowed there.
        expected: Vec<&'static str>,
        /// The allowed key closest to a likely typo.
        suggestion: Option<&'static str>,
    },
    /// A value the format does not have (such as an unknown profile; shown shortened when long).
    #[error("unknown value `{}`, expected one of {}{}", shorten(value), backticked(.expected), did_you_mean(*.suggestion))]
    UnknownValue {
        /// The value as written.
        value: String,
        /// The values allowed there.
        expected: Vec<&'static str>,
        /// The allowed value closest to a likely typo.
        suggestion: Option<&'static str>,
    },
    /// A required key is missing.
    #[error("{what} is required: {hint}")]
    Missing {
        /// What is missing.
        what: &'static str,
        /// What to write.
        hint: &'static str,
    },
    /// One wire field set twice with different meanings.
    #[error("`{field}` is also set at {other} (`{other_field}`); the two mean different things on the wire, so set only one: {hint}")]
    Conflict {
        /// The field set here.
        field: String,
        /// Where the other setting is written.
        other: Origin,
        /// The other setting's field.
        other_field: String,
        /// Which one to keep, and why.
        hint: &'static str,
    },
    /// A name is used twice where names must be unique.
    #[error("`{name}` is already used at {first}; {what} must be unique")]
    Duplicate {
        /// The name.
        name: String,
        /// Where it is first used.
        first: Origin,
        /// What must be unique.
        what: &'static str,
    },
    /// A `base:` chain returns to a file already being read.
    #[error("`{base}` is already being read ({chain}): bases may not form a cycle")]
    BaseCycle {
        /// The base as written.
        base: String,
        /// The files being read, in order.
        chain: String,
    },
    /// A `${NAME}` reference cannot be expanded.
    #[error("{0}")]
    Env(#[from] super::env::EnvError),
    /// A section that takes keys holds a value of another kind.
    #[error("must be a mapping of {}, not {found}", backticked(.keys))]
    NotAMapping {
        /// The keys the section takes.
        keys: &'static [&'static str],
        /// The kind written (`a list`, `a number`).
        found: &'static str,
    },
    /// A scalar cannot be read as the type the key takes.
    #[error("expected {expected} here")]
    WrongType {
        /// What the key takes.
        expected: &'static str,
    },
    /// Model arguments are invalid (the error's field names the argument).
    #[error("{}", .0.message)]
    ModelArgs(#[from] ModelArgsError),
    /// Inference hints are invalid.
    #[error(transparent)]
    Hints(#[from] HintsError),
    /// A prompt cannot be loaded or does not parse.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// A JSON Schema does not compile.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// A command tool is invalid (the error's field names the tool's field).
    #[error("{}", .0.problem)]
    Tool(#[from] crate::tool::ToolConfigError),
    /// The steps would fail at run time.
    #[error(transparent)]
    Steps(#[from] StepsError),
    /// An MCP server's settings or an agent's `mcp:` are invalid (the error's field names which).
    #[error("{0}")]
    Mcp(String),
    /// A value its rule refuses (a number of seconds, a limit, a URL, a header); the error's field
    /// names the value.
    #[error(transparent)]
    Value(#[from] crate::ValueError),
    /// `context:` settings that cannot work.
    #[error(transparent)]
    Context(#[from] crate::ContextError),
    /// An agent's `subagents:` or `max_background_tasks` are invalid (the error's field names
    /// which).
    #[error("{0}")]
    Subagents(String),
    /// A skill of an agent's `skills:` folders does not load (the error names its `SKILL.md`).
    #[error("{0}")]
    Skill(#[from] crate::skills::SkillError),
    /// Any other invalid value.
    #[error("{0}")]
    Invalid(&'static str),
    /// An eval file's value its rule refuses (a pattern that does not compile, an agent the tactic
    /// does not have); the error's field names the value.
    #[error("{0}")]
    Eval(String),
    /// An eval file holds nothing.
    #[error("the file is empty; an eval file needs `tactic:` and `cases:`")]
    EmptyEvals,
}

/// Text written in the file, cut to a length a message can show.
pub(crate) fn shorten(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    let mut chars = text.chars().filter(|c| !c.is_control());
    let short: String = chars.by_ref().take(MAX_CHARS).collect();
    if chars.next().is_some() {
        format!("{short}…")
    } else {
        short
    }
}

fn backticked(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

impl ConfigError {
    pub(crate) fn new(origin: Origin, kind: impl Into<ConfigErrorKind>) -> Self {
        ConfigError(Box::new(Inner {
            origin,
            field: None,
            kind: kind.into(),
        }))
    }

    /// Names the field the error is about (such as `agent_configs[1] (critic).model_name`).
    pub(crate) fn in_field(mut self, field: impl Into<String>) -> Self {
        self.0.field = Some(field.into());
        self
    }

    /// Where the error is: the file, with the line and column when known.
    pub fn origin(&self) -> &Origin {
        &self.0.origin
    }

    /// The file the error is in.
    pub fn file(&self) -> &Path {
        self.0.origin.file()
    }

    /// The line and column, when known.
    pub fn position(&self) -> Option<Position> {
        self.0.origin.position()
    }

    /// The field's path, such as `agent_configs[1] (critic).model_name`, when the error is about one.
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    /// What is wrong.
    pub fn kind(&self) -> &ConfigErrorKind {
        &self.0.kind
    }

    /// Whether a file could not be read (rather than being invalid).
    pub fn is_io(&self) -> bool {
        matches!(self.0.kind, ConfigErrorKind::Read(_))
    }
}
