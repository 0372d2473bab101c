//! The MCP handshake, in either era: `initialize` (every server before 2026-07-28, and the servers
//! of both eras), or the 2026-07-28 protocol's `server/discover` for a server that does not accept
//! `initialize` (`protocol: "2026-07-28"`). Not both at once: the SDK's automatic fallback gives
//! up discovery after a fixed 10 s, which a server still starting (`npx` downloading it, a loaded
//! machine) exceeds, and its late answer then breaks the `initialize` that follows.

use rmcp::model::{ErrorCode, ProtocolVersion};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::RoleClient;

use super::client::Client;

/// JSON-RPC error of a server that does not speak the protocol version asked for.
const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);

/// Connects `client` over `transport` with its handshake.
pub(crate) async fn handshake<T, E, A>(
    client: Client,
    transport: T,
) -> Result<RunningService<RoleClient, Client>, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = if client.discover {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    client.serve_with_lifecycle(transport, lifecycle).await
}

/// What to change when the handshake failed for the other era, if it did: a server of the new
/// protocol refuses `initialize` with "unsupported protocol version"; an older one answers
/// `server/discover` with an error.
pub(crate) fn era_hint(error: &ClientInitializeError, discover: bool) -> &'static str {
    match (error, discover) {
        (ClientInitializeError::JsonRpcError(data), false)
            if data.code == UNSUPPORTED_PROTOCOL_VERSION =>
        {
            "; the server speaks only the 2026-07-28 protocol: add `protocol: \"2026-07-28\"` to it"
        }
        (ClientInitializeError::JsonRpcError(_), true) => {
            "; the server may speak an older protocol, with `initialize`: leave `protocol:` out"
        }
        _ => "",
    }
}
