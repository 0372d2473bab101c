//! How a server is reached: what a builder was told, and the transport it becomes once checked.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use lllm_core::internal::typed_header;
use lllm_core::secret::{is_secret_header, Secrets};
use lllm_core::{check_http_url, McpAuth, ValueError};

use super::auth::HttpAuth;

/// What a builder was told about the transport.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Stdio {
        command: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// How a server is reached, checked.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    Stdio {
        command: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: PathBuf,
    },
    Http {
        url: String,
        headers: HashMap<http::HeaderName, http::HeaderValue>,
        auth: HttpAuth,
    },
}

impl Kind {
    /// The transport, checked by the rules a tactic file's `command:`, `url:` and `headers:` follow,
    /// and the credentials it carries (kept out of messages). `auth` is for HTTP servers only.
    pub(crate) fn transport(
        &self,
        server: &str,
        auth: Option<&McpAuth>,
    ) -> Result<(Transport, Secrets), String> {
        match self {
            Kind::Stdio { .. } if auth.is_some() => {
                Err("`auth` is for servers reached over HTTP".into())
            }
            Kind::Stdio { command, env, cwd } => {
                if command.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err("the command must name a program".into());
                }
                let cwd = match cwd {
                    Some(dir) => dir.clone(),
                    None => {
                        std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?
                    }
                };
                let secrets = Secrets::from_values(
                    env.iter()
                        .filter(|(name, _)| is_secret_header(name))
                        .map(|(_, v)| v.clone()),
                );
                let transport = Transport::Stdio {
                    command: command.clone(),
                    env: env.clone(),
                    cwd,
                };
                Ok((transport, secrets))
            }
            Kind::Http { url, headers } => {
                let secrets = Secrets::of_request(headers, url);
                // The URL may carry a password: the message never quotes it.
                check_http_url(url).map_err(|e| format!("url: {e}"))?;
                let mut map = HashMap::new();
                for (name, value) in headers {
                    let (name, mut value) = typed_header(name, value).map_err(|e| match e {
                        ValueError::HeaderName => {
                            format!("header `{}`: {e}", super::printable(name))
                        }
                        // The name is valid, so it can be shown; the value may be a credential.
                        e => format!("header `{name}`: {e}"),
                    })?;
                    value.set_sensitive(is_secret_header(name.as_str()));
                    map.insert(name, value);
                }
                let transport = Transport::Http {
                    url: url.clone(),
                    headers: map,
                    auth: HttpAuth {
                        server: server.to_owned(),
                        auth: auth.cloned(),
                    },
                };
                Ok((transport, secrets))
            }
        }
    }
}
