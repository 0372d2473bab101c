//! What one run is asked to do.

use std::path::PathBuf;
use std::sync::Arc;

use lllm_core::{DialogTree, LimitSetting, PromptVars, RunClass, RunLimits};

use crate::conversation::Conversation;
use crate::events::RunObserver;
use crate::invoker::Invoker;
use crate::journal::Journal;
use crate::tools::Confirm;
use crate::trace::TraceRecorder;

/// Whether and where a run is journaled.
#[derive(Debug, Clone, Default)]
pub enum JournalPlan {
    /// Not journaled: a crash or a pause cannot be resumed.
    #[default]
    None,
    /// A new journal in this file (which must not hold one already).
    Create(PathBuf),
    /// The run of this journal, resumed: what it holds is not sent or run again.
    Resume(Arc<Journal>),
}

/// One run of a prepared tactic: its input and variables, its limits, how its requests rank, its
/// journal, who confirms its tool calls, and who watches it. Setters never fail; a setting that
/// cannot work fails the run when it starts.
#[derive(Debug, Clone, Default)]
pub struct RunPlan {
    pub(crate) input: Option<String>,
    pub(crate) vars: PromptVars,
    pub(crate) limits: Vec<LimitSetting>,
    pub(crate) class: RunClass,
    pub(crate) journal: JournalPlan,
    pub(crate) confirm: Option<Arc<dyn Confirm>>,
    pub(crate) trace: Option<Arc<TraceRecorder>>,
    pub(crate) item: Option<String>,
    pub(crate) invoker: Option<Arc<dyn Invoker>>,
    pub(crate) observer: Option<RunObserver>,
    pub(crate) stream: bool,
    pub(crate) traceparent: Option<(String, Option<String>)>,
    pub(crate) conversation: Option<Arc<Conversation>>,
    pub(crate) dialogs: Vec<(String, DialogTree)>,
    pub(crate) journal_tap: Option<crate::journal::JournalTap>,
    pub(crate) caller_tools: Vec<lllm_core::ToolSpec>,
}

impl RunPlan {
    /// A run with no input, no variables, the tactic's limits, interactive, unjournaled, declining
    /// every call that needs a confirmation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The input (`{{ input }}` in templates; what a chat answers).
    pub fn input(mut self, text: impl Into<String>) -> Self {
        self.input = Some(text.into());
        self
    }

    /// The input, when there is one.
    pub fn maybe_input(mut self, text: Option<String>) -> Self {
        self.input = text;
        self
    }

    /// Variables for the templates (`input` is set by [`input`](Self::input)).
    pub fn vars(mut self, vars: PromptVars) -> Self {
        self.vars = vars;
        self
    }

    /// Sets or overrides a limit of the tactic's `limits:` (`"max_requests=5".parse()?`); later
    /// settings win. Journaled, so a resume applies them again.
    pub fn limit(mut self, setting: LimitSetting) -> Self {
        self.limits.push(setting);
        self
    }

    /// How the run's requests rank under `priority: auto` (interactive by default).
    pub fn class(mut self, class: RunClass) -> Self {
        self.class = class;
        self
    }

    /// Journals the run (see [`JournalPlan`]).
    pub fn journal(mut self, journal: JournalPlan) -> Self {
        self.journal = journal;
        self
    }

    /// Sends every line of the run's journal to `tap` as well, from the first (a new journal's
    /// start line, or what a resumed one writes from now on): a copy elsewhere, such as a queue
    /// worker's in JetStream.
    pub fn journal_tap(mut self, tap: crate::journal::JournalTap) -> Self {
        self.journal_tap = Some(tap);
        self
    }

    /// Decides about the calls of tools that need confirmation (without it they are declined; a
    /// journaled run pauses on [`Decision::Pause`](crate::tools::Decision::Pause)).
    pub fn confirm(mut self, confirm: Arc<dyn Confirm>) -> Self {
        self.confirm = Some(confirm);
        self
    }

    /// Records every request of the run in `trace`.
    pub fn trace(mut self, trace: Arc<TraceRecorder>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// The run answers one item of a batch: `{item_id}` in a session prefix becomes `id`.
    pub fn item(mut self, id: impl Into<String>) -> Self {
        self.item = Some(id.into());
        self
    }

    /// Sends the run's requests through `invoker` instead of the engine's (a dry run, a test).
    pub fn invoker(mut self, invoker: Arc<dyn Invoker>) -> Self {
        self.invoker = Some(invoker);
        self
    }

    /// Shows `observer` every event of the run.
    pub fn observer(mut self, observer: RunObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Streams the answer's text to the observer as it arrives (the built-in chat).
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Makes the run's trace a child of an outer one: a W3C `traceparent` (and its `tracestate`), as
    /// the `TRACEPARENT` variable or an HTTP request carries them. Only with OpenTelemetry export
    /// (the `otel` feature); a malformed one is reported and the run starts a trace of its own.
    pub fn traceparent(mut self, traceparent: String, tracestate: Option<String>) -> Self {
        self.traceparent = Some((traceparent, tracestate));
        self
    }

    /// The run answers in a caller's conversation: its id names the run's dialogs' sessions and
    /// its earlier messages start the first dialog (see [`Conversation`]). Journaled, so that a
    /// resume names them the same.
    pub fn conversation(mut self, conversation: Conversation) -> Self {
        self.conversation = Some(Arc::new(conversation));
        self
    }

    /// Continues an earlier run's dialogs: each agent named starts with that tree (its dialogs,
    /// their ids, session names and messages) instead of none, so that its next request extends
    /// the earlier one's prefix. Journaled, so that a resume starts from them again.
    pub fn dialogs(mut self, trees: Vec<(String, DialogTree)>) -> Self {
        self.dialogs = trees;
        self
    }

    /// The caller's function tools (a served request's `tools`), offered beside their own to the
    /// agents with `client_tools: true`. A call of one pauses the run, which needs a journal to hold
    /// it ([`RunError::Paused`](crate::RunError::Paused) lists the calls; the caller's results,
    /// recorded with [`Journal::caller_result`], answer them on resume); without a journal the
    /// model reads that the call was not run. Journaled, so that a resume offers them again.
    pub fn caller_tools(mut self, tools: Vec<lllm_core::ToolSpec>) -> Self {
        self.caller_tools = tools;
        self
    }

    /// The run's input, if any.
    pub fn input_text(&self) -> Option<&str> {
        self.input.as_deref()
    }

    /// The file of the run's journal, when it has one.
    pub fn journal_path(&self) -> Option<PathBuf> {
        match &self.journal {
            JournalPlan::None => None,
            JournalPlan::Create(path) => Some(path.clone()),
            JournalPlan::Resume(journal) => Some(journal.path().to_owned()),
        }
    }

    /// The journal plan.
    pub fn journal_plan(&self) -> &JournalPlan {
        &self.journal
    }

    /// `base` with the plan's limit settings applied in order.
    pub(crate) fn limits_over(&self, base: RunLimits) -> RunLimits {
        let mut limits = base;
        for setting in &self.limits {
            setting.apply(&mut limits);
        }
        limits
    }

    /// The variables the templates see: the plan's, and `input`.
    pub(crate) fn template_vars(&self) -> PromptVars {
        let mut vars = self.vars.clone();
        if let Some(text) = &self.input {
            vars.insert("input".into(), serde_json::Value::from(text.as_str()));
        }
        vars
    }
}
