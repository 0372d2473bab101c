//! Where a value is written: a file, and a line and column in it.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// Where something is written: a file, and a 1-based line and column when known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    file: Arc<Path>,
    position: Option<Position>,
}

impl Origin {
    pub(crate) fn new(file: Arc<Path>, position: Option<Position>) -> Self {
        Origin { file, position }
    }

    /// The file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The line and column, when the problem sits at a key of the file.
    pub fn position(&self) -> Option<Position> {
        self.position
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(position) => write!(f, "{}:{position}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}
