//! `mcp_servers:` and each agent's `mcp:`, checked into [`McpServerConfig`]s and [`McpUse`]s. What can
//! only be known from a running server (its tool names, a clash between two servers' tools) is
//! checked when the run starts the servers.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::env;
use super::error::{ConfigError, ConfigErrorKind, Origin};
use super::raw::{RawConfirm, RawMcpServer, RawMcpServers, RawMcpUse};
use super::span::At;
use crate::mcp::{
    ConfirmTools, McpServerConfig, McpTransport, McpUse, ToolFilter, DEFAULT_MCP_STARTUP_TIMEOUT_S,
    DEFAULT_MCP_TIMEOUT_S,
};
use crate::tool::{tool_name_problem, DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_LIMIT};

/// Longest `prefix:`: the prefixed names must still fit the 64 characters a tool name may have.
const MAX_PREFIX_LEN: usize = 32;

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
        .map(|(name, server)| server_config(name, server, lookup, programs))
        .collect()
}

fn server_config(
    name: At<String>,
    raw: At<RawMcpServer>,
    lookup: &dyn Fn(&str) -> Option<String>,
    programs: &dyn Fn(&str, &Path) -> Option<String>,
) -> Result<McpServerConfig, ConfigError> {
    let At {
        value: server,
        origin,
    } = raw;
    let n = name.value.as_str();
    if let Some(problem) = tool_name_problem(n) {
        let kind = ConfigErrorKind::Mcp(format!("server name {problem}, as tool names"));
        return Err(ConfigError::new(name.origin.clone(), kind).in_field("mcp_servers"));
    }
    let expand = |value: &At<String>, field: &str| {
        env::expand(&value.value, lookup).map_err(|e| {
            ConfigError::new(value.origin.clone(), e).in_field(format!("mcp_servers.{n}.{field}"))
        })
    };
    let transport = match (&server.command, &server.url) {
        (Some(command), None) => {
            if let Some(headers) = &server.headers {
                return Err(fail(&headers.origin, n, "headers", "`headers` is for servers reached by `url:`; a `command:` server gets settings through `env:`".into()));
            }
            stdio(n, command, &server, &origin, lookup, programs)?
        }
        (None, Some(url)) => {
            for (key, at) in [
                ("env", server.env.as_ref().map(|e| &e.origin)),
                ("cwd", server.cwd.as_ref().map(|c| &c.origin)),
            ] {
                if let Some(at) = at {
                    return Err(fail(at, n, key, format!("`{key}` is for servers started by `command:`; a `url:` server runs elsewhere")));
                }
            }
            let url_text = expand(url, "url")?;
            if let Some(problem) = crate::model_args::api_base_problem(&url_text) {
                // The URL may carry a password: the message never quotes it.
                return Err(fail(
                    &url.origin,
                    n,
                    "url",
                    format!("is not a usable http(s) URL: {problem}"),
                ));
            }
            let mut headers = Vec::new();
            for (key, value) in server.headers.iter().flat_map(|h| &h.value.0) {
                let field = format!("headers.{}", key.value);
                let text = expand(value, &field)?;
                if http::HeaderName::from_bytes(key.value.as_bytes()).is_err() {
                    return Err(fail(
                        &key.origin,
                        n,
                        &field,
                        "is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)"
                            .into(),
                    ));
                }
                if http::HeaderValue::from_str(&text).is_err() {
                    return Err(fail(&value.origin, n, &field, "the value contains a control character (such as a newline) or is not visible text".into()));
                }
                headers.push((key.value.clone(), text));
            }
            McpTransport::Http {
                url: url_text,
                headers,
            }
        }
        (Some(_), Some(url)) => {
            return Err(fail(&url.origin, n, "url", "set either `command:` (a program speaking MCP on stdio) or `url:` (streamable HTTP), not both".into()));
        }
        (None, None) => {
            return Err(fail(&name.origin, n, "command", "a server needs `command:` (a program speaking MCP on stdio, such as [npx, -y, @modelcontextprotocol/server-everything]) or `url:` (streamable HTTP)".into()));
        }
    };
    let seconds = |value: &Option<At<f64>>, field: &str, default: f64| match value {
        None => Ok(default),
        Some(v) if v.value.is_finite() && v.value > 0.0 && v.value <= 86_400.0 => Ok(v.value),
        Some(v) => Err(fail(
            &v.origin,
            n,
            field,
            "must be a number of seconds above 0 (at most a day)".into(),
        )),
    };
    let prefix = match &server.prefix {
        None => None,
        Some(p) => {
            let valid = !p.value.is_empty()
                && p.value.len() <= MAX_PREFIX_LEN
                && p.value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                return Err(fail(&p.origin, n, "prefix", format!("must have 1 to {MAX_PREFIX_LEN} letters, digits, `_` or `-`, as tool names do")));
            }
            Some(p.value.clone())
        }
    };
    let confirm_at = server
        .confirm
        .as_ref()
        .map(|c| format!("{}: mcp_servers.{n}.confirm", c.origin));
    let confirm = match &server.confirm {
        None
        | Some(At {
            value: RawConfirm::All(false),
            ..
        }) => ConfirmTools::None,
        Some(At {
            value: RawConfirm::All(true),
            ..
        }) => ConfirmTools::All,
        Some(At {
            value: RawConfirm::Some(names),
            ..
        }) => ConfirmTools::Some(tool_names(n, "confirm", names)?),
    };
    let max_output_bytes = match &server.max_output_bytes {
        None => DEFAULT_MAX_OUTPUT_BYTES,
        Some(m) if (1..=MAX_OUTPUT_BYTES_LIMIT).contains(&m.value) => m.value,
        Some(m) => {
            return Err(fail(
                &m.origin,
                n,
                "max_output_bytes",
                format!("must be from 1 to {MAX_OUTPUT_BYTES_LIMIT} bytes"),
            ))
        }
    };
    Ok(McpServerConfig {
        name: n.to_owned(),
        transport,
        timeout_s: seconds(&server.timeout_s, "timeout_s", DEFAULT_MCP_TIMEOUT_S)?,
        startup_timeout_s: seconds(
            &server.startup_timeout_s,
            "startup_timeout_s",
            DEFAULT_MCP_STARTUP_TIMEOUT_S,
        )?,
        prefix,
        confirm,
        max_output_bytes,
        confirm_at,
    })
}

/// A stdio server: its program must exist, its `cwd` be a folder, its `env` names be names.
fn stdio(
    n: &str,
    command: &At<Vec<String>>,
    server: &RawMcpServer,
    origin: &Origin,
    lookup: &dyn Fn(&str) -> Option<String>,
    programs: &dyn Fn(&str, &Path) -> Option<String>,
) -> Result<McpTransport, ConfigError> {
    let expand_at = |text: &str, at: &Origin, field: &str| {
        env::expand(text, lookup).map_err(|e| {
            ConfigError::new(at.clone(), e).in_field(format!("mcp_servers.{n}.{field}"))
        })
    };
    let argv = command
        .value
        .iter()
        .enumerate()
        .map(|(i, item)| expand_at(item, &command.origin, &format!("command[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(fail(&command.origin, n, "command", "must name a program: a list such as [mcp-server-time] or [npx, -y, @modelcontextprotocol/server-everything]".into()));
    }
    // Relative to the file that declares the server (a base file, perhaps).
    let declared_in = origin
        .file()
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .to_path_buf();
    let cwd = match &server.cwd {
        None => declared_in,
        Some(cwd) => {
            let text = expand_at(&cwd.value, &cwd.origin, "cwd")?;
            let dir = declared_in.join(&text);
            if !dir.is_dir() {
                return Err(fail(
                    &cwd.origin,
                    n,
                    "cwd",
                    format!(
                        "`{}` is not a folder (it is relative to the tactic file)",
                        dir.display()
                    ),
                ));
            }
            dir
        }
    };
    let cwd = absolute(cwd);
    if let Some(problem) = programs(&argv[0], &cwd) {
        return Err(fail(&command.origin, n, "command[0]", problem));
    }
    let mut env_vars = BTreeMap::new();
    for (key, value) in server.env.iter().flat_map(|e| &e.value.0) {
        let valid = super::is_variable_name(&key.value);
        let field = format!("env.{}", crate::config::error::shorten(&key.value));
        if !valid {
            return Err(fail(
                &key.origin,
                n,
                &field,
                "is not an environment variable name (letters, digits and `_`)".into(),
            ));
        }
        let text = expand_at(&value.value, &value.origin, &field)?;
        if text.contains('\0') {
            return Err(fail(
                &value.origin,
                n,
                &field,
                "contains a NUL character".into(),
            ));
        }
        env_vars.insert(key.value.clone(), text);
    }
    Ok(McpTransport::Stdio {
        command: argv,
        env: env_vars,
        cwd,
    })
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
