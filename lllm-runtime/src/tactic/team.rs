//! The agents of a tactic file, built once and shared by the steps that use them.

use std::sync::Arc;
use std::time::Duration;

use lllm_core::{AgentSpec, InferenceHints, RunClass, TacticSpec, Usage};

use crate::agent::{AgentBuilder, AgentError, AgentErrorKind, Recipe, Roster};
use crate::budget::RunBudget;
use crate::conversation::Conversation;
use crate::events::{RunEvent, RunObserver, StepOutcome};
use crate::invoker::Invoker;
use crate::journal::Journal;
use crate::mcp::McpServers;
use crate::run_context::RunContext;
use crate::tools::Confirm;
use crate::trace::TraceRecorder;
use crate::Agent;

/// What a running tactic reports about its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressEvent {
    /// The step's model call started.
    Started,
    /// The step answered after this long.
    Finished(Duration),
    /// The step failed after this long.
    Failed(Duration),
    /// The step was stopped after this long because another branch failed.
    Cancelled(Duration),
}

/// A step's progress: where it is in the file, which agent and dialog.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// The step's field path (`steps[2].parallel[1]`).
    pub step: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// The dialog alias.
    pub dialog: &'a str,
    /// What happened.
    pub event: ProgressEvent,
}

impl Progress<'_> {
    /// The same news as a [`RunEvent`].
    pub fn to_event(&self) -> RunEvent {
        let (step, agent, dialog) = (
            self.step.to_owned(),
            self.agent.to_owned(),
            self.dialog.to_owned(),
        );
        let (outcome, took) = match self.event {
            ProgressEvent::Started => {
                return RunEvent::StepStarted {
                    step,
                    agent,
                    dialog,
                }
            }
            ProgressEvent::Finished(took) => (StepOutcome::Finished, took),
            ProgressEvent::Failed(took) => (StepOutcome::Failed, took),
            ProgressEvent::Cancelled(took) => (StepOutcome::Cancelled, took),
        };
        RunEvent::StepEnded {
            step,
            agent,
            dialog,
            outcome,
            took,
        }
    }
}

type ProgressSink = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// The agents of a tactic, in file order, with the tactic's spec.
pub struct Team {
    agents: Vec<Agent>,
    spec: TacticSpec,
    progress: Option<ProgressSink>,
    /// What the run shares with every agent of the team.
    run: RunContext,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("agents", &self.agents)
            .field("tactic_type", &self.spec.tactic_type())
            .finish_non_exhaustive()
    }
}

impl Team {
    /// Builds every agent of `spec`, all sending through `invoker`. A tactic whose agents use MCP
    /// servers needs them started: use [`Team::builder`] with [`TeamBuilder::mcp`].
    pub fn from_spec(spec: &TacticSpec, invoker: Arc<dyn Invoker>) -> Result<Team, AgentError> {
        Self::builder(spec).invoker(invoker).build()
    }

    /// Like [`from_spec`](Self::from_spec), every agent recording its calls in `trace`.
    pub fn traced(
        spec: &TacticSpec,
        invoker: Arc<dyn Invoker>,
        trace: Option<Arc<TraceRecorder>>,
    ) -> Result<Team, AgentError> {
        let builder = Self::builder(spec).invoker(invoker);
        match trace {
            Some(trace) => builder.trace(trace),
            None => builder,
        }
        .build()
    }

    /// A builder for the team of `spec`: add the invoker, and the trace, MCP servers and
    /// confirmation callback it needs.
    pub fn builder(spec: &TacticSpec) -> TeamBuilder<'_> {
        TeamBuilder {
            spec,
            invoker: None,
            mcp: None,
            run: RunContext::default(),
        }
    }

    /// Reports each step's progress to `sink` (for example to show it on a terminal).
    pub fn on_progress(mut self, sink: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }

    /// The run's trace, when one is recorded: Rust tactics tell it what their steps wait for
    /// ([`TraceRecorder::waits`]).
    pub fn trace(&self) -> Option<&Arc<TraceRecorder>> {
        self.run.trace.as_ref()
    }

    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name() == name)
    }

    /// The agents in file order.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// The tactic file's spec (its `config:` for tactics written in Rust).
    pub fn spec(&self) -> &TacticSpec {
        &self.spec
    }

    /// Token usage of every call of every agent.
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for agent in &self.agents {
            total.add(&agent.usage());
        }
        total
    }

    /// The run's journal, when it has one.
    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.run.journal.as_ref()
    }

    /// How the run's requests rank under `priority: auto`.
    pub fn run_class(&self) -> RunClass {
        self.run.class
    }

    /// Whether the tactic should stream its answers' text to the run's observer (the built-in chat
    /// does; see [`TeamBuilder::stream`]).
    pub fn streams(&self) -> bool {
        self.run.stream
    }

    /// The run's observer, when it has one (a tactic shows it what the agents do not).
    pub(crate) fn observer(&self) -> Option<&crate::events::RunObserver> {
        self.run.observer.as_ref()
    }

    pub(crate) fn report(&self, progress: Progress<'_>) {
        if let Some(sink) = &self.progress {
            sink(progress);
        }
        if let Some(observer) = &self.run.observer {
            observer.notify(&progress.to_event());
        }
    }
}

/// Builds a [`Team`]. Setters never fail; [`build`](Self::build) reports what is missing or invalid.
#[derive(Debug)]
pub struct TeamBuilder<'a> {
    spec: &'a TacticSpec,
    invoker: Option<Arc<dyn Invoker>>,
    mcp: Option<&'a McpServers>,
    run: RunContext,
}

/// What a session prefix may contain to name the batch item its dialogs answer.
pub const ITEM_ID_PLACEHOLDER: &str = "{item_id}";

impl<'a> TeamBuilder<'a> {
    /// The run the team answers, handed to every agent: its budget, journal, trace, confirmations,
    /// observer, conversation, class, batch item and streaming (see [`RunContext`]). Without a
    /// budget, the spec's `limits:` apply. Replaces what the setters of one of them
    /// ([`journal`](Self::journal), [`trace`](Self::trace), ...) set before.
    pub fn run_context(mut self, run: RunContext) -> Self {
        self.run = run;
        self
    }

    /// The team answers one item of a batch: `{item_id}` in an agent's `session_prefix` becomes
    /// `id`, so that the server can tell the items' sessions apart by name too. Shorthand for
    /// [`RunContext::item`].
    pub fn item(mut self, id: impl Into<String>) -> Self {
        self.run = self.run.item(id);
        self
    }

    /// What sends every agent's model calls (required).
    pub fn invoker(mut self, invoker: Arc<dyn Invoker>) -> Self {
        self.invoker = Some(invoker);
        self
    }

    /// Every agent records its calls in `trace`. Shorthand for [`RunContext::trace`].
    pub fn trace(mut self, trace: Arc<TraceRecorder>) -> Self {
        self.run = self.run.trace(trace);
        self
    }

    /// The started MCP servers of the tactic ([`McpServers::start`]): each agent takes the tools
    /// its `mcp:` names.
    pub fn mcp(mut self, servers: &'a McpServers) -> Self {
        self.mcp = Some(servers);
        self
    }

    /// Decides about every agent's calls of tools that need confirmation. Shorthand for
    /// [`RunContext::confirm`].
    pub fn confirm(mut self, confirm: Arc<dyn Confirm>) -> Self {
        self.run = self.run.confirm(confirm);
        self
    }

    /// Journals the run (every agent's dialogs, answers and tool calls, and the steps' saved
    /// variables), resuming from what the journal already holds. Shorthand for
    /// [`RunContext::journal`].
    pub fn journal(mut self, journal: Arc<Journal>) -> Self {
        self.run = self.run.journal(journal);
        self
    }

    /// Counts every agent's requests, tokens and tool calls against the run's limits; without it
    /// the spec's `limits:` apply. Shorthand for [`RunContext::budget`].
    pub fn budget(mut self, budget: Arc<RunBudget>) -> Self {
        self.run = self.run.budget(budget);
        self
    }

    /// How the run's requests rank under `priority: auto`: interactive (the default) above batch.
    /// `lllm batch` makes its items' teams [`RunClass::Batch`] unless told otherwise. Shorthand for
    /// [`RunContext::class`].
    pub fn run_class(mut self, class: RunClass) -> Self {
        self.run = self.run.class(class);
        self
    }

    /// Shows `observer` every event of the run: the steps' progress, tool calls and their results,
    /// and the answers' text when the tactic streams. Shorthand for [`RunContext::observer`].
    pub fn observer(mut self, observer: RunObserver) -> Self {
        self.run = self.run.observer(observer);
        self
    }

    /// Asks the tactic to stream its answers' text to the observer as it arrives (the built-in chat
    /// does; a streamed answer that fails midway is not retried). Shorthand for
    /// [`RunContext::stream`].
    pub fn stream(mut self, stream: bool) -> Self {
        self.run = self.run.stream(stream);
        self
    }

    /// The team answers in a caller's conversation, which names its root dialogs' sessions (see
    /// [`Conversation`]). Shorthand for [`RunContext::conversation`].
    pub fn conversation(mut self, conversation: Arc<Conversation>) -> Self {
        self.run = self.run.conversation(conversation);
        self
    }

    /// Builds every agent, each with the run's context.
    pub fn build(self) -> Result<Team, AgentError> {
        let mut run = self.run.clone();
        if run.budget.is_none() {
            run.budget = Some(Arc::new(RunBudget::new(*self.spec.limits())));
        }
        let no_servers = McpServers::new();
        let servers = self.mcp.unwrap_or(&no_servers);
        let mut roster = Roster::default();
        for agent in self.spec.agents() {
            roster.add(agent.name(), self.recipe(agent, servers, &run)?);
        }
        let roster = Arc::new(roster);
        let agents = self
            .spec
            .agents()
            .iter()
            .map(|agent| {
                roster.make(agent.name(), run.clone())?.ok_or_else(|| {
                    let kind = AgentErrorKind::Task("the agent has no recipe".into());
                    AgentError::new(agent.name(), None, kind)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Team {
            agents,
            spec: self.spec.clone(),
            progress: None,
            run,
        })
    }
}

impl TeamBuilder<'_> {
    /// What builds `agent` for a run: its spec, its MCP and caller tools and the invoker, taken
    /// now; the run (the team's, or a task's) given when it is built. Tasks' agents are built by
    /// the same recipes, so a subagent is the agent the tactic file describes.
    fn recipe(
        &self,
        agent: &AgentSpec,
        servers: &McpServers,
        run: &RunContext,
    ) -> Result<Recipe, AgentError> {
        let mcp_failed = |e| AgentError::new(agent.name(), None, AgentErrorKind::Mcp(Box::new(e)));
        let mcp_tools = servers.tools_for(agent).map_err(mcp_failed)?;
        let mcp_prompt = servers.system_prompt_for(agent).map_err(mcp_failed)?;
        let changing = servers.changing_for(agent);
        let caller_tools: Vec<Arc<dyn crate::tools::Tool>> = if agent.client_tools() {
            run.caller_tools
                .iter()
                .map(|spec| {
                    Arc::new(crate::tools::CallerTool::new(spec.clone()))
                        as Arc<dyn crate::tools::Tool>
                })
                .collect()
        } else {
            Vec::new()
        };
        let hints = item_hints(agent, run.item.as_deref())?;
        let invoker = self.invoker.clone();
        let agent = agent.clone();
        Ok(Arc::new(move |roster: &Arc<Roster>, run: RunContext| {
            let mut builder = AgentBuilder::from_spec(&agent)
                .tools(mcp_tools.iter().cloned())
                .changing_tools(changing.iter().cloned())
                .tools(caller_tools.iter().cloned())
                .run_context(run)
                .roster(roster.clone());
            if let Some(hints) = &hints {
                builder = builder.inference_hints(hints.clone());
            }
            if let Some(prompt) = &mcp_prompt {
                builder = builder.system_prompt(prompt.clone());
            }
            if let Some(invoker) = &invoker {
                builder = builder.invoker(invoker.clone());
            }
            builder.build()
        }))
    }
}

/// The agent's hints with `{item_id}` in its session prefix made `item`, when the run answers an
/// item and the prefix names it.
fn item_hints(agent: &AgentSpec, item: Option<&str>) -> Result<Option<InferenceHints>, AgentError> {
    let (Some(item), Some(hints)) = (item, agent.inference_hints()) else {
        return Ok(None);
    };
    let Some(prefix) = hints
        .session_prefix()
        .filter(|p| p.contains(ITEM_ID_PLACEHOLDER))
    else {
        return Ok(None);
    };
    hints
        .to_builder()
        .session_prefix(prefix.replace(ITEM_ID_PLACEHOLDER, item))
        .build()
        .map(Some)
        .map_err(|e| AgentError::new(agent.name(), None, AgentErrorKind::Hints(e)))
}
