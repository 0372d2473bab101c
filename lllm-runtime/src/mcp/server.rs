//! One MCP server: built with [`McpServerBuilder`], started with its tools listed, shared by handle.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use lllm_core::internal::{prefix_problem, tool_name_problem};
use lllm_core::secret::Secrets;
use lllm_core::{
    ConfirmTools, McpAuth, McpServerConfig, McpTransport, SecondsRange, ToolFilter,
    DEFAULT_MCP_STARTUP_TIMEOUT_S, DEFAULT_MCP_TIMEOUT_S,
};

use super::asks::OpenCalls;
use super::child::ServerProcess;
use super::client::Client;
use super::connect::{connect, Connected, Failed};
use super::listing::{check_tools, excerpt_chars, MAX_NAME_CHARS};
use super::state::Inner;
use super::tool::McpTool;
use super::transport::{Kind, Transport};
use super::{excerpt, printable, McpError};
use crate::tools::Tool;

/// How long a stopping server may take to exit after its input closes, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A running MCP server, shared by cloning the handle: every agent given it (with
/// [`AgentBuilder::mcp`](crate::AgentBuilder::mcp)) offers its tools, filtered and prefixed as
/// configured. [`shutdown`](Self::shutdown) ends a stdio server's whole process group; the last handle
/// dropped without it kills the group too. The guide is `docs/mcp.md`.
///
/// ```no_run
/// use std::sync::Arc;
/// use lllm_runtime::{Agent, OpenAiInvoker};
/// use lllm_runtime::mcp::McpServer;
/// use lllm_runtime::tools::ToolFilter;
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
    pub(super) inner: Arc<Inner>,
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
        builder.timeout_s = config.timeout_s;
        builder.startup_timeout_s = config.startup_timeout_s;
        builder.prefix = config.prefix.clone();
        builder.confirm = config.confirm.clone();
        builder.max_output_bytes = config.max_output_bytes;
        builder.confirm_at = config.confirm_at.clone();
        builder.sampling = config.sampling;
        builder.resources = config.resources;
        builder.auth = config.auth.clone();
        builder.discover = config.discover;
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
        let mut tools: Vec<Arc<dyn Tool>> = self
            .inner
            .tools
            .iter()
            .filter(|t| filter.takes(&t.name))
            .map(|t| {
                let tool = McpTool::new(
                    self.inner.clone(),
                    t.clone(),
                    self.inner.offered_name(&t.name),
                    self.inner.confirm.covers(&t.name),
                );
                Arc::new(tool) as Arc<dyn Tool>
            })
            .collect();
        // Filters name the server's own tools; the resource tools come with `resources: true`.
        if self.inner.resources {
            tools.extend(super::resources::resource_tools(&self.inner));
        }
        Ok(tools)
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

/// Builds and starts an [`McpServer`]. Setters never fail; [`start`](Self::start) reports what is
/// invalid.
#[derive(Debug, Clone)]
pub struct McpServerBuilder {
    name: String,
    kind: Kind,
    /// Where the tactic file writes `confirm:`, for messages.
    confirm_at: Option<String>,
    /// Seconds, checked at the start by [`SecondsRange::TOOL`], as a tactic file's are.
    timeout_s: f64,
    startup_timeout_s: f64,
    prefix: Option<String>,
    confirm: ConfirmTools,
    max_output_bytes: usize,
    sampling: bool,
    resources: bool,
    auth: Option<McpAuth>,
    discover: bool,
}

impl McpServerBuilder {
    fn new(name: String, kind: Kind) -> Self {
        McpServerBuilder {
            name,
            kind,
            confirm_at: None,
            timeout_s: DEFAULT_MCP_TIMEOUT_S,
            startup_timeout_s: DEFAULT_MCP_STARTUP_TIMEOUT_S,
            prefix: None,
            confirm: ConfirmTools::None,
            max_output_bytes: lllm_core::internal::DEFAULT_MAX_OUTPUT_BYTES,
            sampling: false,
            resources: false,
            auth: None,
            discover: false,
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

    /// Time one tool call may take (default 60 s), within [`SecondsRange::TOOL`] (a millisecond
    /// to a day), as `timeout_s` in a tactic file.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_s = timeout.as_secs_f64();
        self
    }

    /// Time starting the server and listing its tools may take (default 30 s), within
    /// [`SecondsRange::TOOL`], as `startup_timeout_s` in a tactic file.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout_s = timeout.as_secs_f64();
        self
    }

    /// Put before every tool name the model sees: 1 to 32 letters, digits, `_` or `-`, as `prefix:`
    /// in a tactic file.
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

    /// Lets the server ask the calling agent's model for completions during a tool call
    /// (`sampling/createMessage`), each answered as a child dialog of the calling dialog through
    /// the agent's layers; off by default, as `sampling:` in a tactic file.
    pub fn sampling(mut self, on: bool) -> Self {
        self.sampling = on;
        self
    }

    /// Offers the server's resources to the agents that take it, as two more tools:
    /// `<prefix>list_resources` and `<prefix>read_resource {uri}`; off by default, as `resources:`
    /// in a tactic file.
    pub fn resources(mut self, on: bool) -> Self {
        self.resources = on;
        self
    }

    /// OAuth 2.1 with the server (HTTP servers; as `auth:` in a tactic file): the tokens stored by
    /// [`login`](super::login) are sent and refreshed; without them the start fails saying so.
    pub fn auth(mut self, auth: McpAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Reaches the server with the 2026-07-28 protocol's `server/discover` instead of the
    /// `initialize` handshake (which servers of both eras accept, the default), as
    /// `protocol: "2026-07-28"` in a tactic file.
    pub fn discover(mut self, on: bool) -> Self {
        self.discover = on;
        self
    }

    /// Starts the server (or opens the session), shakes hands and lists its tools, all within the
    /// startup timeout.
    pub async fn start(self) -> Result<McpServer, McpError> {
        let (transport, secrets) = self.checked()?;
        let calls = Arc::new(OpenCalls::default());
        let changes = Arc::new(super::notices::ListChanges::default());
        let client = Client {
            sampling: self.sampling,
            calls: calls.clone(),
            changes: changes.clone(),
            discover: self.discover,
        };
        let connected = self.connect_in_time(&transport, client, &secrets).await?;
        let (tools, rejected) = check_tools(connected.tools, self.prefix.as_deref());
        let peer = connected.session.peer().clone();
        let inner = Inner {
            name: self.name.clone(),
            session: tokio::sync::Mutex::new(Some(connected.session)),
            peer,
            process: connected.process,
            tools: tools.into_iter().map(Arc::new).collect(),
            rejected,
            timeout: Duration::from_secs_f64(self.timeout_s),
            prefix: self.prefix.clone(),
            confirm: self.confirm.clone(),
            max_output_bytes: self.max_output_bytes,
            secrets,
            death_reported: AtomicBool::new(false),
            calls,
            resources: self.resources,
            changes,
            relisted: Default::default(),
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

    /// Every setting checked by the rule the same setting follows in a tactic file, and the
    /// transport with the credentials it carries.
    fn checked(&self) -> Result<(Transport, Secrets), McpError> {
        let invalid = |problem: String| McpError::Invalid {
            server: self.name.clone(),
            problem,
        };
        if let Some(problem) = tool_name_problem(&self.name) {
            return Err(invalid(format!("the server name {problem}")));
        }
        if let Some(problem) = self.prefix.as_deref().and_then(prefix_problem) {
            return Err(invalid(format!("prefix: {problem}")));
        }
        let limit = lllm_core::internal::MAX_OUTPUT_BYTES_LIMIT;
        if self.max_output_bytes == 0 || self.max_output_bytes > limit {
            return Err(invalid(format!(
                "max_output_bytes must be from 1 to {limit}"
            )));
        }
        for (field, seconds) in [
            ("timeout", self.timeout_s),
            ("startup_timeout", self.startup_timeout_s),
        ] {
            SecondsRange::TOOL
                .check(seconds)
                .map_err(|e| invalid(format!("{field}: {e}")))?;
        }
        self.kind
            .transport(&self.name, self.auth.as_ref())
            .map_err(invalid)
    }

    /// Connects and lists the tools within the startup timeout. A failure says why, with what a
    /// stdio server wrote on stderr; on a timeout the process is dropped, which kills its group.
    async fn connect_in_time(
        &self,
        transport: &Transport,
        client: Client,
        secrets: &Secrets,
    ) -> Result<Connected, McpError> {
        let startup = Duration::from_secs_f64(self.startup_timeout_s);
        let mut process = None;
        match tokio::time::timeout(startup, connect(transport, client, &mut process)).await {
            Ok(Ok(connected)) => Ok(connected),
            Ok(Err(failed)) => Err(self.start_failed(failed, secrets).await),
            Err(_) => Err(McpError::StartTimeout {
                server: self.name.clone(),
                seconds: self.startup_timeout_s,
                stderr_tail: process
                    .as_ref()
                    .map(|p| secrets.redact(&p.stderr_tail()))
                    .unwrap_or_default(),
            }),
        }
    }

    /// Why the server did not start, with its exit and its last words on stderr.
    async fn start_failed(&self, failed: Failed, secrets: &Secrets) -> McpError {
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
        McpError::Start {
            server: self.name.clone(),
            problem: secrets.redact(&format!("{}{exit}", excerpt(&printable(&failed.problem)))),
            stderr_tail: secrets.redact(&stderr_tail),
        }
    }
}
