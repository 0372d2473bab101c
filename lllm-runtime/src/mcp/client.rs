//! lllm as an MCP client: what it tells a server it can do, and its answers to the server's
//! requests (sampling, routed to the tool call it belongs to).

#![allow(deprecated)] // Sampling is deprecated by SEP-2577 in rmcp, and still what servers send.

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, ErrorData, Implementation, SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::ClientHandler;
use std::sync::atomic::Ordering;

use super::asks::OpenCalls;

/// The client side of one server's session.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    /// Whether the server may ask for completions (`sampling: true`).
    pub(crate) sampling: bool,
    /// The server's running calls, which its requests are for.
    pub(crate) calls: Arc<OpenCalls>,
    /// The `list_changed` notifications the server sent, counted for the agents to act on between
    /// requests.
    pub(crate) changes: Arc<super::notices::ListChanges>,
    /// Whether the handshake is `server/discover` (2026-07-28) rather than `initialize`.
    pub(crate) discover: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.sampling {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("lllm", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if !self.sampling {
            return Err(ErrorData::method_not_found::<CreateMessageRequestMethod>());
        }
        self.calls.sample(params).await
    }

    // Counting only: a server sending thousands a second costs no listing (see `changes`).
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.tools.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.resources.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.prompts.fetch_add(1, Ordering::SeqCst);
    }
}
