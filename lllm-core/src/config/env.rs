//! `${NAME}` expansion in string values of a tactic file.

/// Why a `${NAME}` reference could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `${NAME}` names a variable that is not set and has no default.
    #[error("the environment variable `{0}` is not set; set it, or write `${{{0}:-default}}` to give a default")]
    Unset(String),
    /// `${` without a closing `}` or with an invalid name.
    #[error("`{0}` is not a valid reference: write `${{NAME}}` or `${{NAME:-default}}`, and `$${{` for a literal `${{`")]
    Malformed(String),
}

/// Expands `${NAME}` and `${NAME:-default}` using `lookup`; `$${` stands for a literal `${`.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, EnvError> {
    if !text.contains("${") {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let end = tail
                .find('}')
                .ok_or_else(|| EnvError::Malformed(after.to_owned()))?;
            let inner = &tail[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            if !super::is_variable_name(name) {
                return Err(EnvError::Malformed(format!("${{{inner}}}")));
            }
            match (lookup(name), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => return Err(EnvError::Unset(name.to_owned())),
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Keys of `model_args` whose values stay strings even when a reference expands to a number.
const STRING_KEYS: [&str; 3] = ["api_base", "api_key", "extra_headers"];

/// Expands references in every string of a `model_args` value. A value that is exactly one reference
/// (`"${MAX_TOKENS:-24}"`) becomes a number or boolean when it expands to one, so numeric arguments can
/// come from the environment; `api_base`, `api_key` and `extra_headers` always stay strings.
pub(crate) fn expand_model_arg(
    key: &str,
    value: &mut serde_json::Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), (String, EnvError)> {
    let typed = !STRING_KEYS.contains(&key);
    expand_json(&format!("model_args.{key}"), value, typed, lookup).map_err(|(field, e)| {
        // These may hold credentials (a key, a password in the URL, a token header): never quote them.
        match e {
            EnvError::Malformed(_) if !typed => (
                field,
                EnvError::Malformed(crate::secret::REDACTED.to_owned()),
            ),
            e => (field, e),
        }
    })
}

fn expand_json(
    path: &str,
    value: &mut serde_json::Value,
    typed: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), (String, EnvError)> {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let expanded = expand(text, lookup).map_err(|e| (path.to_owned(), e))?;
            let whole_reference =
                text.starts_with("${") && text.ends_with('}') && text.matches("${").count() == 1;
            let scalar = (typed && whole_reference)
                .then(|| serde_json::from_str::<Value>(expanded.trim()).ok())
                .flatten()
                .filter(|v| v.is_number() || v.is_boolean());
            *value = scalar.unwrap_or(Value::String(expanded));
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, v)| expand_json(&format!("{path}[{i}]"), v, typed, lookup)),
        Value::Object(map) => map
            .iter_mut()
            .try_for_each(|(k, v)| expand_json(&format!("{path}.{k}"), v, typed, lookup)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "PORT").then(|| "8000".to_owned())
    }

    #[test]
    fn expands_defaults_and_escapes() {
        assert_eq!(
            expand("http://127.0.0.1:${PORT}/v1", &env),
            Ok("http://127.0.0.1:8000/v1".into())
        );
        assert_eq!(expand("${HOST:-localhost}", &env), Ok("localhost".into()));
        assert_eq!(
            expand("cost $5 and $${PORT}", &env),
            Ok("cost $5 and ${PORT}".into())
        );
        assert_eq!(expand("${NOPE}", &env), Err(EnvError::Unset("NOPE".into())));
        assert!(matches!(
            expand("${PORT", &env),
            Err(EnvError::Malformed(_))
        ));
        assert!(matches!(expand("${1X}", &env), Err(EnvError::Malformed(_))));
    }

    #[test]
    fn whole_references_in_model_args_become_numbers_where_they_can() {
        use serde_json::{json, Value};
        let run = |key: &str, value: Value| {
            let mut value = value;
            expand_model_arg(key, &mut value, &env).map(|()| value)
        };
        assert_eq!(run("max_tokens", json!("${PORT}")), Ok(json!(8000)));
        assert_eq!(
            run("stop", json!(["${PORT}", "x${PORT}"])),
            Ok(json!([8000, "x8000"]))
        );
        assert_eq!(run("temperature", json!("${T:-0.5}")), Ok(json!(0.5)));
        assert_eq!(run("api_key", json!("${PORT}")), Ok(json!("8000")));
        assert_eq!(
            run("extra_headers", json!({"x-n": "${PORT}"})),
            Ok(json!({"x-n": "8000"}))
        );
        assert_eq!(run("user", json!("${U:-alice}")), Ok(json!("alice")));
        let err = run("seed", json!({"a": "${NOPE}"})).expect_err("unset");
        assert_eq!(err.0, "model_args.seed.a");
    }
}
