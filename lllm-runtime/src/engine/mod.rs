//! The run engine: what turns a [`RunPlan`] into a run.
//!
//! A tactic is prepared once ([`Engine::prepare`]: its tactic object built, its MCP servers started),
//! then runs any number of times, at once if need be, each run with its own team of agents, dialogs,
//! budget, journal and trace. `lllm run`, `resume`, `batch` and `tools` use it through a [`Host`],
//! which owns the Tokio runtime; a long-lived server or a queue worker uses it inside its own.
//!
//! ```no_run
//! use lllm_runtime::{load_tactic, Engine, Host, RunPlan, TacticRegistry};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let spec = load_tactic(std::path::Path::new("tactic.yaml"))?;
//! let host = Host::new()?;
//! let engine = Engine::new(TacticRegistry::new());
//! let answer = host.block_on(async {
//!     let tactic = engine.prepare(spec).await?;
//!     let output = engine.run(&tactic, RunPlan::new().input("Why is the sky blue?")).await;
//!     tactic.shutdown().await;
//!     output
//! })?;
//! println!("{}", answer.answer);
//! # Ok(()) }
//! ```
#![doc = include_str!("../../../docs/engine.md")]

pub(crate) mod batch;
mod caller_tools;
mod chat;
mod error;
mod files;
mod handle;
mod host;
mod names;
mod output;
mod plan;
mod prepared;
mod resume;
mod run;

use std::sync::Arc;

#[cfg(feature = "queue")]
pub(crate) use batch::item_id;
pub use caller_tools::CallerToolsError;
pub use chat::ChatSession;
pub use error::{AtPause, RunError};
pub use files::{FileError, RunFiles};
pub use handle::{BeforeEnd, RunHandle, StreamedEvent};
pub use host::Host;
pub use names::tactic_name;
pub use output::{AgentSummary, RunOutput};
pub use plan::{JournalPlan, RunPlan};
pub use prepared::PreparedTactic;
pub use resume::{plan_resume, Resumable};

use crate::endpoints::Endpoints;
use crate::invoker::{Invoker, OpenAiInvoker};
use crate::tactic::TacticRegistry;

/// Runs tactics: the registry of tactic types, the invoker every run sends through (unless its
/// plan brings its own), and the state of the endpoints its runs send to (breakers, admission
/// gates), which all its runs share and no other engine does. Clones share everything.
#[derive(Debug, Clone)]
pub struct Engine {
    registry: TacticRegistry,
    invoker: Arc<dyn Invoker>,
    endpoints: Endpoints,
}

impl Engine {
    /// An engine with these tactic types, sending through an [`OpenAiInvoker`], with endpoint
    /// state of its own.
    pub fn new(registry: TacticRegistry) -> Self {
        Engine {
            registry,
            invoker: Arc::new(OpenAiInvoker::new()),
            endpoints: Endpoints::new(),
        }
    }

    /// Keeps the runs' breakers and admission gates in `endpoints` (shared with whoever else
    /// holds it) instead of the engine's own.
    pub fn with_endpoints(mut self, endpoints: Endpoints) -> Self {
        self.endpoints = endpoints;
        self
    }

    /// The state of the endpoints the engine's runs send to.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// Sends every run's requests through `invoker` instead.
    pub fn with_invoker(mut self, invoker: Arc<dyn Invoker>) -> Self {
        self.invoker = invoker;
        self
    }

    /// The tactic types.
    pub fn registry(&self) -> &TacticRegistry {
        &self.registry
    }

    /// The invoker runs send through by default.
    pub fn invoker(&self) -> &Arc<dyn Invoker> {
        &self.invoker
    }
}
