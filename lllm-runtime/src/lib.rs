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
//! # Where things live
//!
//! The root holds what a first program meets; each namespace holds the rest of one concern and
//! renders its guide from `docs/`.
//!
//! - **Agents and dialogs**: [`Agent`] (built with [`AgentBuilder`]), its [`Dialog`]s of
//!   [`Message`]s, its [`AgentError`]s; [`agent`] has responds with options, streams, retries and
//!   context compaction.
//! - **Hints**: [`InferenceHints`] for a [`Profile`]; [`hints`] has the rest (forks, priorities,
//!   the caller's conversation).
//! - **Model calls**: the [`Invoker`] trait and its OpenAI-compatible [`OpenAiInvoker`], taking a
//!   [`ChatRequest`] and giving a [`ChatResponse`] or an [`InvokeError`]; [`invoker`] has the dry
//!   run, fallback endpoints and admission.
//! - **Tools**: the [`Tool`] trait and [`tool_fn`] for async closures; [`tools`] has command tools
//!   and confirmation, [`mcp`] the tools of MCP servers.
//! - **Tactics**: a [`Tactic`] runs a team of agents; [`TacticRegistry`] names them for
//!   `tactic_type:`; [`load_tactic`] reads a file into a [`TacticSpec`]. [`config`] has the file
//!   format's types and limits, [`tactic`] the built-in tactics and the team.
//! - **Runs**: an [`Engine`] prepares a tactic once and runs [`RunPlan`]s on it,
//!   to the end ([`RunOutput`], [`RunError`]) or in the background ([`RunHandle`]); the agents of
//!   one run share a [`RunContext`]; [`Host`] owns the Tokio runtime of a blocking program;
//!   [`engine`] has the rest of a run's parts (resuming, files, chat sessions). [`events`] has what a run reports, [`journal`] durable runs and resuming, [`batch`] batches
//!   and shards, [`queue`] a batch on NATS JetStream (feature `queue`), [`serve`] tactics as models
//!   over HTTP (feature `serve`).
//! - **Evals**: [`eval`] runs a tactic's cases as trials and checks them (`lllm eval`).
//! - **Traces**: [`trace`] writes content-free traces of runs; [`replay`] sends one again.
//! - **Observability**: [`telemetry`] makes OpenTelemetry GenAI spans as `tracing` spans.
//! - **Testing** (feature `testing`): a scripted invoker and a recording stub server in [`testing`].

pub mod agent;
pub mod batch;
mod budget;
pub mod config;
mod conversation;
mod endpoints;
pub mod engine;
pub mod eval;
pub mod events;
mod halt;
pub mod hints;
pub mod invoker;
pub mod journal;
mod layers;
pub mod mcp;
mod pause;
#[cfg(feature = "queue")]
pub mod queue;
pub mod replay;
mod retry;
mod run_context;
#[cfg(feature = "serve")]
pub mod serve;
pub mod tactic;
mod tasks;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
mod tokenizer;
pub mod tools;
pub mod trace;

// The names a user meets first. Everything else lives in the namespace of its guide; a new name
// goes there too (`tests/it/api.rs` keeps this list at most 45 names, modules included).
pub use agent::{Agent, AgentBuilder, AgentError};
pub use engine::{Engine, Host, RunError, RunHandle, RunOutput, RunPlan};
pub use invoker::{ChatRequest, ChatResponse, InvokeError, Invoker, OpenAiInvoker};
pub use lllm_core::TacticSpec;
pub use lllm_core::{load_tactic, Dialog, DialogId, InferenceHints, Message, ModelArgs, Profile};
pub use run_context::RunContext;
pub use tactic::{Tactic, TacticRegistry};
pub use tools::{tool_fn, Tool};

/// The Rust examples of the README, compiled and run by `cargo test` so that they cannot drift from
/// the API (the guides in `docs/` are the namespaces' documentation, whose examples run too).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct Readme;
