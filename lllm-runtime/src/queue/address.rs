//! `nats://HOST:PORT/NAME`: a NATS server and the name of a queue on it.

use std::fmt;
use std::str::FromStr;

use super::TacticSha;

/// Most characters of a queue's name.
pub const MAX_QUEUE_NAME: usize = 64;

/// Where a queue is: its server and its name (which names its streams and subjects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueAddress {
    server: String,
    name: String,
}

/// A queue address written wrongly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("queue `{written}`: {problem}; write nats://HOST:PORT/NAME, NAME of letters, digits, `-` and `_` (at most {MAX_QUEUE_NAME})")]
pub struct QueueAddressError {
    written: String,
    problem: &'static str,
}

impl QueueAddress {
    /// The server's URL, `nats://HOST:PORT`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stream of the items waiting to be run.
    pub(crate) fn items_stream(&self) -> String {
        format!("LLLM_{}_ITEMS", self.name)
    }

    /// The stream of the items' results.
    pub(crate) fn results_stream(&self) -> String {
        format!("LLLM_{}_RESULTS", self.name)
    }

    /// The stream of the items' journals.
    pub(crate) fn journals_stream(&self) -> String {
        format!("LLLM_{}_JOURNALS", self.name)
    }

    /// The subjects of the items stream: one per tactic.
    pub(crate) fn items_subjects(&self) -> String {
        format!("lllm.{}.items.*", self.name)
    }

    /// The subject the items of the tactic with this SHA-256 are published on, which only its
    /// workers' consumer ([`workers`](Self::workers)) reads.
    pub(crate) fn items_subject(&self, tactic: &TacticSha) -> String {
        format!("lllm.{}.items.{tactic}", self.name)
    }

    /// The durable consumer the workers of the tactic with this SHA-256 share.
    pub(crate) fn workers(&self, tactic: &TacticSha) -> String {
        format!("workers-{tactic}")
    }

    /// The subject of the results of the items of the tactic with this SHA-256.
    pub(crate) fn results_subject(&self, tactic: &TacticSha) -> String {
        format!("lllm.{}.results.{}", self.name, &tactic.as_str()[..16])
    }

    /// The subject of one item's journal.
    pub(crate) fn journal_subject(&self, key: &str) -> String {
        format!("lllm.{}.journal.{key}", self.name)
    }
}

impl fmt::Display for QueueAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.server, self.name)
    }
}

impl FromStr for QueueAddress {
    type Err = QueueAddressError;

    fn from_str(text: &str) -> Result<Self, QueueAddressError> {
        // Never echo credentials a user put in the URL.
        let shown = lllm_core::secret::redact_url(text);
        let refuse = |problem| QueueAddressError {
            written: shown.chars().take(120).collect(),
            problem,
        };
        let rest = text
            .strip_prefix("nats://")
            .ok_or(refuse("not a nats:// URL"))?;
        let (host, name) = rest.rsplit_once('/').ok_or(refuse("no queue name"))?;
        if host.contains('@') {
            return Err(refuse(
                "credentials in the URL are not supported yet (use NATS on a trusted network)",
            ));
        }
        if host.is_empty() || host.contains(['/', '?', '#', ' ']) {
            return Err(refuse("no server"));
        }
        let name_ok = !name.is_empty()
            && name.len() <= MAX_QUEUE_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(refuse("the name is not one NATS subjects can carry"));
        }
        Ok(QueueAddress {
            server: format!("nats://{host}"),
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_or_refused_saying_how_to_write_them() {
        let address: QueueAddress = "nats://127.0.0.1:4222/docs-1".parse().expect("valid");
        assert_eq!(address.server(), "nats://127.0.0.1:4222");
        assert_eq!(address.name(), "docs-1");
        let tactic = TacticSha::of(b"agent_configs: []");
        assert_eq!(
            address.items_subject(&tactic),
            format!("lllm.docs-1.items.{tactic}")
        );
        for bad in [
            "http://127.0.0.1:4222/q",
            "nats://127.0.0.1:4222",
            "nats://127.0.0.1:4222/",
            "nats:///q",
            "nats://h:1/a.b",
            "nats://h:1/a*",
            "nats://h:1/a>",
        ] {
            let error = bad.parse::<QueueAddress>().expect_err(bad).to_string();
            assert!(
                error.contains("write nats://HOST:PORT/NAME"),
                "{bad}: {error}"
            );
        }
        let long = format!("nats://h:1/{}", "n".repeat(MAX_QUEUE_NAME + 1));
        assert!(long.parse::<QueueAddress>().is_err());
        let secret = "nats://user:pw-q@h:1/a.b"
            .parse::<QueueAddress>()
            .expect_err("bad name");
        assert!(!secret.to_string().contains("pw-q"), "{secret}");
    }
}
