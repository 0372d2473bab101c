//! JSON Schema validation of tool arguments and structured answers.

use serde_json::Value;

/// At most this many violations are listed in one message.
const MAX_LISTED: usize = 3;

/// A compiled JSON Schema.
#[derive(Debug)]
pub struct Schema {
    validator: jsonschema::Validator,
}

impl Schema {
    /// Compiles `schema`; an invalid schema is an error saying why.
    pub fn compile(schema: &Value) -> Result<Schema, String> {
        jsonschema::validator_for(schema)
            .map(|validator| Schema { validator })
            .map_err(|e| format!("is not a valid JSON Schema: {e}"))
    }

    /// Checks `value`; the error lists the first violations with where they are (`/path`).
    pub fn check(&self, value: &Value) -> Result<(), String> {
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
        match problems.len() {
            0 => Ok(()),
            n if n > MAX_LISTED => Err(format!("{}; and more", problems[..MAX_LISTED].join("; "))),
            _ => Err(problems.join("; ")),
        }
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
        let err = schema.check(&json!({"n": "x"})).expect_err("wrong type");
        assert!(err.contains("/n"), "{err}");
        assert!(schema
            .check(&json!({}))
            .expect_err("missing")
            .contains("\"n\""));
        assert!(Schema::compile(&json!({"type": 12})).is_err());
    }
}
