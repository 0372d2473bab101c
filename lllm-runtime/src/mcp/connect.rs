//! Connecting to a server and listing its tools, within the startup timeout.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, Tool as McpToolInfo};
use rmcp::service::{ClientInitializeError, RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::RoleClient;

use super::auth::HttpAuth;
use super::child::ServerProcess;
use super::client::Client;
use super::lines::{BoundedLines, MAX_MESSAGE_BYTES, OVERSIZED};
use super::printable;
use super::transport::Transport;
use super::transport_error::{handshake_problem, transport_problem};

/// Most pages of a tool listing read: a server that always returns a next cursor must not keep the
/// run waiting.
const MAX_LIST_PAGES: usize = 64;
/// Most tools taken from one server.
pub(crate) const MAX_TOOLS: usize = 1024;
/// Time to establish an HTTP connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The running MCP session.
pub(crate) type Session = RunningService<RoleClient, Client>;

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
    /// Whether the server was answering (an error answer, one of the wrong shape, a listing lllm
    /// refused) rather than gone: then its exit, which only follows the closed connection, is not
    /// news.
    pub(crate) answered: bool,
}

/// Starts the process (stdio) or opens the session (HTTP), shakes hands and lists the tools. The
/// caller bounds the time; on a timeout the process is dropped, which kills its group.
pub(crate) async fn connect(
    transport: &Transport,
    client: Client,
    process_slot: &mut Option<ServerProcess>,
) -> Result<Connected, Failed> {
    let discover = client.discover;
    let handshake_failed = |e: &ClientInitializeError| {
        format!(
            "the MCP handshake failed: {}{}",
            handshake_problem(e),
            super::handshake::era_hint(e, discover)
        )
    };
    let session = match transport {
        Transport::Stdio { command, env, cwd } => {
            let (process, pipes) = ServerProcess::spawn(command, env, cwd).map_err(|e| Failed {
                problem: format!("cannot start `{}`: {e}", command[0]),
                process: None,
                answered: false,
            })?;
            *process_slot = Some(process);
            // Lines are cut at the limit before the transport sees them (one over: the newline).
            let transport =
                AsyncRwTransport::new_client(BoundedLines::new(pipes.stdout), pipes.stdin)
                    .with_max_line_length(MAX_MESSAGE_BYTES + 1);
            super::handshake::handshake(client, transport)
                .await
                .map_err(|e| Failed {
                    problem: handshake_failed(&e),
                    process: process_slot.take(),
                    answered: answered_handshake(&e),
                })?
        }
        Transport::Http { url, headers, auth } => http_session(url, headers, auth, client).await?,
    };
    let tools = list_tools(session.peer())
        .await
        .map_err(|(problem, answered)| Failed {
            problem,
            process: process_slot.take(),
            answered,
        })?;
    Ok(Connected {
        session,
        process: process_slot.take(),
        tools,
    })
}

/// Opens a streamable HTTP session and shakes hands, sending the stored OAuth tokens when the
/// server has `auth:`.
async fn http_session(
    url: &str,
    headers: &HashMap<http::HeaderName, http::HeaderValue>,
    auth: &HttpAuth,
    client: Client,
) -> Result<Session, Failed> {
    let discover = client.discover;
    let failed = |problem: String| Failed {
        problem,
        process: None,
        answered: false,
    };
    let http = crate::tls::http_client()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| failed(format!("cannot build the HTTP client: {e}")))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = headers.clone();
    config.max_json_response_size = MAX_MESSAGE_BYTES;
    config.max_sse_event_size = MAX_MESSAGE_BYTES;
    let served = match &auth.auth {
        None => {
            let transport = StreamableHttpClientTransport::with_client(http, config);
            super::handshake::handshake(client, transport).await
        }
        Some(settings) => {
            let authorized = super::auth::authorized(url, auth, settings, http)
                .await
                .map_err(failed)?;
            let transport = StreamableHttpClientTransport::with_client(authorized, config);
            super::handshake::handshake(client, transport).await
        }
    };
    served.map_err(|e| {
        failed(format!(
            "the MCP handshake failed: {}{}",
            super::auth::handshake_problem(&e, auth),
            super::handshake::era_hint(&e, discover)
        ))
    })
}

/// Every tool the server lists, page by page, within [`MAX_LIST_PAGES`], [`MAX_TOOLS`] and
/// [`MAX_MESSAGE_BYTES`] for the whole listing. The error says whether the server was answering.
pub(crate) async fn list_tools(
    session: &rmcp::Peer<RoleClient>,
) -> Result<Vec<McpToolInfo>, (String, bool)> {
    let mut tools = Vec::new();
    let mut bytes = 0;
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = session.list_tools(params).await.map_err(|e| {
            let answered = matches!(
                e,
                ServiceError::McpError(_) | ServiceError::UnexpectedResponse
            );
            (
                format!("listing its tools failed: {}", describe(&e)),
                answered,
            )
        })?;
        bytes += page
            .tools
            .iter()
            .map(|tool| serde_json::to_string(tool).map_or(0, |text| text.len()))
            .sum::<usize>();
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            return Err((
                format!(
                    "it lists more than {MAX_TOOLS} tools; a model cannot choose among so many"
                ),
                true,
            ));
        }
        if bytes > MAX_MESSAGE_BYTES {
            return Err((
                format!("its tool listing has more than {MAX_MESSAGE_BYTES} bytes"),
                true,
            ));
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
    Err((
        format!("its tool listing did not end after {MAX_LIST_PAGES} pages"),
        true,
    ))
}

/// Whether a failed handshake had an answer from the server (rather than a closed connection).
fn answered_handshake(error: &ClientInitializeError) -> bool {
    !matches!(
        error,
        ClientInitializeError::ConnectionClosed(_)
            | ClientInitializeError::TransportError { .. }
            | ClientInitializeError::ExpectedInitResponse(None)
    )
}

/// A failed request, for a message: the server's own words for an error answer (without control
/// characters), the SDK's otherwise.
pub(crate) fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) if is_oversized(data) => printable(&data.message),
        ServiceError::McpError(data) => format!(
            "the server answered with error {}: {}",
            data.code.0,
            printable(&data.message)
        ),
        ServiceError::UnexpectedResponse => {
            "the server's answer does not have the shape the request asks for".to_owned()
        }
        ServiceError::TransportSend(error) => transport_problem(error),
        ServiceError::TransportClosed => "the connection to the server is closed".to_owned(),
        other => printable(&other.to_string()),
    }
}

/// Whether an error answer stands for an answer over [`MAX_MESSAGE_BYTES`] (see [`BoundedLines`]).
pub(crate) fn is_oversized(data: &rmcp::model::ErrorData) -> bool {
    data.data
        .as_ref()
        .and_then(|d| d.get("lllm"))
        .and_then(serde_json::Value::as_str)
        == Some(OVERSIZED)
}
