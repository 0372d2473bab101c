//! Connecting to a server and listing its tools, within the startup timeout.

use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, Tool as McpToolInfo,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};

use super::child::ServerProcess;
use super::server::Transport;

/// Most pages of a tool listing read: a server that always returns a next cursor must not keep the
/// run waiting.
const MAX_LIST_PAGES: usize = 64;
/// Most tools taken from one server.
pub(crate) const MAX_TOOLS: usize = 1024;
/// Most bytes of one message from a server (a JSON-RPC line or an HTTP body).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Time to establish an HTTP connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The running MCP session.
pub(crate) type Session = RunningService<RoleClient, ClientConfig>;

/// What lllm tells servers about itself.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("lllm", env!("CARGO_PKG_VERSION")),
    )
}

/// A connected server: the session, the process (stdio), and the tools it lists.
pub(crate) struct Connected {
    pub(crate) session: Session,
    pub(crate) process: Option<ServerProcess>,
    pub(crate) tools: Vec<McpToolInfo>,
}

/// Why connecting failed, with what the process left behind for the message.
pub(crate) struct Failed {
    pub(crate) problem: String,
    pub(crate) process: Option<ServerProcess>,
}

/// Starts the process (stdio) or opens the session (HTTP), shakes hands and lists the tools. The
/// caller bounds the time; on a timeout the process is dropped, which kills its group.
pub(crate) async fn connect(
    transport: &Transport,
    process_slot: &mut Option<ServerProcess>,
) -> Result<Connected, Failed> {
    let session = match transport {
        Transport::Stdio { command, env, cwd } => {
            let (process, pipes) = ServerProcess::spawn(command, env, cwd).map_err(|e| Failed {
                problem: format!("cannot start `{}`: {e}", command[0]),
                process: None,
            })?;
            *process_slot = Some(process);
            let io = (pipes.stdout, pipes.stdin);
            client_config().serve(io).await.map_err(|e| Failed {
                problem: format!("the MCP handshake failed: {e}"),
                process: process_slot.take(),
            })?
        }
        Transport::Http { url, headers } => {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(CONNECT_TIMEOUT)
                .build()
                .map_err(|e| Failed {
                    problem: format!("cannot build the HTTP client: {e}"),
                    process: None,
                })?;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.custom_headers = headers.clone();
            config.max_json_response_size = MAX_MESSAGE_BYTES;
            config.max_sse_event_size = MAX_MESSAGE_BYTES;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            client_config().serve(transport).await.map_err(|e| Failed {
                problem: format!("the MCP handshake failed: {e}"),
                process: None,
            })?
        }
    };
    let tools = list_tools(&session).await.map_err(|problem| Failed {
        problem,
        process: process_slot.take(),
    })?;
    Ok(Connected {
        session,
        process: process_slot.take(),
        tools,
    })
}

/// Every tool the server lists, page by page, within [`MAX_LIST_PAGES`] and [`MAX_TOOLS`].
async fn list_tools(session: &Session) -> Result<Vec<McpToolInfo>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = session
            .list_tools(params)
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            return Err(format!(
                "it lists more than {MAX_TOOLS} tools; a model cannot choose among so many"
            ));
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
    Err(format!(
        "its tool listing did not end after {MAX_LIST_PAGES} pages"
    ))
}
