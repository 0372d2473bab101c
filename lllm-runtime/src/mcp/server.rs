//! One MCP server: built with [`McpServerBuilder`], started with its tools listed, shared by handle.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lllm_core::internal::{object_schema_problem, tool_name_problem, Secrets};
use lllm_core::{
    ConfirmTools, McpServerConfig, McpTransport, Schema, ToolFilter, DEFAULT_MCP_STARTUP_TIMEOUT_S,
    DEFAULT_MCP_TIMEOUT_S,
};
use rmcp::model::Tool as McpToolInfo;
use rmcp::service::ServiceError;

use super::child::ServerProcess;
use super::connect::{connect, Session};
use super::tool::McpTool;
use super::McpError;
use crate::tools::{Tool, ToolError};

/// How long a stopping server may take to exit after its input closes, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How a server is reached.
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
    },
}

/// A running MCP server, shared by cloning the handle. See the [module](crate::mcp) docs.
#[derive(Debug, Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) name: String,
    session: tokio::sync::Mutex<Option<Session>>,
    pub(crate) peer: rmcp::Peer<rmcp::RoleClient>,
    process: Option<ServerProcess>,
    tools: Vec<ServerTool>,
    pub(crate) timeout: Duration,
    prefix: Option<String>,
    confirm: ConfirmTools,
    pub(crate) max_output_bytes: usize,
    /// The credentials of an HTTP server (its headers, its URL's password), kept out of messages.
    secrets: Secrets,
    /// Whether its death was already reported on stderr.
    death_reported: AtomicBool,
}

/// A tool as the server lists it, checked.
#[derive(Debug)]
pub(crate) struct ServerTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: serde_json::Value,
    pub(crate) compiled: Schema,
}

impl McpServer {
    /// A server started as a child process speaking MCP on stdio: `command` is the program and its
    /// arguments (no shell). It gets `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER` from this
    /// process's environment, plus what [`McpServerBuilder::env`] adds; nothing else.
    pub fn stdio(
        name: impl Into<String>,
        command: impl IntoIterator<Item = impl Into<String>>,
    ) -> McpServerBuilder {
        McpServerBuilder::new(
            name.into(),
            Kind::Stdio {
                command: command.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server reached over streamable HTTP at `url` (such as `http://127.0.0.1:3001/mcp`).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> McpServerBuilder {
        McpServerBuilder::new(
            name.into(),
            Kind::Http {
                url: url.into(),
                headers: Vec::new(),
            },
        )
    }

    /// A builder holding what a tactic file says of a server.
    pub fn from_config(config: &McpServerConfig) -> McpServerBuilder {
        let kind = match &config.transport {
            McpTransport::Stdio { command, env, cwd } => Kind::Stdio {
                command: command.clone(),
                env: env.clone(),
                cwd: Some(cwd.clone()),
            },
            McpTransport::Http { url, headers } => Kind::Http {
                url: url.clone(),
                headers: headers.clone(),
            },
        };
        let mut builder = McpServerBuilder::new(config.name.clone(), kind);
        builder.timeout = Duration::from_secs_f64(config.timeout_s);
        builder.startup_timeout = Duration::from_secs_f64(config.startup_timeout_s);
        builder.prefix = config.prefix.clone();
        builder.confirm = config.confirm.clone();
        builder.max_output_bytes = config.max_output_bytes;
        builder
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The names of its tools as the model sees them (with the prefix), in the server's order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .iter()
            .map(|t| self.inner.offered_name(&t.name))
            .collect()
    }

    /// The tools `filter` takes, as the model sees them. A name in `filter` that the server does
    /// not have is an error (`field` says where it was written, for the message).
    pub fn tools(&self, filter: &ToolFilter) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        self.tools_named_in(filter, "the filter")
    }

    pub(crate) fn tools_named_in(
        &self,
        filter: &ToolFilter,
        field: &str,
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        self.inner.check_names(filter.named(), field)?;
        Ok(self
            .inner
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| filter.takes(&t.name))
            .map(|(index, t)| {
                let tool = McpTool::new(
                    self.inner.clone(),
                    index,
                    self.inner.offered_name(&t.name),
                    self.inner.confirm.covers(&t.name),
                );
                Arc::new(tool) as Arc<dyn Tool>
            })
            .collect())
    }

    /// Whether the server is still running (a stdio server's process has not exited, the session
    /// is open).
    pub fn is_running(&self) -> bool {
        let exited = self
            .inner
            .process
            .as_ref()
            .is_some_and(|p| p.exit_status().is_some());
        !exited && !self.inner.peer.is_transport_closed()
    }

    /// Closes the session and ends the server: a stdio server gets its input closed, then SIGTERM,
    /// then SIGKILL for whatever is left of its process group. Tools still held by agents fail
    /// afterwards with an error result.
    pub async fn shutdown(&self) {
        if let Some(mut session) = self.inner.session.lock().await.take() {
            session.close_with_timeout(STOP_GRACE).await.ok();
        }
        if let Some(process) = &self.inner.process {
            if !process.exited_within(STOP_GRACE).await {
                process.stop(STOP_GRACE).await;
            }
            process.stop(Duration::ZERO).await;
        }
    }
}

impl Inner {
    pub(crate) fn tool(&self, index: usize) -> &ServerTool {
        &self.tools[index]
    }

    pub(crate) fn offered_name(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => name.to_owned(),
        }
    }

    fn check_names(&self, names: &[String], field: &str) -> Result<(), McpError> {
        match names
            .iter()
            .find(|n| !self.tools.iter().any(|t| &t.name == *n))
        {
            None => Ok(()),
            Some(unknown) => Err(McpError::UnknownTool {
                server: self.name.clone(),
                tool: unknown.clone(),
                field: field.to_owned(),
                known: self.tools.iter().map(|t| t.name.clone()).collect(),
            }),
        }
    }

    /// The error result of a call that failed in the SDK or the transport. When a stdio server died,
    /// stderr says so once, with the server's last words.
    pub(crate) async fn failed_call(&self, tool: &str, error: ServiceError) -> ToolError {
        if let ServiceError::McpError(data) = &error {
            let message = self.secrets.redact(&data.message);
            return ToolError::new(format!("the server refused the call: {message}"));
        }
        let exited = match &self.process {
            Some(process) => process
                .exited_within(Duration::from_millis(500))
                .await
                .then(|| process.exit_status())
                .flatten(),
            None => None,
        };
        if let Some(status) = exited {
            if !self.death_reported.swap(true, Ordering::SeqCst) {
                let tail = self
                    .process
                    .as_ref()
                    .map(|p| p.stderr_tail())
                    .unwrap_or_default();
                let tail = if tail.is_empty() {
                    String::new()
                } else {
                    format!("; its last words on stderr:\n{tail}")
                };
                tracing::error!(
                    "MCP server `{}` stopped ({status}) during a call of `{tool}`; its tools fail from now on{tail}",
                    self.name
                );
            }
            return ToolError::new(format!(
                "the MCP server `{}` stopped ({status}) while running this call; its tools cannot be used for the rest of this run",
                self.name
            ));
        }
        let problem = self.secrets.redact(&error.to_string());
        ToolError::new(format!(
            "the MCP server `{}` could not be reached ({problem}); the call may be tried again later",
            self.name
        ))
    }
}

/// What a builder was told about the transport.
#[derive(Debug, Clone)]
enum Kind {
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

/// Builds and starts an [`McpServer`]. Setters never fail; [`start`](Self::start) reports what is
/// invalid.
#[derive(Debug, Clone)]
pub struct McpServerBuilder {
    name: String,
    kind: Kind,
    timeout: Duration,
    startup_timeout: Duration,
    prefix: Option<String>,
    confirm: ConfirmTools,
    max_output_bytes: usize,
}

impl McpServerBuilder {
    fn new(name: String, kind: Kind) -> Self {
        McpServerBuilder {
            name,
            kind,
            timeout: Duration::from_secs_f64(DEFAULT_MCP_TIMEOUT_S),
            startup_timeout: Duration::from_secs_f64(DEFAULT_MCP_STARTUP_TIMEOUT_S),
            prefix: None,
            confirm: ConfirmTools::None,
            max_output_bytes: lllm_core::internal::DEFAULT_MAX_OUTPUT_BYTES,
        }
    }

    /// Adds an environment variable (stdio servers).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Kind::Stdio { env, .. } = &mut self.kind {
            env.insert(name.into(), value.into());
        }
        self
    }

    /// The folder the server runs in (stdio servers; default: the current one).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Kind::Stdio { cwd, .. } = &mut self.kind {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header sent with every request (HTTP servers).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Kind::Http { headers, .. } = &mut self.kind {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Time one tool call may take (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time starting the server and listing its tools may take (default 30 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Put before every tool name the model sees.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Which tools ask before they run (through the agent's confirmation callback).
    pub fn confirm(mut self, confirm: ConfirmTools) -> Self {
        self.confirm = confirm;
        self
    }

    /// Most bytes of a result kept (default 65536); more is an error result.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Starts the server (or opens the session), shakes hands and lists its tools, all within the
    /// startup timeout.
    pub async fn start(self) -> Result<McpServer, McpError> {
        let invalid = |problem: String| McpError::Invalid {
            server: self.name.clone(),
            problem,
        };
        let (transport, secrets) = self.transport().map_err(invalid)?;
        if self.timeout.is_zero() || self.startup_timeout.is_zero() {
            return Err(invalid("the timeouts must be above zero".into()));
        }
        if self.max_output_bytes == 0
            || self.max_output_bytes > lllm_core::internal::MAX_OUTPUT_BYTES_LIMIT
        {
            return Err(invalid(format!(
                "max_output_bytes must be from 1 to {}",
                lllm_core::internal::MAX_OUTPUT_BYTES_LIMIT
            )));
        }
        let mut process = None;
        let connected =
            match tokio::time::timeout(self.startup_timeout, connect(&transport, &mut process))
                .await
            {
                Ok(Ok(connected)) => connected,
                Ok(Err(failed)) => {
                    let stderr_tail = match &failed.process {
                        Some(p) => {
                            p.exited_within(Duration::from_millis(300)).await;
                            p.stderr_tail()
                        }
                        None => String::new(),
                    };
                    let exit = failed
                        .process
                        .as_ref()
                        .and_then(ServerProcess::exit_status)
                        .map(|s| format!(" (it exited: {s})"))
                        .unwrap_or_default();
                    return Err(McpError::Start {
                        server: self.name.clone(),
                        problem: secrets.redact(&format!("{}{exit}", failed.problem)),
                        stderr_tail,
                    });
                }
                Err(_) => {
                    let stderr_tail = process
                        .as_ref()
                        .map(|p| p.stderr_tail())
                        .unwrap_or_default();
                    // Dropping the process kills its group.
                    return Err(McpError::StartTimeout {
                        server: self.name.clone(),
                        seconds: self.startup_timeout.as_secs_f64(),
                        stderr_tail,
                    });
                }
            };
        let tools = self.check_tools(connected.tools)?;
        let peer = connected.session.peer().clone();
        let inner = Inner {
            name: self.name.clone(),
            session: tokio::sync::Mutex::new(Some(connected.session)),
            peer,
            process: connected.process,
            tools,
            timeout: self.timeout,
            prefix: self.prefix.clone(),
            confirm: self.confirm.clone(),
            max_output_bytes: self.max_output_bytes,
            secrets,
            death_reported: AtomicBool::new(false),
        };
        inner.check_names(
            match &self.confirm {
                ConfirmTools::Some(names) => names,
                _ => &[],
            },
            "confirm",
        )?;
        Ok(McpServer {
            inner: Arc::new(inner),
        })
    }

    /// The transport, checked, and the credentials it carries.
    fn transport(&self) -> Result<(Transport, Secrets), String> {
        if let Some(problem) = tool_name_problem(&self.name) {
            return Err(format!("the server name {problem}"));
        }
        if let Some(prefix) = &self.prefix {
            if prefix.is_empty()
                || !prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err("a prefix has letters, digits, `_` and `-` only".into());
            }
        }
        match &self.kind {
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
                        .filter(|(name, _)| lllm_core::internal::is_secret_header(name))
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
                let parsed: http::Uri = url
                    .parse()
                    .map_err(|_| "the url is not a valid URL".to_owned())?;
                if !matches!(parsed.scheme_str(), Some("http" | "https")) || parsed.host().is_none()
                {
                    return Err("the url must be an http or https URL with a host".into());
                }
                let mut map = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("`{name}` is not a valid header name"))?;
                    let mut value = http::HeaderValue::from_str(value)
                        .map_err(|_| format!("the value of header `{name}` cannot be sent"))?;
                    value.set_sensitive(lllm_core::internal::is_secret_header(name.as_str()));
                    map.insert(name, value);
                }
                let transport = Transport::Http {
                    url: url.clone(),
                    headers: map,
                };
                Ok((transport, secrets))
            }
        }
    }

    /// Each listed tool must be offerable to a model: a valid name (with the prefix) and an object
    /// schema that compiles.
    fn check_tools(&self, listed: Vec<McpToolInfo>) -> Result<Vec<ServerTool>, McpError> {
        let invalid = |tool: &str, problem: String| McpError::InvalidTool {
            server: self.name.clone(),
            tool: tool.chars().take(64).collect(),
            problem,
        };
        let mut tools: Vec<ServerTool> = Vec::with_capacity(listed.len());
        let mut seen = std::collections::HashSet::new();
        for info in listed {
            let name = info.name.to_string();
            let offered = match &self.prefix {
                Some(prefix) => format!("{prefix}{name}"),
                None => name.clone(),
            };
            if let Some(problem) = tool_name_problem(&offered) {
                return Err(invalid(&name, format!("cannot be offered to a model: its name {problem}; use a shorter `prefix:` or leave it out with `exclude:`")));
            }
            if !seen.insert(name.clone()) {
                return Err(invalid(&name, "is listed twice by the server".into()));
            }
            let schema = serde_json::Value::Object((*info.input_schema).clone());
            if let Some(problem) = object_schema_problem(&schema) {
                return Err(invalid(
                    &name,
                    format!("has an input schema that {problem}"),
                ));
            }
            let compiled = Schema::compile(&schema).map_err(|e| {
                invalid(
                    &name,
                    format!("has an input schema that does not compile: {e}"),
                )
            })?;
            tools.push(ServerTool {
                name,
                description: info
                    .description
                    .map(|d| d.to_string())
                    .or(info.title)
                    .unwrap_or_default(),
                schema,
                compiled,
            });
        }
        Ok(tools)
    }
}
