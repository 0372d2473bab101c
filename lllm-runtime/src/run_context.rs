//! What the agents of one run share, handed down as one value: the engine builds it once per run,
//! the team gives it to each agent, and each agent's layers and tool-call pipeline take what they
//! need from it.

use std::sync::Arc;

use lllm_core::RunClass;

use crate::budget::RunBudget;
use crate::conversation::Conversation;
use crate::endpoints::Endpoints;
use crate::events::RunObserver;
use crate::journal::Journal;
use crate::pause::Pause;
use crate::tools::Confirm;
use crate::trace::TraceRecorder;

/// What one run hands each of its agents: the budget its limits are counted against, its journal,
/// its trace, who confirms its tool calls, who watches it, the caller's conversation, how its
/// requests rank, and the pause its agents share.
///
/// [`Engine`](crate::Engine) builds one for each run from its [`RunPlan`](crate::RunPlan) and
/// hands it to the run's team ([`TeamBuilder::run_context`](crate::tactic::TeamBuilder::run_context)), which hands
/// it to every agent ([`AgentBuilder::run_context`](crate::AgentBuilder::run_context)). Build one yourself
/// to make the agents of one run by hand. The default is a run without limits, journal, trace,
/// confirmations or observer, interactive,
/// sharing the process's breakers and admission gates ([`Endpoints::shared`]).
///
/// Clones share everything (one budget, one journal, one pause): give each run a context of its
/// own.
#[derive(Debug, Clone)]
pub struct RunContext {
    pub(crate) budget: Option<Arc<RunBudget>>,
    pub(crate) journal: Option<Arc<Journal>>,
    pub(crate) trace: Option<Arc<TraceRecorder>>,
    pub(crate) confirm: Option<Arc<dyn Confirm>>,
    pub(crate) observer: Option<RunObserver>,
    pub(crate) conversation: Option<Arc<Conversation>>,
    pub(crate) class: RunClass,
    /// The batch item the run answers (`{item_id}` in a session prefix).
    pub(crate) item: Option<String>,
    /// Whether the tactic streams its answers' text to the observer.
    pub(crate) stream: bool,
    /// Set by the first tool call that pauses the run: nothing more is sent or started.
    pub(crate) pause: Arc<Pause>,
    /// The breakers and admission gates of the endpoints the run sends to.
    pub(crate) endpoints: Endpoints,
    /// The caller's function tools (a served request's), offered to agents with `client_tools`.
    pub(crate) caller_tools: Vec<lllm_core::ToolSpec>,
    /// The run's tasks (background subagents): their ids are the run's own.
    pub(crate) tasks: Arc<crate::tasks::TaskRegistry>,
}

impl Default for RunContext {
    fn default() -> Self {
        RunContext {
            budget: None,
            journal: None,
            trace: None,
            confirm: None,
            observer: None,
            conversation: None,
            class: RunClass::default(),
            item: None,
            stream: false,
            pause: Arc::default(),
            endpoints: Endpoints::shared(),
            caller_tools: Vec::new(),
            tasks: Arc::default(),
        }
    }
}

impl RunContext {
    /// A run without limits, journal, trace, confirmations or observer, interactive, sharing the
    /// process's endpoint state ([`Endpoints::shared`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts every request, token and tool call of the run against its limits.
    pub fn budget(mut self, budget: Arc<RunBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Journals the run (dialogs, answers, tool calls, the steps' saved variables), taking from the
    /// journal what it already holds: see [`Journal`].
    pub fn journal(mut self, journal: Arc<Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Records every model call of the run in a content-free trace.
    pub fn trace(mut self, trace: Arc<TraceRecorder>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Decides about calls of tools that need confirmation (`confirm:` in tactic files); without it
    /// such calls are declined and the model is told so.
    pub fn confirm(mut self, confirm: Arc<dyn Confirm>) -> Self {
        self.confirm = Some(confirm);
        self
    }

    /// Shows `observer` every event of the run: the steps' progress, tool calls and their results,
    /// and the answers' text when the tactic streams.
    pub fn observer(mut self, observer: RunObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The run answers in a caller's conversation, which names its root dialogs' sessions (see
    /// [`Conversation`]).
    pub fn conversation(mut self, conversation: Arc<Conversation>) -> Self {
        self.conversation = Some(conversation);
        self
    }

    /// How the run's requests rank under `priority: auto`: interactive (the default) above batch.
    pub fn class(mut self, class: RunClass) -> Self {
        self.class = class;
        self
    }

    /// The run answers one item of a batch: `{item_id}` in an agent's `session_prefix` becomes
    /// `id`, so that the server can tell the items' sessions apart by name too.
    pub fn item(mut self, id: impl Into<String>) -> Self {
        self.item = Some(id.into());
        self
    }

    /// Keeps the run's breakers and admission gates in `endpoints`, shared with the runs given the
    /// same (the default: [`Endpoints::shared`], the process's).
    pub fn endpoints(mut self, endpoints: Endpoints) -> Self {
        self.endpoints = endpoints;
        self
    }

    /// Offers the caller's function tools to the agents with `client_tools: true`: a call of one
    /// pauses the run (with a journal) so that the caller runs it; without a journal the model reads
    /// that it was not run.
    pub fn caller_tools(mut self, tools: Vec<lllm_core::ToolSpec>) -> Self {
        self.caller_tools = tools;
        self
    }

    /// Asks the tactic to stream its answers' text to the observer as it arrives (the built-in chat
    /// does; a streamed answer that fails midway is not retried).
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }
}
