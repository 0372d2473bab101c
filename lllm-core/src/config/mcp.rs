//! `mcp_servers:` and each agent's `mcp:`, checked into [`McpServerConfig`]s and [`McpUse`]s. What can
//! only be known from a running server (its tool names, a clash between two servers' tools) is
//! checked when the run starts the servers.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::env;
use super::error::{ConfigError, ConfigErrorKind};
use super::origin::Origin;
use super::raw::{Entries, RawConfirm, RawMcpServer, RawMcpServers, RawMcpUse};
use super::span::At;
use crate::mcp::{
    prefix_problem, ConfirmTools, McpServerConfig, McpTransport, McpUse, ToolFilter,
    DEFAULT_MCP_STARTUP_TIMEOUT_S, DEFAULT_MCP_TIMEOUT_S,
};
use crate::tool::{tool_name_problem, DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_LIMIT};
use crate::values::{check_header, check_http_url, SecondsRange, ValueError};

/// An error about the server `name`'s `field`, at `origin`.
fn fail(origin: &Origin, name: &str, field: &str, problem: String) -> ConfigError {
    ConfigError::new(origin.clone(), ConfigErrorKind::Mcp(problem))
        .in_field(format!("mcp_servers.{name}.{field}"))
}

/// Checks every server, expanding `${NAME}` references with `lookup`.
pub(crate) fn servers(
    raw: Option<At<RawMcpServers>>,
    lookup: &dyn Fn(&str) -> Option<String>,
    programs: &dyn Fn(&str, &Path) -> Option<String>,
) -> Result<Vec<McpServerConfig>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    raw.value
        .0
        .into_iter()
        .map(|(name, server)| {
            let check = ServerCheck {
                name: &name,
                lookup,
            };
            check.server_config(server, programs)
        })
        .collect()
}

/// The checks of one server: its name, and where `${NAME}` references are looked up.
pub(super) struct ServerCheck<'a> {
    name: &'a At<String>,
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl ServerCheck<'_> {
    fn server_config(
        &self,
        raw: At<RawMcpServer>,
        programs: &dyn Fn(&str, &Path) -> Option<String>,
    ) -> Result<McpServerConfig, ConfigError> {
        let At {
            value: server,
            origin,
        } = raw;
        let n = self.name.value.as_str();
        if let Some(problem) = tool_name_problem(n) {
            let kind = ConfigErrorKind::Mcp(format!("server name {problem}, as tool names"));
            return Err(ConfigError::new(self.name.origin.clone(), kind).in_field("mcp_servers"));
        }
        let transport = match (&server.command, &server.url) {
            (Some(command), None) => self.stdio(command, &server, &origin, programs)?,
            (None, Some(url)) => self.http(url, &server)?,
            (Some(_), Some(url)) => {
                return Err(fail(&url.origin, n, "url", "set either `command:` (a program speaking MCP on stdio) or `url:` (streamable HTTP), not both".into()));
            }
            (None, None) => {
                return Err(fail(&self.name.origin, n, "command", "a server needs `command:` (a program speaking MCP on stdio, such as [npx, -y, @modelcontextprotocol/server-everything]) or `url:` (streamable HTTP)".into()));
            }
        };
        Ok(McpServerConfig {
            name: n.to_owned(),
            transport,
            timeout_s: self.seconds(&server.timeout_s, "timeout_s", DEFAULT_MCP_TIMEOUT_S)?,
            startup_timeout_s: self.seconds(
                &server.startup_timeout_s,
                "startup_timeout_s",
                DEFAULT_MCP_STARTUP_TIMEOUT_S,
            )?,
            prefix: self.prefix(server.prefix.as_ref())?,
            confirm: self.confirm(server.confirm.as_ref())?,
            max_output_bytes: self.max_output_bytes(server.max_output_bytes.as_ref())?,
            sampling: server.sampling.as_ref().is_some_and(|s| s.value),
            resources: server.resources.as_ref().is_some_and(|r| r.value),
            auth: self.auth(&server)?,
            discover: self.protocol(server.protocol.as_ref())?,
            confirm_at: server
                .confirm
                .as_ref()
                .map(|c| format!("{}: mcp_servers.{n}.confirm", c.origin)),
        })
    }

    /// An error about this server's `field`, at `origin`.
    pub(super) fn fail(
        &self,
        origin: &Origin,
        field: &str,
        problem: impl Into<ConfigErrorKind>,
    ) -> ConfigError {
        ConfigError::new(origin.clone(), problem)
            .in_field(format!("mcp_servers.{}.{field}", self.name.value))
    }

    /// `text`, written at `origin` as `field`, with its `${NAME}` references expanded.
    pub(super) fn expand(
        &self,
        text: &str,
        origin: &Origin,
        field: &str,
    ) -> Result<String, ConfigError> {
        env::expand(text, self.lookup).map_err(|e| self.fail(origin, field, e))
    }

    /// A streamable HTTP server: its URL and headers by the rules the HTTP client applies, and none
    /// of a stdio server's settings.
    fn http(&self, url: &At<String>, server: &RawMcpServer) -> Result<McpTransport, ConfigError> {
        let n = self.name.value.as_str();
        for (key, at) in [
            ("env", server.env.as_ref().map(|e| &e.origin)),
            ("cwd", server.cwd.as_ref().map(|c| &c.origin)),
        ] {
            if let Some(at) = at {
                return Err(fail(at, n, key, format!("`{key}` is for servers started by `command:`; a `url:` server runs elsewhere")));
            }
        }
        let url_text = self.expand(&url.value, &url.origin, "url")?;
        // The URL may carry a password: the message never quotes it.
        check_http_url(&url_text).map_err(|e| self.fail(&url.origin, "url", e))?;
        let mut headers = Vec::new();
        for (key, value) in server.headers.iter().flat_map(|h| &h.value.0) {
            let field = format!("headers.{}", key.value);
            let text = self.expand(&value.value, &value.origin, &field)?;
            match check_header(&key.value, &text) {
                Err(e @ ValueError::HeaderName) => return Err(self.fail(&key.origin, &field, e)),
                Err(e) => return Err(self.fail(&value.origin, &field, e)),
                Ok(()) => headers.push((key.value.clone(), text)),
            }
        }
        Ok(McpTransport::Http {
            url: url_text,
            headers,
        })
    }

    /// A stdio server: its program must exist, its `cwd` be a folder, its `env` names be names; and
    /// it takes no headers.
    fn stdio(
        &self,
        command: &At<Vec<String>>,
        server: &RawMcpServer,
        origin: &Origin,
        programs: &dyn Fn(&str, &Path) -> Option<String>,
    ) -> Result<McpTransport, ConfigError> {
        let n = self.name.value.as_str();
        if let Some(headers) = &server.headers {
            return Err(fail(&headers.origin, n, "headers", "`headers` is for servers reached by `url:`; a `command:` server gets settings through `env:`".into()));
        }
        let argv = command
            .value
            .iter()
            .enumerate()
            .map(|(i, item)| self.expand(item, &command.origin, &format!("command[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        if argv.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(fail(&command.origin, n, "command", "must name a program: a list such as [mcp-server-time] or [npx, -y, @modelcontextprotocol/server-everything]".into()));
        }
        let cwd = absolute(self.cwd(server.cwd.as_ref(), origin)?);
        if let Some(problem) = programs(&argv[0], &cwd) {
            return Err(fail(&command.origin, n, "command[0]", problem));
        }
        Ok(McpTransport::Stdio {
            command: argv,
            env: self.env_vars(server.env.as_ref())?,
            cwd,
        })
    }

    /// The folder a stdio server runs in: relative to the file that declares the server (a base
    /// file, perhaps), which is also the default.
    fn cwd(&self, cwd: Option<&At<String>>, origin: &Origin) -> Result<PathBuf, ConfigError> {
        let declared_in = origin
            .file()
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."))
            .to_path_buf();
        let Some(cwd) = cwd else {
            return Ok(declared_in);
        };
        let dir = declared_in.join(self.expand(&cwd.value, &cwd.origin, "cwd")?);
        if !dir.is_dir() {
            return Err(fail(
                &cwd.origin,
                &self.name.value,
                "cwd",
                format!(
                    "`{}` is not a folder (it is relative to the tactic file)",
                    dir.display()
                ),
            ));
        }
        Ok(dir)
    }

    /// The variables a stdio server gets beside the inherited ones: names of letters, digits and
    /// `_`, values without NUL.
    fn env_vars(
        &self,
        env: Option<&At<Entries<At<String>>>>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let n = self.name.value.as_str();
        let mut vars = BTreeMap::new();
        for (key, value) in env.iter().flat_map(|e| &e.value.0) {
            let field = format!("env.{}", crate::config::error::shorten(&key.value));
            if !super::is_variable_name(&key.value) {
                return Err(fail(
                    &key.origin,
                    n,
                    &field,
                    "is not an environment variable name (letters, digits and `_`)".into(),
                ));
            }
            let text = self.expand(&value.value, &value.origin, &field)?;
            if text.contains('\0') {
                return Err(fail(
                    &value.origin,
                    n,
                    &field,
                    "contains a NUL character".into(),
                ));
            }
            vars.insert(key.value.clone(), text);
        }
        Ok(vars)
    }

    /// A timeout, within [`SecondsRange::TOOL`].
    fn seconds(
        &self,
        value: &Option<At<f64>>,
        field: &str,
        default: f64,
    ) -> Result<f64, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) => SecondsRange::TOOL
                .check(v.value)
                .map_err(|e| self.fail(&v.origin, field, e)),
        }
    }

    fn prefix(&self, prefix: Option<&At<String>>) -> Result<Option<String>, ConfigError> {
        let Some(p) = prefix else { return Ok(None) };
        match prefix_problem(&p.value) {
            Some(problem) => Err(fail(&p.origin, &self.name.value, "prefix", problem)),
            None => Ok(Some(p.value.clone())),
        }
    }

    /// `protocol:`: whether the server is reached by discovery (2026-07-28) rather than `initialize`.
    fn protocol(&self, protocol: Option<&At<String>>) -> Result<bool, ConfigError> {
        match protocol.map(|p| (p.value.as_str(), &p.origin)) {
            None | Some(("2025-11-25", _)) => Ok(false),
            Some(("2026-07-28", _)) => Ok(true),
            Some((_, origin)) => Err(fail(origin, &self.name.value, "protocol", "must be \"2025-11-25\" (the `initialize` handshake, the default) or \"2026-07-28\" (`server/discover`, for a server that does not accept `initialize`)".into())),
        }
    }

    fn confirm(&self, confirm: Option<&At<RawConfirm>>) -> Result<ConfirmTools, ConfigError> {
        Ok(match confirm.map(|c| &c.value) {
            None | Some(RawConfirm::All(false)) => ConfirmTools::None,
            Some(RawConfirm::All(true)) => ConfirmTools::All,
            Some(RawConfirm::Some(names)) => {
                ConfirmTools::Some(tool_names(&self.name.value, "confirm", names)?)
            }
        })
    }

    fn max_output_bytes(&self, bytes: Option<&At<usize>>) -> Result<usize, ConfigError> {
        match bytes {
            None => Ok(DEFAULT_MAX_OUTPUT_BYTES),
            Some(m) if (1..=MAX_OUTPUT_BYTES_LIMIT).contains(&m.value) => Ok(m.value),
            Some(m) => Err(fail(
                &m.origin,
                &self.name.value,
                "max_output_bytes",
                format!("must be from 1 to {MAX_OUTPUT_BYTES_LIMIT} bytes"),
            )),
        }
    }
}

/// A folder made absolute against the current one, so that the server starts in the same place
/// whatever folder the run is started from later.
fn absolute(dir: PathBuf) -> PathBuf {
    if dir.is_absolute() {
        return dir;
    }
    std::env::current_dir().map_or(dir.clone(), |cwd| cwd.join(&dir))
}

/// A list of tool names (the server's own), each valid and given once.
fn tool_names(n: &str, field: &str, names: &[At<String>]) -> Result<Vec<String>, ConfigError> {
    let mut seen: HashMap<&str, &Origin> = HashMap::new();
    for (i, name) in names.iter().enumerate() {
        if let Some(problem) = tool_name_problem(&name.value) {
            return Err(fail(&name.origin, n, &format!("{field}[{i}]"), problem));
        }
        if let Some(first) = seen.insert(&name.value, &name.origin) {
            let kind = ConfigErrorKind::Duplicate {
                name: name.value.clone(),
                first: first.clone(),
                what: "the tools listed",
            };
            return Err(ConfigError::new(name.origin.clone(), kind)
                .in_field(format!("mcp_servers.{n}.{field}[{i}]")));
        }
    }
    Ok(names.iter().map(|n| n.value.clone()).collect())
}

/// Checks an agent's `mcp:` against the declared servers.
pub(crate) fn uses(
    raw: Option<At<RawMcpUse>>,
    servers: &[McpServerConfig],
    label: &str,
) -> Result<Vec<McpUse>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let mut out: Vec<McpUse> = Vec::with_capacity(raw.value.0.len());
    let mut seen: HashMap<String, Origin> = HashMap::new();
    for (name, filter) in raw.value.0 {
        let field = format!("{label}.mcp.{}", crate::config::error::shorten(&name.value));
        if !servers.iter().any(|s| s.name == name.value) {
            let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
            let problem = match crate::suggest::closest(&name.value, known.iter().copied()) {
                Some(close) => format!("there is no MCP server `{}` (did you mean `{close}`?)", crate::config::error::shorten(&name.value)),
                None if known.is_empty() => "there is no MCP server of that name: declare it under the top-level `mcp_servers:`".to_owned(),
                None => format!("there is no MCP server of that name; the servers are: {}", known.join(", ")),
            };
            return Err(
                ConfigError::new(name.origin.clone(), ConfigErrorKind::Mcp(problem))
                    .in_field(field),
            );
        }
        if let Some(first) = seen.get(&name.value) {
            let kind = ConfigErrorKind::Duplicate {
                name: name.value.clone(),
                first: first.clone(),
                what: "the servers of an agent's mcp",
            };
            return Err(ConfigError::new(name.origin.clone(), kind).in_field(field));
        }
        let mut at = format!("{}: {field}", name.origin);
        let filter = match filter.map(|f| f.value) {
            None => ToolFilter::All,
            Some(f) => match (f.include, f.exclude) {
                (Some(_), Some(exclude)) => {
                    let kind =
                        ConfigErrorKind::Invalid("set either `include` or `exclude`, not both");
                    return Err(
                        ConfigError::new(exclude.origin, kind).in_field(format!("{field}.exclude"))
                    );
                }
                (Some(include), None) => {
                    if include.value.is_empty() {
                        let kind = ConfigErrorKind::Invalid("`include: []` takes no tool: list tools, or remove the server from the agent's mcp");
                        return Err(ConfigError::new(include.origin, kind)
                            .in_field(format!("{field}.include")));
                    }
                    at = format!("{}: {field}.include", include.origin);
                    ToolFilter::Include(filter_names(&include.value, &format!("{field}.include"))?)
                }
                (None, Some(exclude)) => {
                    ToolFilter::Exclude(filter_names(&exclude.value, &format!("{field}.exclude"))?)
                }
                (None, None) => ToolFilter::All,
            },
        };
        seen.insert(name.value.clone(), name.origin);
        out.push(McpUse {
            server: name.value,
            filter,
            at: Some(at),
        });
    }
    Ok(out)
}

fn filter_names(names: &[At<String>], field: &str) -> Result<Vec<String>, ConfigError> {
    for (i, name) in names.iter().enumerate() {
        if let Some(problem) = tool_name_problem(&name.value) {
            return Err(
                ConfigError::new(name.origin.clone(), ConfigErrorKind::Mcp(problem))
                    .in_field(format!("{field}[{i}]")),
            );
        }
    }
    Ok(names.iter().map(|n| n.value.clone()).collect())
}
