//! JSON Schema validation of tool arguments and structured answers.

use std::sync::Arc;

use serde_json::Value;

/// At most this many violations are listed in one message.
const MAX_LISTED: usize = 3;

/// A compiled JSON Schema, with the schema it was compiled from. Cloning shares the compiled form.
#[derive(Debug, Clone)]
pub struct Schema {
    source: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.source == other.source
    }
}

impl Schema {
    /// Compiles `schema`; an invalid schema is an error saying why.
    pub fn compile(schema: &Value) -> Result<Schema, SchemaError> {
        jsonschema::validator_for(schema)
            .map(|validator| Schema {
                source: Arc::new(schema.clone()),
                validator: Arc::new(validator),
            })
            .map_err(|e| SchemaError(e.to_string()))
    }

    /// The schema as written.
    pub fn value(&self) -> &Value {
        &self.source
    }

    /// Checks `value`; the error lists the first violations with where they are (`/path`).
    pub fn check(&self, value: &Value) -> Result<(), SchemaViolations> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(MAX_LISTED + 1)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        let more = problems.len() > MAX_LISTED;
        Err(SchemaViolations {
            problems: problems.into_iter().take(MAX_LISTED).collect(),
            more,
        })
    }
}

/// A JSON Schema does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("is not a valid JSON Schema: {0}")]
pub struct SchemaError(String);

/// Why a value does not match a schema: the first few violations, each with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}", problems.join("; "), if *more { "; and more" } else { "" })]
pub struct SchemaViolations {
    problems: Vec<String>,
    more: bool,
}

impl SchemaViolations {
    /// Each violation listed, such as `at /n: "x" is not of type "integer"`.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_where_a_value_breaks_the_schema() {
        let schema = Schema::compile(
            &json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .expect("valid schema");
        assert_eq!(schema.check(&json!({"n": 3})), Ok(()));
        let err = schema
            .check(&json!({"n": "x"}))
            .expect_err("wrong type")
            .to_string();
        assert!(err.contains("/n"), "{err}");
        assert!(schema
            .check(&json!({}))
            .expect_err("missing")
            .to_string()
            .contains("\"n\""));
        assert!(Schema::compile(&json!({"type": 12})).is_err());
    }
}
