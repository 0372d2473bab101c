//! Errors of tool sets and command tools, found when an agent is built.

/// A set of tools cannot be offered to a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// A tool's name is not one servers accept.
    #[error("tool name {problem}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why it is refused.
        problem: String,
    },
    /// Two tools have the same name.
    #[error("two tools are called `{name}`")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A tool's parameters are not an object JSON Schema that compiles.
    #[error("tool `{tool}`: parameters {problem}")]
    InvalidParameters {
        /// The tool.
        tool: String,
        /// Why they are refused.
        problem: String,
    },
}
