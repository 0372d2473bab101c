//! `--var KEY=VALUE`: variables for prompt templates.

use anyhow::anyhow;
use lllm_runtime::config::{is_variable_name, PromptVars};
use serde_json::Value;

/// The variables of `--var KEY=VALUE` settings, in order (a later one wins).
pub(crate) fn parse_vars(raw: &[String]) -> anyhow::Result<PromptVars> {
    let mut vars = PromptVars::new();
    for item in raw {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| anyhow!("--var `{item}` must be KEY=VALUE"))?;
        if !is_variable_name(key) {
            return Err(anyhow!(
                "--var `{item}`: `{key}` is not a variable name (letters, digits and _, not starting with a digit)"
            ));
        }
        vars.insert(key.to_owned(), Value::from(value));
    }
    Ok(vars)
}
