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
use super::connect::{connect, describe, is_oversized, Session};
use super::tool::McpTool;
use super::{excerpt, printable, McpError};
use crate::tools::{Tool, ToolError};

/// How long a stopping server may take to exit after its input closes, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Longest tool description offered to a model: it is sent with every request.
const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;
/// Most characters of a server's tool name repeated in a message.
const MAX_NAME_CHARS: usize = 64;

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

/// A running MCP server, shared by cloning the handle: every agent given it (with
/// [`AgentBuilder::mcp`](crate::AgentBuilder::mcp)) offers its tools, filtered and prefixed as
/// configured. [`shutdown`](Self::shutdown) ends a stdio server's whole process group; the last handle
/// dropped without it kills the group too. The guide is `docs/mcp.md`.
///
/// ```no_run
/// use std::sync::Arc;
/// use lllm_runtime::{Agent, McpServer, OpenAiInvoker, ToolFilter};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let time = McpServer::stdio("time", ["mcp-server-time", "--local-timezone", "UTC"])
///     .start()
///     .await?;
/// let agent = Agent::builder()
///     .name("clock")
///     .system_prompt("You tell the time.")
///     .model("openai/gpt-4o-mini")
///     .invoker(Arc::new(OpenAiInvoker::new()))
///     .mcp_filtered(&time, ToolFilter::Include(vec!["get_current_time".into()]))
///     .build()?;
/// # let _ = agent;
/// time.shutdown().await;
/// # Ok(()) }
/// ```
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
    /// The listed tools that cannot be offered to a model, with why: an error only for an agent
    /// that takes one, so that a tactic can leave them out.
    rejected: Vec<Rejected>,
    pub(crate) timeout: Duration,
    prefix: Option<String>,
    confirm: ConfirmTools,
    pub(crate) max_output_bytes: usize,
    /// The credentials of an HTTP server (its headers, its URL's password), kept out of messages.
    secrets: Secrets,
    /// Whether its death was already reported on stderr.
    death_reported: AtomicBool,
}

/// A listed tool that cannot be offered to a model.
#[derive(Debug)]
struct Rejected {
    /// Its name as the server lists it.
    name: String,
    /// Why, and what to do.
    problem: String,
}

/// A tool as the server lists it, checked.
#[derive(Debug)]
pub(crate) struct ServerTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: serde_json::Value,
    pub(crate) compiled: Schema,
    /// The server says so (`annotations.idempotentHint`): a call a crash interrupted may run again.
    pub(crate) idempotent: bool,
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
        builder.confirm_at = config.confirm_at.clone();
        builder
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The names of its tools as the model sees them (with the prefix), in the server's order; a
    /// listed tool that cannot be offered to a model (a bad name or schema, listed twice) is left out.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .iter()
            .map(|t| self.inner.offered_name(&t.name))
            .collect()
    }

    /// The tools `filter` takes, as the model sees them. A name in `filter` that the server does
    /// not have is an error (`field` says where it was written, for the message), and so is taking a
    /// listed tool that cannot be offered to a model (leave it out with an exclude filter).
    pub fn tools(&self, filter: &ToolFilter) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        self.tools_named_in(filter, "the filter")
    }

    pub(crate) fn tools_named_in(
        &self,
        filter: &ToolFilter,
        field: &str,
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        self.inner.check_names(filter.named(), field)?;
        if let Some(bad) = self.inner.rejected.iter().find(|r| filter.takes(&r.name)) {
            return Err(McpError::InvalidTool {
                server: self.inner.name.clone(),
                tool: excerpt_chars(&printable(&bad.name), MAX_NAME_CHARS),
                problem: bad.problem.clone(),
            });
        }
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
        let listed = |name: &String| {
            self.tools.iter().any(|t| &t.name == name)
                || self.rejected.iter().any(|r| &r.name == name)
        };
        match names.iter().find(|n| !listed(n)) {
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
        match &error {
            ServiceError::McpError(data) if is_oversized(data) => {
                return ToolError::new(format!(
                    "{}; ask for less, for example a smaller range or a narrower query",
                    printable(&data.message)
                ));
            }
            ServiceError::McpError(data) => {
                let message = self.secrets.redact(&printable(&data.message));
                return ToolError::new(format!("the server refused the call: {message}"));
            }
            ServiceError::UnexpectedResponse => {
                return ToolError::new(format!(
                    "the MCP server `{}` answered with something that is not a tool result",
                    self.name
                ));
            }
            _ => {}
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
            let first = !self.death_reported.swap(true, Ordering::SeqCst);
            if first {
                tracing::error!(
                    "MCP server `{}` stopped ({status}) during a call of `{tool}`; its tools fail from now on{}",
                    self.name,
                    self.last_words()
                );
                return ToolError::new(format!(
                    "the MCP server `{}` stopped ({status}) while running this call; its tools cannot be used for the rest of this run",
                    self.name
                ));
            }
            return ToolError::new(format!(
                "not run: the MCP server `{}` stopped earlier in this run ({status}); its tools cannot be used any more",
                self.name
            ));
        }
        if self.process.is_some() && self.peer.is_transport_closed() {
            // A stdio server that closed its stdout, yet runs: nothing it says can be read any more.
            if !self.death_reported.swap(true, Ordering::SeqCst) {
                tracing::error!(
                    "MCP server `{}` closed its output during a call of `{tool}`; its tools fail from now on{}",
                    self.name,
                    self.last_words()
                );
            }
            return ToolError::new(format!(
                "the MCP server `{}` closed its connection; its tools cannot be used for the rest of this run",
                self.name
            ));
        }
        let problem = self.secrets.redact(&describe(&error));
        ToolError::new(format!(
            "the MCP server `{}` could not be reached ({problem}); the call may be tried again later",
            self.name
        ))
    }

    /// The server's stderr tail for a message (empty without one).
    fn last_words(&self) -> String {
        let tail = self
            .process
            .as_ref()
            .map(|p| self.secrets.redact(&p.stderr_tail()))
            .unwrap_or_default();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its last words on stderr:\n{tail}")
        }
    }
}

/// The first `most` characters of `text`, with `…` when there were more.
fn excerpt_chars(text: &str, most: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(most).collect();
    if chars.next().is_some() {
        head + "…"
    } else {
        head
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
    /// Where the tactic file writes `confirm:`, for messages.
    confirm_at: Option<String>,
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
            confirm_at: None,
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
                        // A server that was answering only exits because its input closed.
                        Some(p) if !failed.answered => {
                            p.exited_within(Duration::from_millis(300)).await;
                            p.stderr_tail()
                        }
                        Some(p) => p.stderr_tail(),
                        None => String::new(),
                    };
                    let exit = failed
                        .process
                        .as_ref()
                        .filter(|_| !failed.answered)
                        .and_then(ServerProcess::exit_status)
                        .map(|s| format!(" (it exited: {s})"))
                        .unwrap_or_default();
                    return Err(McpError::Start {
                        server: self.name.clone(),
                        problem: secrets
                            .redact(&format!("{}{exit}", excerpt(&printable(&failed.problem)))),
                        stderr_tail: secrets.redact(&stderr_tail),
                    });
                }
                Err(_) => {
                    let stderr_tail = process
                        .as_ref()
                        .map(|p| secrets.redact(&p.stderr_tail()))
                        .unwrap_or_default();
                    // Dropping the process kills its group.
                    return Err(McpError::StartTimeout {
                        server: self.name.clone(),
                        seconds: self.startup_timeout.as_secs_f64(),
                        stderr_tail,
                    });
                }
            };
        let (tools, rejected) = self.check_tools(connected.tools);
        let peer = connected.session.peer().clone();
        let inner = Inner {
            name: self.name.clone(),
            session: tokio::sync::Mutex::new(Some(connected.session)),
            peer,
            process: connected.process,
            tools,
            rejected,
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
            self.confirm_at.as_deref().unwrap_or("confirm"),
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

    /// Each listed tool must be offerable to a model: a valid name (with the prefix), listed once,
    /// a description of at most [`MAX_DESCRIPTION_BYTES`], and an object schema that compiles. The
    /// others are kept aside with why, for the agents that would take them.
    fn check_tools(&self, listed: Vec<McpToolInfo>) -> (Vec<ServerTool>, Vec<Rejected>) {
        let mut tools: Vec<ServerTool> = Vec::with_capacity(listed.len());
        let mut rejected: Vec<Rejected> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for info in listed {
            let name = info.name.to_string();
            if !seen.insert(name.clone()) {
                tools.retain(|t| t.name != name);
                if !rejected.iter().any(|r| r.name == name) {
                    rejected.push(Rejected {
                        name,
                        problem: "is listed twice by the server; leave it out with `exclude:`"
                            .into(),
                    });
                }
                continue;
            }
            match self.check_tool(info) {
                Ok(tool) => tools.push(tool),
                Err(problem) => rejected.push(Rejected {
                    name,
                    problem: printable(&problem),
                }),
            }
        }
        (tools, rejected)
    }

    /// One listed tool, checked.
    fn check_tool(&self, info: McpToolInfo) -> Result<ServerTool, String> {
        let name = info.name.to_string();
        let offered = match &self.prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => name.clone(),
        };
        if let Some(problem) = tool_name_problem(&offered) {
            let problem = problem.replace(&offered, &excerpt_chars(&offered, MAX_NAME_CHARS));
            // `exclude:` cannot name it (the tactic file takes valid names only); `include:` can leave it out.
            return Err(format!("cannot be offered to a model: its name {problem}; use a shorter `prefix:`, or name the tools to take with `include:`"));
        }
        let description = info
            .description
            .map(|d| d.to_string())
            .or(info.title)
            .unwrap_or_default();
        if description.len() > MAX_DESCRIPTION_BYTES {
            return Err(format!(
                "has a description of {} bytes, more than the {MAX_DESCRIPTION_BYTES} lllm sends a model with every request; leave it out with `exclude:`",
                description.len()
            ));
        }
        let schema = serde_json::Value::Object((*info.input_schema).clone());
        if let Some(problem) = object_schema_problem(&schema) {
            return Err(format!(
                "has an input schema that {problem}; leave it out with `exclude:`"
            ));
        }
        let compiled = Schema::compile(&schema).map_err(|e| {
            format!("has an input schema that does not compile: {e}; leave it out with `exclude:`")
        })?;
        Ok(ServerTool {
            name,
            description: printable(&description),
            schema,
            compiled,
            idempotent: info
                .annotations
                .as_ref()
                .and_then(|a| a.idempotent_hint)
                .unwrap_or(false),
        })
    }
}
