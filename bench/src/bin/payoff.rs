//! The payoff of session hints on a real KV-aware router: a fixed-seed agent workload against NVIDIA
//! Dynamo, measured from the router's own log and the engines' usage counts. One leg per run; the
//! legs differ only in the hints (`family`, `own`, `none`). `scripts/bench_payoff.sh` restarts Dynamo
//! for each leg and prints the table.
//!
//! Env: LLLM_DYNAMO_URL, LLLM_DYNAMO_LOG (the frontend log), LLLM_PAYOFF_LEG (family | own | none),
//! LLLM_PAYOFF_TRACE (optional: write the run's content-free trace there, for `lllm replay`).
//! Prints one JSON line of figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lllm_runtime::agent::RetryPolicy;
use lllm_runtime::hints::ForkSession;
use lllm_runtime::invoker::{Delta, ServerDefaults};
use lllm_runtime::trace::{TraceFormat, TraceRecorder};
use lllm_runtime::{
    Agent, ChatRequest, ChatResponse, InferenceHints, InvokeError, Invoker, ModelArgs,
    OpenAiInvoker, Profile,
};
use serde_json::json;

const ROOTS: usize = 48;
const ARRIVALS: Duration = Duration::from_secs(10);
const SEED: u64 = 20_261_202;

/// One request as sent: which dialog, which session it carried, and what the engine reported.
#[derive(Debug, Clone)]
struct Call {
    dialog: String,
    response_id: String,
    prompt_tokens: u64,
    cached_tokens: u64,
}

#[derive(Debug)]
struct Recorder {
    inner: OpenAiInvoker,
    calls: Mutex<Vec<Call>>,
    errors: Mutex<u64>,
}

/// The dialog a request belongs to: every message a dialog receives starts with its alias (`r7`,
/// `r7s1`, ...), so the last user message names it, whatever the hints (the `none` leg sends none).
fn alias_of(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == lllm_runtime::agent::Role::User)
        .and_then(|m| m.content.as_deref())
        .and_then(|text| text.split_whitespace().next())
        .unwrap_or("")
        .to_owned()
}

#[async_trait]
impl Invoker for Recorder {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let result = self.inner.invoke(request).await;
        match &result {
            Ok(response) => {
                let usage = response.message.usage.unwrap_or_default();
                self.calls.lock().expect("lock").push(Call {
                    dialog: alias_of(request),
                    response_id: response.id.clone().unwrap_or_default(),
                    prompt_tokens: usage.prompt_tokens,
                    cached_tokens: usage.cached_tokens.unwrap_or(0),
                });
            }
            Err(_) => *self.errors.lock().expect("lock") += 1,
        }
        result
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        _on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        self.invoke(request).await
    }
}

/// A dialog's script: its turns' tool results, waits and answer lengths, drawn up front so every leg
/// sends the same work.
#[derive(Debug, Clone)]
struct Script {
    turns: Vec<(Duration, String)>,
}

fn script(rng: &mut fastrand::Rng, turns: usize) -> Script {
    Script {
        turns: (0..turns)
            .map(|_| {
                let wait = Duration::from_millis(rng.u64(200..=2000));
                let words = rng.usize(50..=300);
                (wait, lllm_bench::random_words(rng, words))
            })
            .collect(),
    }
}

async fn run_dialog(agent: &Agent, alias: &str, script: &Script) {
    for (wait, tool_result) in &script.turns {
        tokio::time::sleep(*wait).await;
        if agent
            .receive_in(alias, format!("{alias} tool result: {tool_result}"))
            .is_err()
        {
            return;
        }
        if agent.respond(alias).await.is_err() {
            return;
        }
    }
}

/// The hints of leg `leg`: `family` (forks share their parent's session), `own` (each dialog its
/// own), anything else none.
fn hints_for(leg: &str) -> InferenceHints {
    match leg {
        "family" => InferenceHints::builder()
            .profile(Profile::Dynamo)
            .fork_session(ForkSession::Family),
        "own" => InferenceHints::builder().profile(Profile::Dynamo),
        _ => InferenceHints::builder()
            .profile(Profile::Dynamo)
            .session(false),
    }
    .build()
    .expect("hints")
}

/// The trace recorder of `LLLM_PAYOFF_TRACE`, when set.
fn trace_recorder() -> Option<Arc<TraceRecorder>> {
    // `LLLM_PAYOFF_TRACE_FORMAT=agentic` writes Dynamo's agentic format instead of lllm-trace/1.
    let format = match std::env::var("LLLM_PAYOFF_TRACE_FORMAT").as_deref() {
        Ok("agentic") => TraceFormat::AgenticMooncake,
        _ => TraceFormat::Lllm,
    };
    std::env::var("LLLM_PAYOFF_TRACE").ok().map(|path| {
        Arc::new(
            TraceRecorder::to_file(std::path::Path::new(&path), 16, None, format)
                .expect("trace file"),
        )
    })
}

/// The work of one root agent, drawn up front.
struct Plan {
    root: usize,
    arrival: Duration,
    system: String,
    main: Script,
    forks: Vec<Script>,
    max_tokens: u32,
}

/// The roots' plans: the same draws for every leg.
fn plans() -> Vec<Plan> {
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut plans = Vec::new();
    for root in 0..ROOTS {
        let arrival = ARRIVALS.mul_f64(root as f64 / ROOTS as f64);
        let words = rng.usize(300..=2000);
        let system = lllm_bench::random_words(&mut rng, words);
        let turns = rng.usize(4..=8);
        let main = script(&mut rng, turns);
        let mut forks = Vec::new();
        if rng.f64() < 0.3 {
            for _ in 0..rng.usize(1..=2) {
                let turns = rng.usize(2..=4);
                forks.push(script(&mut rng, turns));
            }
        }
        let max_tokens = rng.u32(20..=120);
        plans.push(Plan {
            root,
            arrival,
            system,
            main,
            forks,
            max_tokens,
        });
    }
    plans
}

/// What every root agent shares: where its calls go and are recorded, and the leg's hints.
#[derive(Clone)]
struct Shared {
    recorder: Arc<Recorder>,
    trace: Option<Arc<TraceRecorder>>,
    hints: InferenceHints,
    url: String,
}

/// One root agent: after its arrival, the first two turns of its main dialog, then its forks (as
/// subagents, concurrently) beside the rest of the main dialog.
async fn run_root(plan: Plan, shared: Shared) {
    let Plan {
        root,
        arrival,
        system,
        main,
        forks,
        max_tokens,
    } = plan;
    tokio::time::sleep(arrival).await;
    let mut builder = Agent::builder();
    if let Some(trace) = shared.trace {
        builder = builder.trace(trace);
    }
    let agent = Arc::new(
        builder
            .name(format!("agent{root}"))
            .system_prompt(system)
            .model("tiny")
            .invoker(shared.recorder)
            .model_args(ModelArgs::new().api_base(shared.url).max_tokens(max_tokens))
            .inference_hints(shared.hints)
            .retry_policy(RetryPolicy::with_max_call_retries(1))
            .build()
            .expect("agent"),
    );
    let alias = format!("r{root}");
    agent.open(&alias).expect("open");
    let (first, rest) = main.turns.split_at(2.min(main.turns.len()));
    run_dialog(
        &agent,
        &alias,
        &Script {
            turns: first.to_vec(),
        },
    )
    .await;
    let mut subagents = Vec::new();
    for (i, fork) in forks.iter().enumerate() {
        let child = format!("r{root}s{i}");
        agent.fork(&alias, &child).expect("fork");
        let agent = agent.clone();
        let fork = fork.clone();
        subagents.push(tokio::spawn(async move {
            run_dialog(&agent, &child, &fork).await
        }));
    }
    run_dialog(
        &agent,
        &alias,
        &Script {
            turns: rest.to_vec(),
        },
    )
    .await;
    for sub in subagents {
        sub.await.ok();
    }
}

#[tokio::main]
async fn main() {
    let url = std::env::var("LLLM_DYNAMO_URL").expect("LLLM_DYNAMO_URL");
    let log = std::env::var("LLLM_DYNAMO_LOG").expect("LLLM_DYNAMO_LOG");
    let leg = std::env::var("LLLM_PAYOFF_LEG").unwrap_or_else(|_| "family".into());
    let shared = Shared {
        hints: hints_for(&leg),
        trace: trace_recorder(),
        recorder: Arc::new(Recorder {
            inner: OpenAiInvoker::with_defaults(ServerDefaults::none()),
            calls: Mutex::new(Vec::new()),
            errors: Mutex::new(0),
        }),
        url,
    };
    let plans = plans();

    let started = Instant::now();
    let tasks: Vec<_> = plans
        .into_iter()
        .map(|plan| tokio::spawn(run_root(plan, shared.clone())))
        .collect();
    for task in tasks {
        task.await.ok();
    }
    let elapsed = started.elapsed();
    if let Some(trace) = &shared.trace {
        trace.flush().expect("trace written");
    }
    let calls = shared.recorder.calls.lock().expect("lock").clone();
    let ids: Vec<&str> = calls.iter().map(|c| c.response_id.as_str()).collect();
    let served_by =
        lllm_runtime::testing::dynamo_workers_for(&log, &ids, Duration::from_secs(10)).await;
    let errors = *shared.recorder.errors.lock().expect("lock");
    println!("{}", figures(&leg, &calls, &served_by, errors, elapsed));
}

/// The figures of one leg, from the calls in order and the worker of each.
fn figures(
    leg: &str,
    calls: &[Call],
    served_by: &HashMap<String, String>,
    errors: u64,
    elapsed: Duration,
) -> serde_json::Value {
    let worker = |c: &Call| {
        served_by
            .get(c.response_id.trim_start_matches("chatcmpl-"))
            .cloned()
    };
    let mut by_dialog: HashMap<&str, Vec<&Call>> = HashMap::new();
    for call in calls {
        by_dialog
            .entry(call.dialog.as_str())
            .or_default()
            .push(call);
    }
    let (mut pinned, mut dialogs) = (0, 0);
    let (mut forks, mut forks_home) = (0, 0);
    let (mut cached, mut ideal, mut prefill) = (0u64, 0u64, 0u64);
    for (dialog, list) in &by_dialog {
        dialogs += 1;
        let mut seen: Vec<String> = list.iter().filter_map(|c| worker(c)).collect();
        seen.dedup();
        seen.sort();
        seen.dedup();
        if seen.len() == 1 {
            pinned += 1;
        }
        // A fork `r7s1` starts from its parent `r7`'s prefix: its first call could reuse the parent's
        // prompt at the fork (the parent's second call, the last before forking).
        let parent = dialog
            .split_once('s')
            .map(|(p, _)| p)
            .filter(|_| dialog.contains('s'));
        let mut previous = parent
            .and_then(|p| by_dialog.get(p))
            .and_then(|calls| calls.get(1).or(calls.last()))
            .map(|c| c.prompt_tokens);
        if let (Some(p), Some(first)) = (parent, list.first()) {
            forks += 1;
            let parent_worker = by_dialog
                .get(p)
                .and_then(|calls| calls.get(1).or(calls.last()))
                .and_then(|c| worker(c));
            if parent_worker.is_some() && parent_worker == worker(first) {
                forks_home += 1;
            }
        }
        for call in list {
            if let Some(prev) = previous {
                ideal += prev.min(call.prompt_tokens);
            }
            cached += call.cached_tokens;
            prefill += call.prompt_tokens.saturating_sub(call.cached_tokens);
            previous = Some(call.prompt_tokens);
        }
    }
    json!({
        "leg": leg,
        "requests": calls.len(),
        "errors": errors,
        "dialogs": dialogs,
        "pinned": pinned,
        "forks": forks,
        "forks_on_parent_worker": forks_home,
        "cached_tokens": cached,
        "ideal_cached_tokens": ideal,
        "cached_of_ideal": if ideal > 0 { cached as f64 / ideal as f64 } else { 0.0 },
        "prefill_tokens": prefill,
        "seconds": elapsed.as_secs_f64(),
    })
}
