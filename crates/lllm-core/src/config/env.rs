//! `${NAME}` expansion in string values of a tactic file.

/// Why a string could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EnvError {
    /// `${NAME}` names a variable that is not set and has no default.
    Unset(String),
    /// `${` without a closing `}` or with an invalid name.
    Malformed(String),
}

impl EnvError {
    pub(crate) fn describe(&self) -> String {
        match self {
            EnvError::Unset(name) => format!(
                "the environment variable `{name}` is not set; set it, or write `${{{name}:-default}}` to give a default"
            ),
            EnvError::Malformed(text) => format!(
                "`{text}` is not a valid reference: write `${{NAME}}` or `${{NAME:-default}}`, and `$${{` for a literal `${{`"
            ),
        }
    }
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
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
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
}
