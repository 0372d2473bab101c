//! lllm as an MCP client: what it tells a server it can do, and its answers to the server's
//! requests (sampling, elicitation, routed to the tool call they belong to).

#![allow(deprecated)] // Sampling is deprecated by SEP-2577 in rmcp, and still what servers send.

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorData,
    FormElicitationCapability, Implementation, SamplingCapability, UrlElicitationCapability,
    TASKS_EXTENSION_ID,
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
        // Questions go to the user (or are declined when nobody can be asked); lllm checks the
        // answers against the requested schema before they are sent.
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new().with_schema_validation(true))
                .with_url(UrlElicitationCapability::new()),
        );
        // Long tools may answer with a task (MCP 2026-07-28), which the call polls to its end.
        let mut extensions = rmcp::model::ExtensionCapabilities::new();
        extensions.insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
        capabilities.extensions = Some(extensions);
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

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.calls.elicit(params).await
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
