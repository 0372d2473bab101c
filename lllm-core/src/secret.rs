//! Credentials that never show themselves: a [`Secret`] prints `[redacted]`, [`Secrets`] replaces
//! the credentials of a request or a run in any text shown, and [`redact_url`],
//! [`url_credentials`] and [`is_secret_header`] find the credentials a URL or a header carries.

use std::fmt;

use base64::Engine as _;

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
/// The user info ends at the *last* `@`, even past a `/`, `?` or `#`: a password written without
/// percent-encoding may hold any of them, and redacting too much of a path with an `@` costs
/// nothing.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((_, after)) => (true, after),
        None => (false, rest),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = match userinfo {
        true => format!("{REDACTED}@{authority}"),
        false => authority.to_owned(),
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

/// The credentials `url` carries, in every form lllm or its HTTP client may put into a text: the
/// password as written and percent-decoded, the `user:password` pair, and the `Basic <base64>`
/// value of the `Authorization` header an HTTP client sends for it (and the base64 alone); for a
/// user name without a password (`https://TOKEN@host`), the name is the credential. Also the
/// values of query parameters named like credentials (`?api_key=…`). Lenient, as [`redact_url`]
/// is: a URL that does not parse still gives up its user info, since it may be quoted in the
/// error that says so.
pub fn url_credentials(url: &str) -> Vec<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    // The user info ends at the last `@`, as for `redact_url`.
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((userinfo, rest)) => (Some(userinfo).filter(|u| !u.is_empty()), rest),
        None => (None, rest),
    };
    let after = &rest[rest.find(['/', '?', '#']).unwrap_or(rest.len())..];
    let mut values = Vec::new();
    if let Some(userinfo) = userinfo {
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        let credential = if password.is_empty() { user } else { password };
        values.push(credential.to_owned());
        values.push(percent_decoded(credential));
        let pair = format!("{}:{}", percent_decoded(user), percent_decoded(password));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&pair);
        values.push(format!("Basic {encoded}"));
        values.push(encoded);
        values.push(pair);
        values.push(userinfo.to_owned());
    }
    let query = after.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    for pair in query.split('&') {
        if let Some((name, value)) = pair.split_once('=') {
            if is_secret_header(&percent_decoded(name)) {
                values.push(value.to_owned());
                values.push(percent_decoded(&value.replace('+', " ")));
            }
        }
    }
    values.retain(|v| !v.trim().is_empty() && v.as_str() != ":");
    values.sort();
    values.dedup();
    values
}

/// `text` with its `%XX` escapes decoded (lossily: what is not UTF-8 is replaced).
fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
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
    /// and the credentials of `url` in every form ([`url_credentials`]).
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
        values.extend(url_credentials(url));
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
        // Credentials with an unencoded `/`, `?` or `#`, a token, an empty user: up to the last `@`.
        for url in [
            "nats://user:pa/ss?w#rd@h:1/q",
            "nats://tok-en@h:1/q",
            "nats://:pass-word@h:1/q",
            "nats://u:p%40ss@h:1/q",
        ] {
            assert_eq!(redact_url(url), "nats://[redacted]@h:1/q", "{url}");
        }
    }

    #[test]
    fn url_credentials_come_in_every_form_a_client_derives() {
        // reqwest sends `Basic base64(user:password)` with both parts percent-decoded.
        let found = url_credentials("http://ann:p%40ss-word@127.0.0.1:8/mcp?api_key=q-123&page=2");
        for expected in [
            "p%40ss-word",
            "p@ss-word",
            "ann:p@ss-word",
            "ann:p%40ss-word",
            "YW5uOnBAc3Mtd29yZA==",
            "Basic YW5uOnBAc3Mtd29yZA==",
            "q-123",
        ] {
            assert!(
                found.iter().any(|v| v == expected),
                "{expected} in {found:?}"
            );
        }
        assert!(!found.iter().any(|v| v == "2" || v == "ann"), "{found:?}");
        // A token as the user name; a URL that does not parse.
        let token = url_credentials("https://ghp_token123@example.invalid/x");
        assert!(token.iter().any(|v| v == "ghp_token123"), "{token:?}");
        assert!(
            token.iter().any(|v| v == "Z2hwX3Rva2VuMTIzOg=="),
            "{token:?}"
        );
        let broken = url_credentials("http://u:hunter2pass@exa mple.com:4318");
        assert!(broken.iter().any(|v| v == "hunter2pass"), "{broken:?}");
        let slash = url_credentials("nats://u:pa/ss-word@h:1/q");
        assert!(slash.iter().any(|v| v == "pa/ss-word"), "{slash:?}");
        assert!(url_credentials("http://127.0.0.1:8000/v1?x=1").is_empty());
        let secrets = Secrets::of_request(&[], "http://ann:p%40ss-word@h/v1");
        assert_eq!(
            secrets.redact("who is Basic YW5uOnBAc3Mtd29yZA==? p@ss-word"),
            "who is [redacted]? [redacted]"
        );
    }

    #[test]
    fn never_prints_the_value() {
        let key = Secret::new("sk-very-secret");
        assert!(!format!("{key:?} {key}").contains("sk-very"));
        assert_eq!(key.expose(), "sk-very-secret");
    }
}
