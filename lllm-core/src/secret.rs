//! A string that never shows itself in logs, errors or debug output.

use std::fmt;

/// An API key or other credential. `Debug` and `Display` print `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// What replaces a secret in anything printed.
pub const REDACTED: &str = "[redacted]";

/// Whether a header's value is a credential: `authorization`, cookies, and any name that mentions a key,
/// token, secret, password or auth. Such values are never printed.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "cookie"
        || name == "set-cookie"
        || ["auth", "key", "token", "secret", "password"]
            .iter()
            .any(|word| name.contains(word))
}

/// What to print for header `name` with `value`: the value, or `[redacted]` for a credential.
pub fn printable_header_value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_header(name) {
        REDACTED
    } else {
        value
    }
}

/// `url` with any user name, password and query string replaced by `[redacted]`, safe to print.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_owned(),
    };
    let path = match path.split_once('?') {
        Some((before, _)) => format!("{before}?{REDACTED}"),
        None => path.to_owned(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{host}{path}"),
        None => format!("{host}{path}"),
    }
}

/// Secrets shorter than this are not searched for in texts: replacing every "ab" in a message would
/// garble it, and so short a credential protects nothing.
const MIN_SECRET_CHARS: usize = 4;

/// The credentials one request carries, to be replaced by `[redacted]` in any text shown.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// The values of every credential header (`authorization`, and any name that mentions a key,
    /// token, secret, password or auth), the token of an `authorization` value without its scheme,
    /// and the password and credential-looking query values (`?api_key=…`) of `url`.
    pub fn of_request(headers: &[(String, String)], url: &str) -> Self {
        let mut values = Vec::new();
        for (name, value) in headers {
            if !is_secret_header(name) {
                continue;
            }
            values.push(value.trim().to_owned());
            if let Some((_scheme, token)) = value.trim().split_once(' ') {
                values.push(token.trim().to_owned());
            }
        }
        if let Ok(url) = url::Url::parse(url) {
            values.extend(url.password().map(str::to_owned));
            values.extend(
                url.query_pairs()
                    .filter(|(name, _)| is_secret_header(name))
                    .map(|(_, v)| v.into_owned()),
            );
        }
        Self::from_values(values)
    }

    /// These values (short ones left out), longest first so that a secret containing another is
    /// replaced whole.
    pub fn from_values(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets = Secrets::default();
        secrets.add(values);
        secrets
    }

    /// Adds these values (short ones left out), keeping the longest first.
    pub fn add(&mut self, values: impl IntoIterator<Item = String>) {
        self.0.extend(
            values
                .into_iter()
                .filter(|v| v.chars().count() >= MIN_SECRET_CHARS),
        );
        self.0
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.0.dedup();
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Secrets) {
        self.add(other.0.iter().cloned());
    }

    /// Replaces every secret in every string of `value` (keys stay as they are), so that a JSON
    /// document stays valid whatever a secret looks like.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) if self.0.iter().any(|s| text.contains(s.as_str())) => {
                *text = self.redact(text);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The longest secret, in characters.
    pub fn longest_chars(&self) -> usize {
        self.0.iter().map(|s| s.chars().count()).max().unwrap_or(0)
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_and_urls_are_recognised() {
        for name in [
            "Authorization",
            "x-api-key",
            "X-Auth-Token",
            "api-key",
            "Cookie",
            "x-client-secret",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in [
            "x-session-id",
            "x-dynamo-parent-session-id",
            "x-team",
            "content-type",
        ] {
            assert!(!is_secret_header(name), "{name}");
        }
        assert_eq!(
            redact_url("https://user:pw@example.invalid:8443/v1?key=abc"),
            "https://[redacted]@example.invalid:8443/v1?[redacted]"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8000/v1"),
            "http://127.0.0.1:8000/v1"
        );
    }

    #[test]
    fn never_prints_the_value() {
        let key = Secret::new("sk-very-secret");
        assert!(!format!("{key:?} {key}").contains("sk-very"));
        assert_eq!(key.expose(), "sk-very-secret");
    }
}
