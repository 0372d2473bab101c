//! The tactic file's JSON Schema, derived from the loader's own raw types.

use serde_json::Value;

use super::raw::{RawTactic, AGENT_KEY_ALIASES};

/// The JSON Schema (draft 2020-12) of the tactic format, as `lllm schema` prints it. It is derived from
/// the types the loader reads, so it accepts exactly the keys the loader accepts.
pub fn tactic_schema() -> Value {
    let schema = schemars::schema_for!(RawTactic);
    let mut value = schema.to_value();
    add_aliases(&mut value);
    value
}

/// serde accepts the retry knobs' Python names too; the derived schema lists only the new names.
fn add_aliases(schema: &mut Value) {
    let Some(agent) = schema
        .pointer_mut("/$defs/Agent/properties")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (alias, name) in AGENT_KEY_ALIASES {
        if let Some(mut property) = agent.get(name).cloned() {
            if let Some(object) = property.as_object_mut() {
                object.insert(
                    "description".into(),
                    Value::String(format!("Python lllm's name for `{name}`.")),
                );
                object.insert("deprecated".into(), Value::Bool(true));
            }
            agent.insert(alias.to_owned(), property);
        }
    }
}
