//! The lllm agent runtime: agents that own dialogs and send each dialog's identity to the server as
//! inference hints.
//!
//! An [`Agent`] owns named dialogs and answers them with a model through an [`Invoker`]. Every model
//! call carries the dialog's identity as [`InferenceHints`] — session id = the dialog's id, parent = the
//! dialog it was forked from — shaped for the server's [`Profile`] (Dynamo, vLLM, SGLang, OpenAI), so a
//! KV-cache-aware router can keep a reasoning chain on the worker that already holds its prefix.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use lllm_runtime::{Agent, InferenceHints, ModelArgs, OpenAiInvoker, Profile};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder()
//!     .name("planner")
//!     .system_prompt("You plan.")
//!     .model("hosted_vllm/Qwen/Qwen2.5-7B-Instruct")
//!     .invoker(Arc::new(OpenAiInvoker::new()))
//!     .model_args(ModelArgs::new().api_base("http://127.0.0.1:8000/v1").max_tokens(512))
//!     .inference_hints(InferenceHints::builder().profile(Profile::Dynamo).priority(5).build()?)
//!     .build()?;
//! agent.open("main")?;
//! agent.receive("Draft a plan.")?;
//! let plan = agent.respond("main").await?;           // session = main
//! agent.fork("main", "retry")?;                      // shares main's prefix
//! let critique = agent
//!     .respond_to("retry")                           // session = retry, parent = main
//!     .message("Find its weakest point.")
//!     .await?;
//! # let _ = (plan, critique);
//! # Ok(()) }
//! ```
//!
//! # The main types, by role
//!
//! - **Agents and dialogs**: [`Agent`] (built with [`AgentBuilder`], or from a tactic file's
//!   [`AgentSpec`] with [`AgentBuilder::from_spec`]); a respond with options is a [`Respond`], a typed
//!   one a [`RespondStructured`]; progress arrives as [`StreamEvent`]s. Dialogs are [`Dialog`]s of
//!   [`Message`]s; [`DialogTree`] saves and restores them. Failures are [`AgentError`]s.
//! - **Hints**: [`InferenceHints`] per agent, for a [`Profile`]; [`ForkSession`] decides what a fork
//!   sends.
//! - **Model calls**: the [`Invoker`] trait and its OpenAI-compatible [`OpenAiInvoker`];
//!   [`DryRunInvoker`] shows each [`PreparedRequest`] without sending it. An agent wraps its invoker in
//!   retries ([`RetryPolicy`]), a per-request timeout and tracing, so an invoker makes one attempt.
//! - **Tools**: the [`Tool`] trait, [`tool_fn`] for async closures, [`CommandTool`] for programs,
//!   [`McpServer`] for the tools of MCP servers ([`McpServers`] for a tactic's); a [`Confirm`]
//!   decides about calls that need the user's approval.
//! - **Tactics**: a [`Tactic`] runs a [`Team`] of agents; [`TacticRegistry`] names them for
//!   `tactic_type:`; the built-ins are [`ChatTactic`] and [`StepsTactic`]. Tactic files load with
//!   [`load_tactic`].
//! - **Runs**: an [`Engine`] prepares a tactic once ([`PreparedTactic`]) and runs [`RunPlan`]s on it:
//!   to the end ([`Engine::run`]), in the background with a [`RunHandle`] (events, cancel, pending
//!   confirmations), as batches ([`Engine::batch`]) or resumed from a journal ([`plan_resume`]);
//!   [`Host`] owns the Tokio runtime of a blocking program.
//! - **Traces**: [`TraceRecorder`] writes content-free traces of runs, in lllm's format or Dynamo's
//!   agentic one ([`TraceFormat`]); [`replay()`] sends one again, honouring an agentic trace's
//!   dependencies.
//! - **Observability**: [`telemetry`] makes OpenTelemetry GenAI spans (`invoke_workflow`,
//!   `invoke_agent`, `chat`, `execute_tool`) as `tracing` spans; the `otel` feature adds fork links.
//! - **Testing** (feature `testing`): a scripted invoker and a recording stub server in [`testing`].

mod agent;
mod budget;
mod conversation;
mod endpoints;
mod engine;
mod events;
mod halt;
mod invoker;
mod journal;
mod layers;
mod mcp;
mod pause;
#[cfg(feature = "queue")]
pub mod queue;
mod replay;
mod retry;
mod run_context;
#[cfg(feature = "serve")]
pub mod serve;
mod tactic;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
mod tokenizer;
mod tools;
mod trace;

pub use agent::{
    Agent, AgentBuilder, AgentError, AgentErrorKind, ContextStats, DemandSource, EventSink,
    PromptArg, Respond, RespondStructured, StreamEvent, Summarizer, SUMMARY_HEADING,
    SUMMARY_INSTRUCTION,
};
pub use budget::RunBudget;
pub use conversation::Conversation;
pub use endpoints::{CallStats, Endpoints};
pub use engine::{
    plan_resume, read_items, tactic_name, AgentSummary, BatchError, BatchItem, BatchOutput,
    BatchPlan, BatchProgress, BatchReport, BeforeEnd, ChatSession, Engine, Host, ItemOutcome,
    JournalPlan, PreparedTactic, Resumable, RunError, RunHandle, RunOutput, RunPlan, StreamedEvent,
    DEFAULT_BATCH_CONCURRENCY,
};
pub use engine::{FileError, RunFiles, Shard, ShardError, MAX_OUTPUT_LINE_BYTES, MAX_SHARDS};
pub use events::{ModelCall, RunEvent, RunObserver, RunStatus, StepOutcome};
pub use halt::halt;
pub use invoker::{
    ChatRequest, ChatResponse, Delta, DryRunInvoker, InvokeError, Invoker, OpenAiInvoker,
    PreparedRequest, RequestNotes, ResponseLimits, ServerDefaults, Urgency, WaitLimit,
};
pub use journal::{
    content_hash, Journal, JournalError, JournalTap, LineSink, PendingCall, RunStart,
    JOURNAL_VERSION,
};
pub use lllm_core::parse_tactic;
pub use lllm_core::{full_message, is_variable_name, tactic_schema, CHAT_TACTIC, STEPS_TACTIC};
pub use lllm_core::{
    load_tactic, AgentSpec, CommandToolConfig, ConfigError, Demand, Dialog, DialogId, DialogTree,
    ForkSession, HintsError, InferenceHints, InferenceHintsBuilder, Message, MessageLog, ModelArgs,
    ModelArgsError, NamedDialog, Priority, Profile, Prompt, PromptError, PromptVars, RequestFields,
    Role, RunClass, Secret, TacticSpec, ToolCall, ToolSpec, Usage,
};
pub use lllm_core::{ConfirmTools, McpServerConfig, McpTransport, McpUse, ToolFilter};
pub use lllm_core::{ContextError, ContextPolicy, SessionOnCompaction, Window};
pub use lllm_core::{EndpointArgs, Fallback, MAX_FALLBACKS, MAX_IN_FLIGHT};
pub use lllm_core::{
    Limit, LimitError, LimitSetting, RunLimits, SecondsRange, ValueError, Written,
};
pub use mcp::{McpError, McpServer, McpServerBuilder, McpServers};
pub use replay::{
    check_api_base, check_speed, limits as replay_limits, replay, replay_trace, ReplayError,
    ReplayOptions, ReplayReport, Replayed, Trace,
};
pub use retry::RetryPolicy;
pub use run_context::RunContext;
pub use tactic::{
    preflight, BoxError, ChatTactic, Progress, ProgressEvent, StepsTactic, Tactic, TacticError,
    TacticRegistry, Team, TeamBuilder, ITEM_ID_PLACEHOLDER,
};
pub use tokenizer::{Tokenizer, TokenizerError};
pub use tools::{
    contain_tool_processes, kill_tool_processes, tool_fn, ApproveAll, CommandTool, Confirm,
    ConfirmRequest, Decision, Decisions, DeclineAll, Tool, ToolError, ToolOutput, ToolsError,
};
pub use trace::{TraceFormat, TraceRecorder};

/// Helpers the `lllm` command shares with the runtime (redaction of secrets in what it prints); not
/// a stable API.
#[doc(hidden)]
pub mod internal {
    pub use lllm_core::check_http_url;
    pub use lllm_core::internal::{redact_url, url_credentials, Secrets};
}

/// The Rust examples of the README and the guides, compiled and run by `cargo test` so that they
/// cannot drift from the API.
#[cfg(doctest)]
mod documentation {
    #[doc = include_str!("../../README.md")]
    struct Readme;
    #[doc = include_str!("../../docs/tools.md")]
    struct Tools;
    #[doc = include_str!("../../docs/mcp.md")]
    struct Mcp;
    #[doc = include_str!("../../docs/durable.md")]
    struct Durable;
    #[doc = include_str!("../../docs/engine.md")]
    struct EngineGuide;
    #[doc = include_str!("../../docs/context.md")]
    struct Context;
    #[doc = include_str!("../../docs/fallback.md")]
    struct Fallback;
    #[doc = include_str!("../../docs/serve.md")]
    struct Serve;
}
