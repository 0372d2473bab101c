//! The lllm agent runtime.
//!
//! An [`Agent`] owns named dialogs and answers them with a model through an [`Invoker`]. Every model call
//! carries the dialog's identity as [`InferenceHints`] — session id = the dialog's id, parent = the
//! dialog it was forked from — shaped for the server's [`Profile`], so a KV-cache-aware router can keep a
//! reasoning chain on the worker that already holds its prefix.
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
//! let plan = agent.respond().await?;          // session = main
//! agent.fork("main", "retry")?;               // shares main's prefix
//! agent.receive("Find its weakest point.")?;
//! let critique = agent.respond().await?;      // session = retry, parent = main
//! # let _ = (plan, critique);
//! # Ok(()) }
//! ```

pub mod agent;
pub mod invoker;
pub mod replay;
pub mod retry;
pub mod tactic;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tools;
pub mod trace;

pub use agent::{Agent, AgentBuilder, AgentError, EventSink, RespondOptions, StreamEvent};
pub use invoker::{
    build_invoker, ChatRequest, ChatResponse, Delta, DryRunInvoker, InvokeError, Invoker,
    InvokerConfig, OpenAiInvoker, PreparedRequest, ServerDefaults,
};
pub use lllm_core::{
    config, load_tactic, report, AgentSpec, ConfigError, Dialog, DialogId, DialogTree, ForkSession,
    HintsError, InferenceHints, InferenceHintsBuilder, Message, ModelArgs, Profile, Prompt,
    PromptError, PromptVars, RequestFields, Role, TacticSpec, ToolCall, Usage,
};
pub use retry::RetryPolicy;
pub use tactic::{Tactic, TacticError, TacticRegistry, Team};
pub use tools::{tool_fn, Tool, ToolError, ToolOutput};

/// The README's Rust examples, compiled as doctests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
