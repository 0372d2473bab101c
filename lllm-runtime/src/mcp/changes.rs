//! A server's `list_changed` notifications: each only counts (a flood costs nothing but the count),
//! and the tools are listed again when an agent builds its next request, at most once for all the
//! notifications since the last listing, and once for all the agents that share the server.
//! Resources are read live (the SDK drops its cached listing on `resources/list_changed`), and a
//! system prompt taken from a server's prompt stays as fetched at the start.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::ToolFilter;

use super::connect::list_tools;
use super::listing::{check_tools, ServerTool};
use super::notices::Relisted;
use super::state::Inner;
use super::tool::McpTool;
use super::McpServer;
use crate::tools::{ChangingTools, Tool};

impl Inner {
    /// The tools as listed at generation `wanted` or later: listed again unless another agent just
    /// did. `None` when the listing failed (the tools offered stay as they were, with a warning).
    async fn tools_at(&self, wanted: u64) -> (u64, Option<Arc<Vec<Arc<ServerTool>>>>) {
        let mut relisted = self.relisted.lock().await;
        if relisted.generation >= wanted {
            return (relisted.generation, relisted.tools.clone());
        }
        // Notifications arriving while the server answers are answered by this listing too.
        let generation = self.changes.tools.load(Ordering::SeqCst);
        self.changes.relisted.fetch_add(1, Ordering::SeqCst);
        let listing = tokio::time::timeout(self.timeout, list_tools(&self.peer)).await;
        let tools = match listing {
            Ok(Ok(listed)) => {
                let (tools, _rejected) = check_tools(listed, self.prefix.as_deref());
                Some(Arc::new(tools.into_iter().map(Arc::new).collect()))
            }
            Ok(Err((problem, _))) => {
                tracing::warn!(server = %self.name, %problem, "the MCP server said its tools changed, and listing them again failed; its tools stay as they were");
                None
            }
            Err(_) => {
                tracing::warn!(server = %self.name, "the MCP server said its tools changed, and did not list them again within timeout_s; its tools stay as they were");
                None
            }
        };
        tracing::debug!(server = %self.name, generation, "MCP tools listed again");
        *relisted = Relisted {
            generation,
            tools: tools.clone(),
        };
        (generation, tools)
    }
}

impl McpServer {
    /// The server's tools that `filter` takes, as a set an agent lists again before a request when
    /// the server said its list changed.
    pub(crate) fn changing_tools(&self, filter: ToolFilter) -> Arc<dyn ChangingTools> {
        Arc::new(ServerTools {
            server: self.inner.clone(),
            filter,
            seen: AtomicU64::new(0),
        })
    }

    /// How many `list_changed` notifications the server sent (tools, resources, prompts), and how
    /// many times its tools were listed again.
    pub fn list_changes(&self) -> [u64; 4] {
        let c = &self.inner.changes;
        [&c.tools, &c.resources, &c.prompts, &c.relisted].map(|n| n.load(Ordering::SeqCst))
    }
}

/// One agent's view of a server's tools.
#[derive(Debug)]
struct ServerTools {
    server: Arc<Inner>,
    filter: ToolFilter,
    /// The generation of the tools this agent offers.
    seen: AtomicU64,
}

#[async_trait]
impl ChangingTools for ServerTools {
    fn source(&self) -> String {
        format!("MCP server `{}`", self.server.name)
    }

    async fn changed(&self) -> Option<Vec<Arc<dyn Tool>>> {
        let now = self.server.changes.tools.load(Ordering::SeqCst);
        if now == self.seen.load(Ordering::SeqCst) {
            return None;
        }
        let (generation, tools) = self.server.tools_at(now).await;
        self.seen.store(generation, Ordering::SeqCst);
        let tools = tools?;
        Some(
            tools
                .iter()
                .filter(|t| self.filter.takes(&t.name))
                .map(|t| {
                    let tool = McpTool::new(
                        self.server.clone(),
                        t.clone(),
                        self.server.offered_name(&t.name),
                        self.server.confirm.covers(&t.name),
                    );
                    Arc::new(tool) as Arc<dyn Tool>
                })
                .collect(),
        )
    }
}
