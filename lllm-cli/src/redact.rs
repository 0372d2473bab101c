//! The last line of defence for credentials: every message lllm prints on stderr (errors, logs) has
//! the secret values it knows replaced by `[redacted]`, wherever they appear, even inside text a
//! server echoed back.

use std::io::Write;
use std::sync::{LazyLock, RwLock};

use lllm_runtime::config::secret::Secrets;
use lllm_runtime::TacticSpec;

/// Shorter values are not hunted for in everything printed: a header such as `X-Token: none` would
/// blank every "none".
const SHORTEST_SECRET: usize = 6;

static SECRETS: LazyLock<RwLock<Secrets>> = LazyLock::new(RwLock::default);

/// Remembers a value that must never be printed.
pub(crate) fn remember(secret: &str) {
    let secret = secret.trim();
    if secret.len() < SHORTEST_SECRET {
        return;
    }
    SECRETS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .add([secret.to_owned()]);
}

/// Remembers the credentials written into `url`, in every form an HTTP client derives from them
/// (see [`url_credentials`](lllm_runtime::config::secret::url_credentials)).
pub(crate) fn remember_url(url: &str) {
    for value in lllm_runtime::config::secret::url_credentials(url) {
        remember(&value);
    }
}

/// Remembers the key from the environment that requests fall back to.
pub(crate) fn remember_environment() {
    if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        remember(&key);
    }
}

/// Remembers every credential of a tactic ([`TacticSpec::secret_values`]).
pub(crate) fn remember_tactic(spec: &TacticSpec) {
    for value in spec.secret_values() {
        remember(&value);
    }
}

/// `text` with every remembered secret replaced.
pub(crate) fn redact(text: &str) -> String {
    SECRETS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .redact(text)
}

/// Standard error through [`redact`], for the log: each log event arrives in one write.
pub(crate) struct RedactedStderr;

impl Write for RedactedStderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        std::io::stderr().write_all(redact(&text).as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_values_are_replaced_wherever_they_appear() {
        remember("sk-unit-0123456789");
        remember("sk-unit-0123456789-longer");
        remember("none");
        assert_eq!(
            redact("echo: Bearer sk-unit-0123456789-longer and sk-unit-0123456789."),
            "echo: Bearer [redacted] and [redacted]."
        );
        assert_eq!(redact("none of it"), "none of it", "too short to hunt for");
    }
}
