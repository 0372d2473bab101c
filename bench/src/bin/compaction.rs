//! What context compaction saves on a real KV-aware router: agents run a long tool-heavy script
//! (every turn a tool call and its result) against NVIDIA Dynamo at the same time, in one of three
//! legs, and the engines' own counts say how many prompt tokens were computed (uncached) and how
//! many were served from the prefix cache, per turn:
//!   none   no compaction: the dialogs grow for the whole run
//!   ride   `context:` compaction as lllm does it: the summary request is the previous request plus
//!          the answer and one instruction, same tools and session
//!   fresh  the same compaction points, the summary asked for in a fresh prompt (a summariser agent
//!          of its own, the transcript as one message), as frameworks commonly do
//!
//! Dynamo's mocker answers without words or tool calls, so a wrapper plays the model's part in the
//! dialog (a tool call for every turn, a short answer after its result, a summary when asked); every
//! request still goes to Dynamo, and the token counts are Dynamo's.
//!
//! Env: LLLM_DYNAMO_URL, LLLM_COMPACTION_LEG (none | ride | fresh), LLLM_COMPACTION_TURNS (default
//! 200), LLLM_COMPACTION_AGENTS (default 4), LLLM_COMPACTION_WINDOW (tokens, default 8192).
//! Prints one JSON line of figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use lllm_runtime::agent::{RetryPolicy, Role, Summarizer, SUMMARY_INSTRUCTION};
use lllm_runtime::config::{ContextPolicy, SessionOnCompaction, Window};
use lllm_runtime::invoker::{Delta, ServerDefaults};
use lllm_runtime::tactic::BoxError;
use lllm_runtime::tools::ToolCall;
use lllm_runtime::{
    tool_fn, Agent, ChatRequest, ChatResponse, InferenceHints, InvokeError, Invoker, Message,
    ModelArgs, OpenAiInvoker, Profile,
};
use serde_json::json;

const SEED: u64 = 20_261_205;
/// Where the fresh-prompt summariser's one message starts (so the model's stand-in knows it).
const FRESH_PREFIX: &str = "Summarise this conversation for whoever continues it:";
/// Turns per row of the per-turn table.
const BUCKET: usize = 20;

tokio::task_local! {
    /// The agent and turn a request is sent for (set around each `respond`).
    static TURN: (usize, usize);
}

/// One request as Dynamo counted it.
#[derive(Debug, Clone, Copy)]
struct Call {
    turn: usize,
    summary: bool,
    prompt_tokens: u64,
    cached_tokens: u64,
}

/// Sends every request to Dynamo, counts it, and plays the model's part in the dialog.
#[derive(Debug)]
struct Model {
    inner: OpenAiInvoker,
    calls: Mutex<Vec<Call>>,
    errors: Mutex<u64>,
    summary_words: String,
}

impl Model {
    /// The answer the script gives in place of the mocker's empty one.
    fn script(&self, request: &ChatRequest, message: &mut Message) -> bool {
        let last = request.messages.last();
        let asked = last
            .filter(|m| m.role == Role::User)
            .and_then(|m| m.content.as_deref());
        let (agent, turn) = TURN.try_with(|t| *t).unwrap_or((0, 0));
        message.tool_calls.clear();
        match asked {
            Some(text) if text == SUMMARY_INSTRUCTION || text.starts_with(FRESH_PREFIX) => {
                message.content = Some(self.summary_words.clone());
                true
            }
            Some(_) => {
                message.content = None;
                message.tool_calls.push(ToolCall {
                    id: format!("call_{agent}_{turn}"),
                    name: "read_shard".into(),
                    arguments: json!({"shard": turn}).to_string(),
                });
                message.finish_reason = Some("tool_calls".into());
                false
            }
            None => {
                message.content = Some(format!("Shard {turn} read; nothing blocks the next step."));
                false
            }
        }
    }
}

#[async_trait]
impl Invoker for Model {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let mut response = match self.inner.invoke(request).await {
            Ok(response) => response,
            Err(error) => {
                *self.errors.lock().expect("lock") += 1;
                return Err(error);
            }
        };
        let summary = self.script(request, &mut response.message);
        let usage = response.message.usage.unwrap_or_default();
        self.calls.lock().expect("lock").push(Call {
            turn: TURN.try_with(|t| t.1).unwrap_or(0),
            summary,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens.unwrap_or(0),
        });
        Ok(response)
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        _on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        self.invoke(request).await
    }
}

/// The summary in a fresh prompt: a summariser agent of its own, the transcript as one message.
#[derive(Debug)]
struct FreshSummary {
    agent: Agent,
    asked: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl Summarizer for FreshSummary {
    async fn summarize(&self, messages: &[Message]) -> Result<String, BoxError> {
        let transcript: Vec<String> = messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| {
                let calls: Vec<String> = m.tool_calls.iter().map(|c| c.arguments.clone()).collect();
                format!(
                    "{}: {}{}",
                    m.role.as_str(),
                    m.content.as_deref().unwrap_or(""),
                    calls.join(" ")
                )
            })
            .collect();
        let n = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let alias = format!("summary{n}");
        self.agent.open(&alias)?;
        self.agent
            .receive_in(&alias, format!("{FRESH_PREFIX}\n{}", transcript.join("\n")))?;
        let answer = self.agent.respond(&alias).await?;
        Ok(answer.content.unwrap_or_default())
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Shard {
    shard: u64,
}

/// What the run is: the leg, its size, and the server.
struct Setup {
    leg: String,
    turns: usize,
    agents: usize,
    window: u64,
    url: String,
}

fn setup() -> Setup {
    Setup {
        leg: std::env::var("LLLM_COMPACTION_LEG").unwrap_or_else(|_| "ride".into()),
        turns: lllm_bench::env_number("LLLM_COMPACTION_TURNS", 200) as usize,
        agents: lllm_bench::env_number("LLLM_COMPACTION_AGENTS", 4) as usize,
        window: lllm_bench::env_number("LLLM_COMPACTION_WINDOW", 8192),
        url: std::env::var("LLLM_DYNAMO_URL").expect("LLLM_DYNAMO_URL"),
    }
}

fn hints() -> InferenceHints {
    InferenceHints::builder()
        .profile(Profile::Dynamo)
        .build()
        .expect("hints")
}

/// One agent of the run: a long system prompt, one tool whose results are a few hundred words of
/// log, and the leg's compaction.
fn agent(setup: &Setup, model: Arc<Model>, index: usize, system: String) -> Agent {
    let mut builder = Agent::builder()
        .name(format!("agent{index}"))
        .system_prompt(system)
        .model("tiny")
        .invoker(model.clone())
        .model_args(ModelArgs::new().api_base(setup.url.clone()).max_tokens(8))
        .inference_hints(hints())
        .retry_policy(RetryPolicy::with_max_call_retries(1))
        .tool(tool_fn(
            "read_shard",
            "Reads one shard's log",
            move |a: Shard| {
                let mut rng = fastrand::Rng::with_seed(SEED ^ (index as u64) << 20 ^ a.shard);
                let words = rng.usize(150..=250);
                async move {
                    Ok::<_, String>(format!(
                        "shard {}: {}",
                        a.shard,
                        lllm_bench::random_words(&mut rng, words)
                    ))
                }
            },
        ));
    if setup.leg != "none" {
        let policy = ContextPolicy::with(
            Window::Tokens(u32::try_from(setup.window).expect("LLLM_COMPACTION_WINDOW fits u32")),
            0.8,
            6,
            SessionOnCompaction::Keep,
        )
        .expect("policy");
        builder = builder.context(policy);
    }
    if setup.leg == "fresh" {
        let summariser = Agent::builder()
            .name(format!("summariser{index}"))
            .system_prompt("You write short, faithful summaries of agent conversations.")
            .model("tiny")
            .invoker(model)
            .model_args(ModelArgs::new().api_base(setup.url.clone()).max_tokens(8))
            .inference_hints(hints())
            .build()
            .expect("summariser");
        builder = builder.summarizer(Arc::new(FreshSummary {
            agent: summariser,
            asked: Default::default(),
        }));
    }
    builder.build().expect("agent")
}

/// Runs one agent's turns; the turn it failed at, if it did.
async fn run_agent(agent: Arc<Agent>, index: usize, turns: usize) -> Option<(usize, String)> {
    agent.open("main").expect("open");
    for turn in 1..=turns {
        let ask = format!("a{index} turn {turn}: read shard {turn} and tell me if it blocks us.");
        agent.receive_in("main", ask).expect("receive");
        if let Err(error) = TURN.scope((index, turn), agent.respond("main")).await {
            return Some((turn, error.to_string()));
        }
    }
    None
}

/// Cached and uncached prompt tokens per bucket of turns, and the summaries' own.
fn figures(calls: &[Call], turns: usize, window: u64) -> serde_json::Value {
    let buckets: Vec<serde_json::Value> = (0..turns.div_ceil(BUCKET))
        .map(|b| {
            let range = b * BUCKET + 1..=((b + 1) * BUCKET).min(turns);
            let of: Vec<&Call> = calls.iter().filter(|c| range.contains(&c.turn)).collect();
            let cached: u64 = of.iter().map(|c| c.cached_tokens).sum();
            let prompt: u64 = of.iter().map(|c| c.prompt_tokens).sum();
            json!({"first": range.start(), "last": range.end(), "cached": cached,
                   "uncached": prompt.saturating_sub(cached), "requests": of.len()})
        })
        .collect();
    let sum = |summary: bool, f: fn(&Call) -> u64| -> u64 {
        calls.iter().filter(|c| c.summary == summary).map(f).sum()
    };
    json!({
        "buckets": buckets,
        "prompt_tokens": sum(false, |c| c.prompt_tokens) + sum(true, |c| c.prompt_tokens),
        "cached_tokens": sum(false, |c| c.cached_tokens) + sum(true, |c| c.cached_tokens),
        "summary_requests": calls.iter().filter(|c| c.summary).count(),
        "over_window": calls.iter().filter(|c| c.prompt_tokens > window).count(),
        "summary_prompt_tokens": sum(true, |c| c.prompt_tokens),
        "summary_cached_tokens": sum(true, |c| c.cached_tokens),
    })
}

#[tokio::main]
async fn main() {
    let setup = setup();
    let mut rng = fastrand::Rng::with_seed(SEED);
    let model = Arc::new(Model {
        inner: OpenAiInvoker::with_defaults(ServerDefaults::none()),
        calls: Mutex::new(Vec::new()),
        errors: Mutex::new(0),
        summary_words: lllm_bench::random_words(&mut rng, 200),
    });
    let started = Instant::now();
    let mut tasks = Vec::new();
    let mut stats = Vec::new();
    for index in 0..setup.agents {
        let system = lllm_bench::random_words(&mut rng, 800);
        let agent = Arc::new(agent(&setup, model.clone(), index, system));
        stats.push(agent.clone());
        tasks.push(tokio::spawn(run_agent(agent, index, setup.turns)));
    }
    let mut failures = Vec::new();
    for task in tasks {
        if let Some(failure) = task.await.expect("agent task") {
            failures.push(failure);
        }
    }
    let compactions: u64 = stats.iter().map(|a| a.context_stats().compactions).sum();
    let calls = model.calls.lock().expect("lock").clone();
    let mut line = figures(&calls, setup.turns, setup.window);
    let extra = json!({
        "leg": setup.leg, "agents": setup.agents, "turns": setup.turns, "window": setup.window,
        "requests": calls.len(), "errors": *model.errors.lock().expect("lock"),
        "failed_at": failures.iter().map(|(turn, _)| turn).collect::<Vec<_>>(),
        "compactions": compactions, "seconds": started.elapsed().as_secs_f64(),
    });
    for (turn, error) in &failures {
        eprintln!(
            "compaction {}: an agent failed at turn {turn}: {error}",
            setup.leg
        );
    }
    if let (Some(line), Some(extra)) = (line.as_object_mut(), extra.as_object()) {
        line.extend(extra.clone());
    }
    println!("{line}");
}
