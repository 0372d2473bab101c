//! Errors of tactic files, each naming the file and the line and column or the field.

use std::fmt;
use std::path::PathBuf;

/// A tactic file cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Something is wrong at a known place in the file.
    #[error("{}:{}: {message}", path.display(), position)]
    At {
        /// The file.
        path: PathBuf,
        /// Where.
        position: Position,
        /// What is wrong and what to do.
        message: String,
    },
    /// A field is wrong (after merging `global`, so no single line is to blame).
    #[error("{}: {field}: {message}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field's path, such as `agent_configs[1] (critic).model_name`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `bytes`.
    pub fn of_offset(bytes: &[u8], offset: usize) -> Position {
        let before = &bytes[..offset.min(bytes.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        Position { line, column }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

impl ConfigError {
    /// Where the error is, when a line is known.
    pub fn position(&self) -> Option<Position> {
        match self {
            ConfigError::At { position, .. } => Some(*position),
            _ => None,
        }
    }
}
