//! Structured answers: the schema an answer must match, and how a failed answer is explained.

use lllm_core::Schema;
use serde_json::{json, Value};

use super::AgentErrorKind;

/// The JSON Schema answers must match, compiled once.
#[derive(Debug)]
pub(crate) struct OutputSchema {
    name: String,
    compiled: Schema,
}

/// An extra check of a structured answer (beyond its schema), such as fitting a Rust type.
pub(crate) type AnswerCheck<'a> = dyn Fn(&Value) -> Result<(), String> + Send + Sync + 'a;

impl OutputSchema {
    /// Compiles `schema`; `name` is what the server is told (cut to the characters servers accept).
    pub(crate) fn new(name: &str, schema: &Value) -> Result<OutputSchema, AgentErrorKind> {
        let compiled = Schema::compile(schema).map_err(AgentErrorKind::OutputSchema)?;
        Ok(Self::compiled(name, compiled))
    }

    /// A schema compiled already (by the tactic loader).
    pub(crate) fn compiled(name: &str, compiled: Schema) -> OutputSchema {
        let name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        OutputSchema {
            name: if name.is_empty() {
                "answer".into()
            } else {
                name
            },
            compiled,
        }
    }

    pub(crate) fn response_format(&self) -> Value {
        json!({"type": "json_schema", "json_schema": {"name": self.name, "schema": self.compiled.value()}})
    }

    /// Parses `text` as JSON (allowing a ```json fence around it) and checks it against the schema,
    /// then with `fits` when given.
    pub(crate) fn check(&self, text: &str, fits: Option<&AnswerCheck<'_>>) -> Result<(), String> {
        let value: Value = serde_json::from_str(strip_fence(text))
            .map_err(|e| format!("the answer is not valid JSON ({e})"))?;
        self.compiled.check(&value).map_err(|e| e.to_string())?;
        fits.map_or(Ok(()), |fits| fits(&value))
    }
}

/// The text the model reads when an answer does not match the required schema.
pub(crate) fn schema_feedback(problem: &str) -> String {
    format!(
        "Your answer does not match the required JSON Schema: {problem}. Reply again with only a JSON value that matches it."
    )
}

/// The text inside a Markdown code fence, if the whole answer is one.
pub(crate) fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|inner| inner.trim_start_matches("json").trim())
        .unwrap_or(trimmed)
}
