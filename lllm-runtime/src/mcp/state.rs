//! A started server's state, shared by its handles and by the tools agents were given: what a
//! failed call says, and which names a filter may take.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lllm_core::secret::Secrets;
use lllm_core::ConfirmTools;
use rmcp::service::ServiceError;

use super::asks::OpenCalls;
use super::child::ServerProcess;
use super::connect::{describe, is_oversized, Session};
use super::listing::{Rejected, ServerTool};
use super::{printable, McpError};
use crate::tools::ToolError;

/// A started server: its session, its process, its checked tools and settings. Shared by its
/// handles ([`McpServer`](super::McpServer)) and the tools agents were given.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) session: tokio::sync::Mutex<Option<Session>>,
    pub(crate) peer: rmcp::Peer<rmcp::RoleClient>,
    pub(crate) process: Option<ServerProcess>,
    pub(crate) tools: Vec<Arc<ServerTool>>,
    /// The listed tools that cannot be offered to a model, with why: an error only for an agent
    /// that takes one, so that a tactic can leave them out.
    pub(crate) rejected: Vec<Rejected>,
    pub(crate) timeout: Duration,
    pub(crate) prefix: Option<String>,
    pub(crate) confirm: ConfirmTools,
    pub(crate) max_output_bytes: usize,
    /// The credentials of an HTTP server (its headers, its URL's password), kept out of messages.
    pub(crate) secrets: Secrets,
    /// Whether its death was already reported on stderr.
    pub(crate) death_reported: AtomicBool,
    /// Its running tool calls, which what the server asks is routed to.
    pub(crate) calls: Arc<OpenCalls>,
    /// Whether agents taking the server are offered its resources (`resources: true`).
    pub(crate) resources: bool,
    /// The `list_changed` notifications it sent.
    pub(crate) changes: Arc<super::notices::ListChanges>,
    /// Its tools as last listed again after one.
    pub(crate) relisted: tokio::sync::Mutex<super::notices::Relisted>,
}

impl Inner {
    pub(crate) fn offered_name(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => name.to_owned(),
        }
    }

    pub(crate) fn check_names(&self, names: &[String], field: &str) -> Result<(), McpError> {
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
