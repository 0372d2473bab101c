//! Building agents: from Rust with [`AgentBuilder`], or from a tactic file's [`AgentSpec`].

use std::sync::{Arc, Mutex};

use lllm_core::{
    AgentSpec, CarriedHints, ContextPolicy, InferenceHints, ModelArgs, Prompt, RunClass,
    ToolFilter, Usage,
};
use serde_json::Value;

use super::compact::Summarizer;
use super::{Agent, AgentError, AgentErrorKind, DialogTable, OutputSchema};
use crate::budget::RunBudget;
use crate::conversation::Conversation;
use crate::endpoints::CallCounter;
use crate::events::RunObserver;
use crate::invoker::Invoker;
use crate::journal::Journal;
use crate::layers;
use crate::mcp::McpServer;
use crate::retry::RetryPolicy;
use crate::run_context::RunContext;
use crate::telemetry::AgentFacts;
use crate::tools::skills::SkillSet;
use crate::tools::{CommandTool, Confirm, Tool, Toolbox};
use crate::trace::TraceRecorder;

/// Builds an [`Agent`]. Setters never fail; [`build`](Self::build) reports what is missing or invalid.
#[derive(Debug, Default)]
pub struct AgentBuilder {
    name: Option<String>,
    system_prompt: Option<Prompt>,
    model: Option<String>,
    invoker: Option<Arc<dyn Invoker>>,
    model_args: ModelArgs,
    inference_hints: Option<InferenceHints>,
    retry: Option<RetryPolicy>,
    max_call_retries: Option<u32>,
    tools: Vec<Arc<dyn Tool>>,
    /// MCP servers whose tools the agent takes, with the filter.
    mcp: Vec<(McpServer, ToolFilter)>,
    /// The sets among `tools` that may change (a tactic's MCP servers' tools).
    changing: Vec<Arc<dyn crate::tools::ChangingTools>>,
    /// What the agent's run shares with its other agents.
    run: RunContext,
    output_schema: Option<Value>,
    /// The output schema as the loader compiled it, while `output_schema` is the spec's.
    compiled_output_schema: Option<lllm_core::Schema>,
    max_tool_rounds: Option<u32>,
    max_parallel_tools: Option<u32>,
    max_answer_retries: Option<u32>,
    context: Option<ContextPolicy>,
    summarizer: Option<Arc<dyn Summarizer>>,
    /// What the tactic loader already checked and has not been replaced since: checked once, not
    /// again here.
    checked: Checked,
    /// The subagents (`subagents:`) and how many run in the background at once.
    subagents: Vec<lllm_core::SubagentSpec>,
    max_background_tasks: u32,
    /// What builds the agents that answer the tasks (the team's).
    roster: Option<Arc<super::Roster>>,
    /// The skills (`skills:`): their index ends the system prompt, and the model loads them with
    /// `load_skill`.
    skills: SkillSet,
}

/// Settings that came from an [`AgentSpec`] unchanged (the loader validated them).
#[derive(Debug, Default, Clone, Copy)]
struct Checked {
    system_prompt: bool,
    model_args: bool,
}

impl Checked {
    /// Validates what the loader did not.
    fn check(self, model_args: &ModelArgs, system_prompt: &Prompt) -> Result<(), AgentErrorKind> {
        if !self.model_args {
            model_args.validate().map_err(AgentErrorKind::ModelArgs)?;
        }
        if !self.system_prompt {
            system_prompt.validate().map_err(AgentErrorKind::Prompt)?;
        }
        Ok(())
    }
}

/// The agent's hints as each of its fallback endpoints carries them (none without hints).
fn carried_by_fallbacks(hints: Option<&InferenceHints>, args: &ModelArgs) -> Vec<CarriedHints> {
    hints.map_or_else(Vec::new, |h| h.carried_by(&args.fallback))
}

impl AgentBuilder {
    /// The agent's name (required).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The system prompt template (required); a `&str` is an inline template.
    pub fn system_prompt(mut self, prompt: impl Into<PromptArg>) -> Self {
        self.system_prompt = Some(prompt.into().0);
        self.checked.system_prompt = false;
        self
    }

    /// The model, in `provider/model` form or as the server names it (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// What sends the model calls (required).
    pub fn invoker(mut self, invoker: Arc<dyn Invoker>) -> Self {
        self.invoker = Some(invoker);
        self
    }

    /// Model arguments.
    pub fn model_args(mut self, args: ModelArgs) -> Self {
        self.model_args = args;
        self.checked.model_args = false;
        self
    }

    /// Inference hints (off unless set).
    pub fn inference_hints(mut self, hints: InferenceHints) -> Self {
        self.inference_hints = Some(hints);
        self
    }

    /// Retries of a failed model call, on top of the first try (default 3; `max_call_retries`, alias `max_llm_recall`, in
    /// tactic files). Only failures worth retrying are retried: see [`RetryPolicy`].
    pub fn max_call_retries(mut self, retries: u32) -> Self {
        self.max_call_retries = Some(retries);
        self
    }

    /// Adds a tool the model may call.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds tools the model may call.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Offers every tool of a started MCP server (shared: the server keeps running for the other
    /// agents that hold it).
    pub fn mcp(self, server: &McpServer) -> Self {
        self.mcp_filtered(server, ToolFilter::All)
    }

    /// Offers the tools of a started MCP server that `filter` takes. A tool the filter names that
    /// the server does not have is an error of [`build`](Self::build).
    pub fn mcp_filtered(mut self, server: &McpServer, filter: ToolFilter) -> Self {
        self.mcp.push((server.clone(), filter));
        self
    }

    /// Says which of the tools given with [`tools`](Self::tools) may change between requests (an
    /// MCP server's, listed again after it says its list changed).
    pub(crate) fn changing_tools(
        mut self,
        sets: impl IntoIterator<Item = Arc<dyn crate::tools::ChangingTools>>,
    ) -> Self {
        self.changing.extend(sets);
        self
    }

    /// The run the agent belongs to, shared with its other agents: its budget, journal, trace,
    /// confirmations, observer, conversation, class and pause (see [`RunContext`]). Replaces what
    /// the setters of one of them ([`journal`](Self::journal), [`trace`](Self::trace), ...) set
    /// before.
    pub fn run_context(mut self, run: RunContext) -> Self {
        self.run = run;
        self
    }

    /// Decides about calls of tools that need confirmation (`confirm:` in tactic files); without it
    /// such calls are declined and the model is told so. Shorthand for [`RunContext::confirm`].
    pub fn confirm(mut self, confirm: Arc<dyn Confirm>) -> Self {
        self.run = self.run.confirm(confirm);
        self
    }

    /// Journals the agent's dialogs, answers and tool calls (shared by the agents of one run), and
    /// takes them from the journal when it already has them: see [`Journal`]. Shorthand for
    /// [`RunContext::journal`].
    pub fn journal(mut self, journal: Arc<Journal>) -> Self {
        self.run = self.run.journal(journal);
        self
    }

    /// Counts the agent's requests, tokens and tool calls against a run's limits (share one budget
    /// between the agents of a run). Shorthand for [`RunContext::budget`].
    pub fn budget(mut self, budget: Arc<RunBudget>) -> Self {
        self.run = self.run.budget(budget);
        self
    }

    /// Every answer must be JSON matching this schema (re-asked up to
    /// [`max_answer_retries`](Self::max_answer_retries) times).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self.compiled_output_schema = None;
        self
    }

    /// Tool calls of one answer run at the same time (default 16, 1 to 64; `max_parallel_tools` in
    /// tactic files). 1 runs them one after the other; a number out of the range fails
    /// [`build`](Self::build), as it fails the tactic file.
    pub fn max_parallel_tools(mut self, calls: u32) -> Self {
        self.max_parallel_tools = Some(calls);
        self
    }

    /// Tool rounds allowed in one respond before a final answer without tools (default 5;
    /// `max_tool_rounds`, alias `max_interrupt_steps`, in tactic files).
    pub fn max_tool_rounds(mut self, rounds: u32) -> Self {
        self.max_tool_rounds = Some(rounds);
        self
    }

    /// Times an answer that fails to parse or match the output schema is shown to the model with the
    /// problem and asked again (default 3; `max_answer_retries`, alias `max_exception_retry`, in tactic files).
    pub fn max_answer_retries(mut self, retries: u32) -> Self {
        self.max_answer_retries = Some(retries);
        self
    }

    /// How the agent's requests rank under `priority: auto`: [`RunClass::Interactive`] (the default)
    /// above every [`RunClass::Batch`] request. Shorthand for [`RunContext::class`].
    pub fn run_class(mut self, class: RunClass) -> Self {
        self.run = self.run.class(class);
        self
    }

    /// Records every model call of the agent in a content-free trace. Shorthand for
    /// [`RunContext::trace`].
    pub fn trace(mut self, recorder: Arc<TraceRecorder>) -> Self {
        self.run = self.run.trace(recorder);
        self
    }

    /// Shows `observer` the agent's tool calls and their results, and the text of its answers when a
    /// respond streams (see [`RunEvent`](crate::events::RunEvent)). Shorthand for [`RunContext::observer`].
    pub fn observer(mut self, observer: RunObserver) -> Self {
        self.run = self.run.observer(observer);
        self
    }

    /// The agent answers in a caller's conversation: its root dialogs are named after it (see
    /// [`Conversation`]), shared with the run's other agents. Shorthand for
    /// [`RunContext::conversation`].
    pub fn conversation(mut self, conversation: Arc<Conversation>) -> Self {
        self.run = self.run.conversation(conversation);
        self
    }

    /// Compacts the agent's dialogs when they near the model's window (see `docs/context.md`).
    pub fn context(mut self, policy: ContextPolicy) -> Self {
        self.context = Some(policy);
        self
    }

    /// Writes compaction summaries with `summarizer` instead of asking the agent's model.
    pub fn summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// Full retry settings; [`max_call_retries`](Self::max_call_retries), when also set, overrides
    /// its count.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The agent's skills: their index is appended to the system prompt (fixed for the run), and
    /// the model is offered `load_skill` and `read_skill_file` (see the [skills
    /// guide](crate::tools::skills)). Replaces skills set before; an empty set offers nothing.
    pub fn skills(mut self, skills: SkillSet) -> Self {
        self.skills = skills;
        self
    }

    /// The agents of the run that answer this agent's tasks (the team hands its roster down).
    pub(crate) fn roster(mut self, roster: Arc<super::Roster>) -> Self {
        self.roster = Some(roster);
        self
    }

    /// Validates and builds the agent.
    pub fn build(self) -> Result<Agent, AgentError> {
        let name = self.name.clone().filter(|n| !n.trim().is_empty());
        let fail = |kind| AgentError::new(name.as_deref().unwrap_or_default(), None, kind);
        self.build_named(name.as_deref()).map_err(fail)
    }

    fn build_named(self, name: Option<&str>) -> Result<Agent, AgentErrorKind> {
        let missing = |field| AgentErrorKind::Missing { field };
        let name = name.ok_or(missing("a name"))?.to_owned();
        let system_prompt = self.system_prompt.ok_or(missing("a system prompt"))?;
        let model = self
            .model
            .filter(|m| !m.trim().is_empty())
            .ok_or(missing("a model"))?;
        let invoker = self.invoker.ok_or(missing("an invoker"))?;
        self.checked.check(&self.model_args, &system_prompt)?;
        let max_parallel_tools = parallel_tools(self.max_parallel_tools)?;
        let mut tools = self.tools;
        let skills = (!self.skills.is_empty()).then(|| Arc::new(self.skills));
        if let Some(skills) = &skills {
            tools.extend(crate::tools::skills::skill_tools(skills));
        }
        let subagents = (!self.subagents.is_empty()).then(|| {
            tools.extend(crate::tasks::tools::task_tools(&self.subagents));
            super::roster::Subagents::new(
                self.subagents,
                self.max_background_tasks.max(1),
                self.roster.unwrap_or_default(),
            )
        });
        let toolbox = toolbox(tools, &self.mcp, self.changing)?;
        let output_schema = output_schema(&name, self.compiled_output_schema, self.output_schema)?;
        let retry = retry_with(self.retry, self.max_call_retries);
        // Under `context: {window: auto}`, what asks the server for the window.
        let window_source = invoker.clone();
        let calls = Arc::new(CallCounter::default());
        let facts = AgentFacts {
            agent: name.clone(),
            model: model.clone(),
            profile: self.inference_hints.as_ref().map(|h| h.profile()),
        };
        Ok(Agent {
            invoker: layers::stack(invoker, facts, retry, calls.clone(), &self.run),
            calls,
            retry,
            tool_calls: crate::tools::calls::pipeline(&self.run, skills.clone()),
            skills,
            run: self.run,
            name,
            system_prompt,
            model,
            // Once, here: each request only writes them for its dialog.
            fallback_hints: carried_by_fallbacks(self.inference_hints.as_ref(), &self.model_args),
            model_args: Arc::new(self.model_args),
            hints: self.inference_hints,
            toolbox: std::sync::RwLock::new(Arc::new(toolbox)),
            compaction: self.context.map(|policy| {
                super::compact::Compaction::new(policy, self.summarizer, window_source)
            }),
            output_schema,
            max_tool_rounds: self
                .max_tool_rounds
                .unwrap_or(lllm_core::DEFAULT_MAX_TOOL_ROUNDS),
            max_answer_retries: self
                .max_answer_retries
                .unwrap_or(lllm_core::DEFAULT_MAX_ANSWER_RETRIES),
            max_parallel_tools,
            usage: Mutex::new(Usage::default()),
            table: Mutex::new(DialogTable::default()),
            subagents,
        })
    }

    /// A builder holding what a tactic file says of an agent; add an invoker (and a trace, more
    /// tools) and build.
    pub fn from_spec(spec: &AgentSpec) -> AgentBuilder {
        // The loader checked each tool; an `AgentSpec` can only come from it.
        let tools = spec
            .tools()
            .iter()
            .map(|config| Arc::new(CommandTool::checked(config.clone())) as Arc<dyn Tool>);
        let mut builder = Agent::builder()
            .name(spec.name())
            .system_prompt(spec.system_prompt().clone())
            .model(spec.model())
            .model_args(spec.model_args().clone())
            .max_call_retries(spec.max_call_retries())
            .max_tool_rounds(spec.max_tool_rounds())
            .max_answer_retries(spec.max_answer_retries())
            .max_parallel_tools(spec.max_parallel_tools())
            .tools(tools);
        builder.output_schema = spec.output_schema().map(|s| s.value().clone());
        builder.compiled_output_schema = spec.output_schema().cloned();
        builder.inference_hints = spec.inference_hints().cloned();
        builder.context = spec.context().copied();
        builder.subagents = spec.subagents().to_vec();
        builder.max_background_tasks = spec.max_background_tasks();
        builder.skills = spec.skills().clone();
        builder.checked = Checked {
            system_prompt: true,
            model_args: true,
        };
        builder
    }
}

/// A system prompt argument: a [`Prompt`], or text taken as an inline template.
#[derive(Debug)]
pub struct PromptArg(Prompt);

impl From<Prompt> for PromptArg {
    fn from(prompt: Prompt) -> Self {
        PromptArg(prompt)
    }
}

impl From<&str> for PromptArg {
    fn from(text: &str) -> Self {
        PromptArg(Prompt::inline(text))
    }
}

impl From<String> for PromptArg {
    fn from(text: String) -> Self {
        PromptArg(Prompt::inline(text))
    }
}

impl Agent {
    /// A builder.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }
}

/// The agent's own tools and those of its MCP servers, checked together (no two of one name).
fn toolbox(
    mut tools: Vec<Arc<dyn Tool>>,
    mcp: &[(McpServer, ToolFilter)],
    mut changing: Vec<Arc<dyn crate::tools::ChangingTools>>,
) -> Result<Toolbox, AgentErrorKind> {
    for (server, filter) in mcp {
        tools.extend(
            server
                .tools(filter)
                .map_err(|e| AgentErrorKind::Mcp(Box::new(e)))?,
        );
        changing.push(server.changing_tools(filter.clone()));
    }
    Toolbox::changing(tools, changing).map_err(AgentErrorKind::Tools)
}

/// The schema structured answers are checked against: the loader's compiled one, else compiled
/// here.
fn output_schema(
    agent: &str,
    compiled: Option<lllm_core::Schema>,
    schema: Option<Value>,
) -> Result<Option<OutputSchema>, AgentErrorKind> {
    let name = format!("{agent}_answer");
    match (compiled, schema) {
        (Some(compiled), _) => Ok(Some(OutputSchema::compiled(&name, compiled))),
        (None, schema) => schema
            .map(|schema| OutputSchema::new(&name, &schema))
            .transpose(),
    }
}

/// `max_parallel_tools` by the tactic file's rule: 1 to [`MAX_PARALLEL_TOOLS`](lllm_core::MAX_PARALLEL_TOOLS),
/// [`DEFAULT_MAX_PARALLEL_TOOLS`](lllm_core::DEFAULT_MAX_PARALLEL_TOOLS) when not set.
fn parallel_tools(calls: Option<u32>) -> Result<usize, AgentErrorKind> {
    use lllm_core::{DEFAULT_MAX_PARALLEL_TOOLS, MAX_PARALLEL_TOOLS};
    match calls.unwrap_or(DEFAULT_MAX_PARALLEL_TOOLS) {
        n @ 1..=MAX_PARALLEL_TOOLS => Ok(n as usize),
        n => Err(AgentErrorKind::Setting {
            setting: "max_parallel_tools",
            problem: Box::new(lllm_core::ValueError::Number {
                allowed: format!("a whole number from 1 to {MAX_PARALLEL_TOOLS}"),
                written: format!("`{n}`"),
            }),
        }),
    }
}

/// The retry policy (the default when none was given), with `max_call_retries` over it when set.
fn retry_with(policy: Option<RetryPolicy>, max_call_retries: Option<u32>) -> RetryPolicy {
    let mut retry = policy.unwrap_or_default();
    if let Some(n) = max_call_retries {
        retry.max_call_retries = n;
    }
    retry
}
