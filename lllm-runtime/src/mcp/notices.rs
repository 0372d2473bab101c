//! What a server's `list_changed` notifications leave for the agents: counts, and the tools as last
//! listed again (acted on in `changes`).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::listing::ServerTool;

/// The `list_changed` notifications a server sent, by list.
#[derive(Debug, Default)]
pub(crate) struct ListChanges {
    /// `notifications/tools/list_changed` received: the tools' generation.
    pub(crate) tools: AtomicU64,
    /// `notifications/resources/list_changed` received.
    pub(crate) resources: AtomicU64,
    /// `notifications/prompts/list_changed` received.
    pub(crate) prompts: AtomicU64,
    /// Times the tools were listed again.
    pub(crate) relisted: AtomicU64,
}

/// The server's tools as last listed again, and the generation that listing answers.
#[derive(Debug, Default)]
pub(crate) struct Relisted {
    pub(crate) generation: u64,
    pub(crate) tools: Option<Arc<Vec<Arc<ServerTool>>>>,
}
