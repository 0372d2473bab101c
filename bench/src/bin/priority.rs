//! Priority under contention: multi-agent tactics (`steps:`) competing with a backlog of long
//! untagged requests in NVIDIA Dynamo's router queue, with and without priority hints. One leg per
//! run; `scripts/bench_priority.sh` starts Dynamo (one simulated worker at real-time speed, router
//! queue on) for each leg and prints the table.
//!
//! The workload of a leg:
//!
//! - **background**: a closed loop of `K` clients (more than the worker's `--max-num-seqs`, so that
//!   requests always wait in the router queue), each sending long requests back to back through a
//!   plain [`OpenAiInvoker`] with no hints at all: a prompt of fresh random words (no prefix shared with
//!   anything) and a long answer. It starts first, warms up, runs through the tactics and stops after
//!   them (and not before a fixed window after the first tactic started, so that every leg measures
//!   the background over the same span too);
//! - **tactics**: waves of concurrent runs of the `steps` tactic, started a few hundred milliseconds
//!   apart, alternating two shapes: a *fan-out* (the lead's turn, then three forks of its dialog in
//!   `parallel`, then a join turn that reads their saved answers) and a *chain* (plan, critique by a
//!   second agent, revise). Each run has its own [`Team`] (its own dialogs and `session_prefix`), its
//!   own system prompts, and short answers. Every leg sends the same prompts (a fixed seed).
//!
//! The legs differ only in the tactics' `inference_hints` (always `profile: dynamo`): `none` (no
//! priority), `uniform` (`priority: 10` on every agent) and `auto` (`priority: auto`, an interactive
//! run, so each request carries its weight and `strict_priority: 1`).
//!
//! With `LLLM_PRIORITY_BG_HINTS=1` the background carries the same hints as the tactics' agents, as
//! an `lllm batch` run of the same settings beside the interactive runs would: each background
//! request gets the fields of [`InferenceHints::dialog_request_fields_for`] (`profile: dynamo`, the
//! leg's `priority`, its own session prefix, a fresh dialog per request) for a lone request of a
//! batch run ([`Demand::of_class`]`(`[`RunClass::Batch`]`)`). So under `uniform` it sends
//! `priority: 10` like the tactics, and under `auto` `priority: 1` (its weight) without
//! `strict_priority` (the batch tier), below the interactive tactics' tier; `none` sends no hints.
//!
//! Every request goes through [`Timed`], an [`Invoker`] around the [`OpenAiInvoker`] that streams
//! (`invoke_stream`) and records when the request was sent, its first streamed piece of text, its end,
//! its usage and the priority fields it carried (`nvext.agent_hints`). Dynamo's simulated engine
//! streams no text (its tokens decode to nothing), so the time to first token is taken from the
//! frontend's own log (`ttft_ms` of each request, found by the response id) whenever no piece of text
//! arrived; the figures say which source each came from.
//!
//! Figures: each tactic run's makespan (start to answer), p50/p90 per shape and over all; time to
//! first token p50/p90 per request class (the fan-out's lead, its forks, its join, the chain's turns,
//! the background); the background's completed requests and output tokens per second inside the
//! window in which tactics ran and inside the fixed window; the requests that were *reordered*: those
//! whose first token came before that of some request sent at least 10 ms earlier (which was therefore
//! still waiting when they were sent); errors (failed attempts and failed runs); and the distinct
//! `(kind, priority, strict_priority, osl)` carried.
//!
//! Env: LLLM_DYNAMO_URL, LLLM_DYNAMO_LOG (the frontend log), LLLM_PRIORITY_LEG (none | uniform |
//! auto), LLLM_PRIORITY_SETUP (a label echoed in the output). Optional: LLLM_PRIORITY_BACKGROUND
//! (clients, default 8), LLLM_PRIORITY_BG_WORDS (prompt words, 1500), LLLM_PRIORITY_BG_TOKENS
//! (answer tokens, `MIN-MAX`, default 200-400), LLLM_PRIORITY_RUNS (tactic runs per wave, 6),
//! LLLM_PRIORITY_WAVES (3), LLLM_PRIORITY_WAVE_GAP (seconds between waves, 12),
//! LLLM_PRIORITY_STAGGER_MS (between the runs of a wave, 300), LLLM_PRIORITY_TACTIC_TOKENS (32),
//! LLLM_PRIORITY_WARMUP (seconds, 5), LLLM_PRIORITY_WINDOW (the fixed window, seconds, 40),
//! LLLM_PRIORITY_BG_HINTS (1: the background carries the leg's hints as a batch run; default 0).
//! Prints one JSON object.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lllm_runtime::agent::{MessageLog, Role};
use lllm_runtime::config::{parse_tactic, PromptVars};
use lllm_runtime::hints::{Demand, Priority, RequestFields, RunClass};
use lllm_runtime::invoker::{Delta, ServerDefaults};
use lllm_runtime::tactic::{StepsTactic, Team};
use lllm_runtime::{
    ChatRequest, ChatResponse, Dialog, InferenceHints, InvokeError, Invoker, Message, ModelArgs,
    OpenAiInvoker, Profile, Tactic,
};
use serde_json::{json, Value};

const SEED: u64 = 20_261_203;
/// How much earlier (seconds) a request must have been sent for one that overtakes it to count as
/// reordered.
const REORDER_MARGIN: f64 = 0.010;

/// What a request is, read from the tag that starts its last user message (`fork#7 ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Lead,
    Fork,
    Join,
    Plan,
    Critique,
    Revise,
    Background,
}

impl Kind {
    fn tag(self) -> &'static str {
        match self {
            Kind::Lead => "lead",
            Kind::Fork => "fork",
            Kind::Join => "join",
            Kind::Plan => "plan",
            Kind::Critique => "critique",
            Kind::Revise => "revise",
            Kind::Background => "background",
        }
    }

    fn from_tag(tag: &str) -> Option<Kind> {
        [
            Kind::Lead,
            Kind::Fork,
            Kind::Join,
            Kind::Plan,
            Kind::Critique,
            Kind::Revise,
            Kind::Background,
        ]
        .into_iter()
        .find(|k| k.tag() == tag)
    }

    /// The class the TTFT figures are grouped by: the chain's three turns are one class.
    fn class(self) -> &'static str {
        match self {
            Kind::Plan | Kind::Critique | Kind::Revise => "chain",
            other => other.tag(),
        }
    }
}

/// One attempt as sent and answered; times in seconds since the leg's epoch.
#[derive(Debug, Clone)]
struct Record {
    kind: Option<Kind>,
    sent: f64,
    done: f64,
    /// The first streamed piece of text, when one came.
    first_delta: Option<f64>,
    response_id: Option<String>,
    completion_tokens: u64,
    error: Option<String>,
    /// `nvext.agent_hints` as sent.
    priority: Option<i64>,
    strict_priority: Option<i64>,
    osl: Option<i64>,
}

/// An [`Invoker`] around the OpenAI-compatible one that streams every request and records it.
#[derive(Debug)]
struct Timed {
    inner: OpenAiInvoker,
    epoch: Instant,
    records: Mutex<Vec<Record>>,
}

/// The kind named by the tag of the request's last user message (`fork#7 ...`).
fn kind_of(request: &ChatRequest) -> Option<Kind> {
    let tag = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.as_deref())
        .and_then(|text| text.split_whitespace().next())
        .unwrap_or("");
    Kind::from_tag(tag.split_once('#').map_or(tag, |(kind, _)| kind))
}

#[async_trait]
impl Invoker for Timed {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        self.invoke_stream(request, &mut |_| {}).await
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let kind = kind_of(request);
        let hints = request
            .hint_fields
            .body
            .get("nvext")
            .and_then(|n| n.get("agent_hints"));
        let hint = |name: &str| hints.and_then(|h| h.get(name)).and_then(Value::as_i64);
        let epoch = self.epoch;
        let sent = epoch.elapsed().as_secs_f64();
        let mut first_delta = None;
        let result = self
            .inner
            .invoke_stream(request, &mut |delta| {
                if first_delta.is_none() {
                    first_delta = Some(epoch.elapsed().as_secs_f64());
                }
                on_delta(delta);
            })
            .await;
        let done = epoch.elapsed().as_secs_f64();
        let (response_id, completion_tokens, error) = match &result {
            Ok(response) => (
                response.id.clone(),
                response.message.usage.map_or(0, |u| u.completion_tokens),
                None,
            ),
            Err(e) => (None, 0, Some(e.to_string())),
        };
        self.records.lock().expect("lock").push(Record {
            kind,
            sent,
            done,
            first_delta,
            response_id,
            completion_tokens,
            error,
            priority: hint("priority"),
            strict_priority: hint("strict_priority"),
            osl: hint("osl"),
        });
        result
    }
}

/// The leg's knobs, from the environment.
#[derive(Debug, Clone)]
struct Config {
    url: String,
    log: String,
    leg: String,
    setup: String,
    background: usize,
    bg_words: usize,
    bg_tokens: (u32, u32),
    runs_per_wave: usize,
    waves: usize,
    wave_gap: Duration,
    stagger: Duration,
    tactic_tokens: u32,
    warmup: Duration,
    window: Duration,
    /// Whether the background carries the leg's hints (as a batch run).
    bg_hints: bool,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}: cannot read `{v}`")),
        Err(_) => default,
    }
}

impl Config {
    fn from_env() -> Config {
        let bg_tokens =
            std::env::var("LLLM_PRIORITY_BG_TOKENS").unwrap_or_else(|_| "200-400".into());
        let (lo, hi) = bg_tokens
            .split_once('-')
            .unwrap_or((&bg_tokens, &bg_tokens));
        let tokens = |s: &str| -> u32 {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("LLLM_PRIORITY_BG_TOKENS: cannot read `{bg_tokens}`"))
        };
        Config {
            url: std::env::var("LLLM_DYNAMO_URL").expect("LLLM_DYNAMO_URL"),
            log: std::env::var("LLLM_DYNAMO_LOG").expect("LLLM_DYNAMO_LOG"),
            leg: std::env::var("LLLM_PRIORITY_LEG").unwrap_or_else(|_| "auto".into()),
            setup: std::env::var("LLLM_PRIORITY_SETUP").unwrap_or_default(),
            background: env_or("LLLM_PRIORITY_BACKGROUND", 8),
            bg_words: env_or("LLLM_PRIORITY_BG_WORDS", 1500),
            bg_tokens: (tokens(lo), tokens(hi).max(tokens(lo))),
            runs_per_wave: env_or("LLLM_PRIORITY_RUNS", 6),
            waves: env_or("LLLM_PRIORITY_WAVES", 3),
            wave_gap: Duration::from_secs_f64(env_or("LLLM_PRIORITY_WAVE_GAP", 12.0)),
            stagger: Duration::from_millis(env_or("LLLM_PRIORITY_STAGGER_MS", 300)),
            tactic_tokens: env_or("LLLM_PRIORITY_TACTIC_TOKENS", 32),
            warmup: Duration::from_secs_f64(env_or("LLLM_PRIORITY_WARMUP", 5.0)),
            window: Duration::from_secs_f64(env_or("LLLM_PRIORITY_WINDOW", 40.0)),
            bg_hints: env_or::<u8>("LLLM_PRIORITY_BG_HINTS", 0) != 0,
        }
    }

    /// The tactics' `priority` setting for the leg, as YAML (empty for none).
    fn priority(&self) -> &'static str {
        match self.leg.as_str() {
            "none" => "",
            "uniform" => ", priority: 10",
            "auto" => ", priority: auto",
            other => panic!("LLLM_PRIORITY_LEG: unknown leg `{other}` (none | uniform | auto)"),
        }
    }

    /// The hints of background client `client`: none unless `bg_hints`; else those of the leg's
    /// tactics (`profile: dynamo` and its `priority`) under the client's own session prefix.
    fn background_hints(&self, client: usize) -> Option<InferenceHints> {
        let priority = match self.leg.as_str() {
            _ if !self.bg_hints => return None,
            "none" => return None,
            "uniform" => Priority::Fixed(10),
            "auto" => Priority::Auto,
            other => panic!("LLLM_PRIORITY_LEG: unknown leg `{other}` (none | uniform | auto)"),
        };
        let hints = InferenceHints::builder()
            .profile(Profile::Dynamo)
            .session_prefix(format!("prio-{}-bg{client}", self.leg))
            .priority(priority)
            .build()
            .unwrap_or_else(|e| panic!("background hints: {e}"));
        Some(hints)
    }
}

/// The two shapes of tactic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    FanOut,
    Chain,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::FanOut => "fan_out",
            Shape::Chain => "chain",
        }
    }
}

/// The tactic file of run `run`: its own session prefix and system prompts (drawn from `rng`).
fn tactic_yaml(config: &Config, run: usize, shape: Shape, rng: &mut fastrand::Rng) -> String {
    let global = format!(
        "global:\n  model_name: tiny\n  model_args: {{api_base: \"{}\", max_tokens: {}}}\n  \
         inference_hints: {{profile: dynamo, session_prefix: prio-{}-{run}{}}}\n",
        config.url,
        config.tactic_tokens,
        config.leg,
        config.priority()
    );
    let mut system = || {
        let words = rng.usize(150..=300);
        lllm_bench::random_words(rng, words)
    };
    match shape {
        Shape::FanOut => format!(
            "{global}agent_configs:\n  - {{name: lead, system_prompt: \"You lead a team. {}\"}}\n\
             steps:\n  - {{agent: lead, receive: \"lead#{run} Split this task into three parts: {{{{ input }}}}\"}}\n  \
             - parallel:\n      \
             - {{agent: lead, dialog: a, fork_from: main, receive: \"fork#{run} Do part one.\", save: a}}\n      \
             - {{agent: lead, dialog: b, fork_from: main, receive: \"fork#{run} Do part two.\", save: b}}\n      \
             - {{agent: lead, dialog: c, fork_from: main, receive: \"fork#{run} Do part three.\", save: c}}\n  \
             - {{agent: lead, receive: \"join#{run} Merge the parts. One: {{{{ a }}}} Two: {{{{ b }}}} Three: {{{{ c }}}}\"}}\n",
            system()
        ),
        Shape::Chain => format!(
            "{global}agent_configs:\n  - {{name: planner, system_prompt: \"You plan. {}\"}}\n  \
             - {{name: critic, system_prompt: \"You critique plans. {}\"}}\n\
             steps:\n  - {{agent: planner, receive: \"plan#{run} Plan this: {{{{ input }}}}\", save: plan}}\n  \
             - {{agent: critic, receive: \"critique#{run} Find the weakest point of this plan: {{{{ plan }}}}\", save: critique}}\n  \
             - {{agent: planner, receive: \"revise#{run} Revise your plan. The critique: {{{{ critique }}}}\"}}\n",
            system(),
            system()
        ),
    }
}

/// One tactic run's outcome, in seconds since the epoch.
#[derive(Debug, Clone)]
struct RunOutcome {
    run: usize,
    shape: Shape,
    start: f64,
    end: f64,
    error: Option<String>,
}

async fn tactic_run(
    timed: Arc<Timed>,
    run: usize,
    shape: Shape,
    yaml: String,
    input: String,
) -> RunOutcome {
    let start = timed.epoch.elapsed().as_secs_f64();
    let outcome = async {
        let name = format!("run{run}.yaml");
        let spec = parse_tactic(yaml.as_bytes(), Path::new(&name), &|_| None)
            .map_err(|e| format!("{e}"))?;
        let invoker: Arc<dyn Invoker> = timed.clone();
        let team = Team::builder(&spec)
            .invoker(invoker)
            .build()
            .map_err(|e| format!("{e}"))?;
        let tactic = StepsTactic::new(spec.steps().to_vec(), spec.output().map(str::to_owned));
        let mut vars = PromptVars::new();
        vars.insert("input".into(), Value::from(input));
        tactic
            .run(&team, &vars)
            .await
            .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))
    }
    .await;
    RunOutcome {
        run,
        shape,
        start,
        end: timed.epoch.elapsed().as_secs_f64(),
        error: outcome.err(),
    }
}

/// One background client: long requests back to back until `stop`, untagged, or with
/// [`Config::background_hints`] as a lone request of a batch run (a fresh dialog each).
async fn background(timed: Arc<Timed>, config: Arc<Config>, client: usize, stop: Arc<AtomicBool>) {
    let mut rng = fastrand::Rng::with_seed(SEED ^ (0xb0 + client as u64));
    let hints = config.background_hints(client);
    while !stop.load(Ordering::Relaxed) {
        let prompt = format!(
            "background#{client} {}",
            lllm_bench::random_words(&mut rng, config.bg_words)
        );
        let max_tokens = rng.u32(config.bg_tokens.0..=config.bg_tokens.1);
        let messages: MessageLog = [Message::user(prompt)].into_iter().collect();
        let args = ModelArgs::new()
            .api_base(config.url.clone())
            .max_tokens(max_tokens);
        let fields = match &hints {
            None => RequestFields::default(),
            Some(hints) => hints
                .dialog_request_fields_for(
                    &Dialog::new(),
                    &args,
                    &Demand::of_class(RunClass::Batch),
                )
                .unwrap_or_else(|e| panic!("background hint fields: {e}")),
        };
        let request = ChatRequest::new("tiny", messages, Arc::new(args), fields);
        if timed.invoke(&request).await.is_err() {
            // Recorded as an error; do not spin on a dead server.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn quantile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(lllm_bench::percentile(&sorted, p))
}

fn summary(values: &[f64]) -> Value {
    json!({
        "n": values.len(),
        "p50": quantile(values, 0.5),
        "p90": quantile(values, 0.9),
        "mean": if values.is_empty() { None } else { Some(values.iter().sum::<f64>() / values.len() as f64) },
        "max": quantile(values, 1.0),
    })
}

/// A tactic run as planned: the same tactic file and input in every leg (but for the leg's
/// priority and session prefix).
struct Planned {
    run: usize,
    shape: Shape,
    /// When it starts, after the epoch.
    at: Duration,
    yaml: String,
    input: String,
}

/// Every tactic run of the leg, in waves, the shapes alternating.
fn plan_runs(config: &Config) -> Vec<Planned> {
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut plans = Vec::new();
    for wave in 0..config.waves {
        for i in 0..config.runs_per_wave {
            let run = wave * config.runs_per_wave + i;
            let shape = if i % 2 == 0 {
                Shape::FanOut
            } else {
                Shape::Chain
            };
            let at =
                config.warmup + config.wave_gap.mul_f64(wave as f64) + config.stagger * i as u32;
            let yaml = tactic_yaml(config, run, shape, &mut rng);
            let input = lllm_bench::random_words(&mut rng, 20);
            plans.push(Planned {
                run,
                shape,
                at,
                yaml,
                input,
            });
        }
    }
    plans
}

/// Runs the leg: the background clients, the tactic runs each at its time, then the background
/// until the end of the fixed window. Returns the runs' outcomes and when the background stopped.
async fn run_leg(
    config: &Arc<Config>,
    timed: &Arc<Timed>,
    plans: Vec<Planned>,
) -> (Vec<RunOutcome>, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..config.background)
        .map(|client| {
            tokio::spawn(background(
                timed.clone(),
                config.clone(),
                client,
                stop.clone(),
            ))
        })
        .collect();

    let runs: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let timed = timed.clone();
            tokio::spawn(async move {
                let start = tokio::time::Instant::from_std(timed.epoch + plan.at);
                tokio::time::sleep_until(start).await;
                tactic_run(timed, plan.run, plan.shape, plan.yaml, plan.input).await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for run in runs {
        outcomes.push(run.await.expect("tactic task"));
    }
    let fixed_end = timed.epoch + config.warmup + config.window;
    tokio::time::sleep_until(tokio::time::Instant::from_std(fixed_end)).await;
    stop.store(true, Ordering::Relaxed);
    // Requests still in flight are dropped (the client closes them); they are not counted.
    for client in clients {
        client.abort();
        let _ = client.await;
    }
    (outcomes, timed.epoch.elapsed().as_secs_f64())
}

/// The frontend log's time to first token by response id, once it has a line for every answered
/// request in `records` (the frontend writes its line when a request completes) or after 10 s.
async fn await_ttfts(config: &Config, records: &[Record]) -> HashMap<String, f64> {
    let wanted: Vec<String> = records
        .iter()
        .filter_map(|r| r.response_id.as_deref())
        .map(|id| id.trim_start_matches("chatcmpl-").to_owned())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ttfts = lllm_runtime::testing::dynamo_ttfts(&config.log);
        if wanted.iter().all(|id| ttfts.contains_key(id)) || Instant::now() >= deadline {
            break ttfts;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::main]
async fn main() {
    let config = Arc::new(Config::from_env());
    let timed = Arc::new(Timed {
        inner: OpenAiInvoker::with_defaults(ServerDefaults::none()),
        epoch: Instant::now(),
        records: Mutex::new(Vec::new()),
    });
    let plans = plan_runs(&config);
    let tactics_start = config.warmup.as_secs_f64();
    let (outcomes, stopped) = run_leg(&config, &timed, plans).await;
    let records = timed.records.lock().expect("lock").clone();
    let ttfts = await_ttfts(&config, &records).await;
    println!(
        "{}",
        figures(&config, &records, &outcomes, &ttfts, tactics_start, stopped)
    );
}

/// A request's kind and the `priority`, `strict_priority` and `osl` it carried.
type Carried = (Kind, Option<i64>, Option<i64>, Option<i64>);

/// The first token of every answered request, and where its time came from.
#[derive(Default)]
struct FirstTokens {
    /// (sent, first token, kind), in seconds since the epoch.
    firsts: Vec<(f64, f64, Kind)>,
    /// Time to first token (ms) by [`Kind::class`].
    ttft_by_class: BTreeMap<&'static str, Vec<f64>>,
    from_client: u64,
    from_log: u64,
    missing: u64,
}

/// The first tokens of the answered requests: the first streamed piece of text, else the
/// frontend log's time to first token.
fn first_tokens(records: &[Record], ttfts: &HashMap<String, f64>) -> FirstTokens {
    let mut tokens = FirstTokens::default();
    for r in records.iter().filter(|r| r.error.is_none()) {
        let first = match r.first_delta {
            Some(t) => {
                tokens.from_client += 1;
                Some(t)
            }
            None => {
                let id = r.response_id.as_deref().unwrap_or("");
                match ttfts.get(id.trim_start_matches("chatcmpl-")) {
                    Some(ms) => {
                        tokens.from_log += 1;
                        Some(r.sent + ms / 1e3)
                    }
                    None => {
                        tokens.missing += 1;
                        None
                    }
                }
            }
        };
        if let (Some(first), Some(kind)) = (first, r.kind) {
            tokens.firsts.push((r.sent, first, kind));
            tokens
                .ttft_by_class
                .entry(kind.class())
                .or_default()
                .push((first - r.sent) * 1e3);
        }
    }
    tokens
}

/// Reordered: a request whose first token came before that of a request sent earlier (at least
/// REORDER_MARGIN earlier: the forks of a fan-out are sent together, in no meaningful order).
fn reordered(firsts: &[(f64, f64, Kind)]) -> Value {
    let mut overtook = vec![false; firsts.len()];
    let (mut tactic_over_bg, mut bg_over_tactic) = (0u64, 0u64);
    for (b, &(sent_b, first_b, kind_b)) in firsts.iter().enumerate() {
        for &(sent_a, first_a, kind_a) in firsts {
            if sent_a + REORDER_MARGIN < sent_b && first_a > first_b {
                overtook[b] = true;
                match (kind_a == Kind::Background, kind_b == Kind::Background) {
                    (true, false) => tactic_over_bg += 1,
                    (false, true) => bg_over_tactic += 1,
                    _ => {}
                }
            }
        }
    }
    let reordered = |background: bool| {
        firsts
            .iter()
            .zip(&overtook)
            .filter(|((_, _, k), o)| **o && (*k == Kind::Background) == background)
            .count()
    };
    let tactic_requests = firsts.iter().filter(|f| f.2 != Kind::Background).count();
    json!({
        "margin_ms": REORDER_MARGIN * 1e3,
        "tactic_requests": tactic_requests,
        "tactic_reordered": reordered(false),
        "background_requests": firsts.len() - tactic_requests,
        "background_reordered": reordered(true),
        "pairs_tactic_over_background": tactic_over_bg,
        "pairs_background_over_tactic": bg_over_tactic,
    })
}

/// The makespans of the successful runs, over all and per shape.
fn makespans(outcomes: &[RunOutcome]) -> Value {
    let makespan = |shape: Option<Shape>| -> Vec<f64> {
        outcomes
            .iter()
            .filter(|o| o.error.is_none() && shape.is_none_or(|s| o.shape == s))
            .map(|o| o.end - o.start)
            .collect()
    };
    json!({
        "all": summary(&makespan(None)),
        "fan_out": summary(&makespan(Some(Shape::FanOut))),
        "chain": summary(&makespan(Some(Shape::Chain))),
    })
}

/// The background's requests completed from `from` to `to` (seconds since the epoch), and their
/// output tokens.
fn background_throughput(records: &[Record], from: f64, to: f64) -> Value {
    let done: Vec<&Record> = records
        .iter()
        .filter(|r| {
            r.kind == Some(Kind::Background) && r.error.is_none() && r.done >= from && r.done < to
        })
        .collect();
    let seconds = (to - from).max(1e-9);
    let tokens: u64 = done.iter().map(|r| r.completion_tokens).sum();
    json!({
        "from_s": from,
        "to_s": to,
        "seconds": to - from,
        "requests": done.len(),
        "output_tokens": tokens,
        "requests_per_s": done.len() as f64 / seconds,
        "output_tokens_per_s": tokens as f64 / seconds,
    })
}

/// The distinct priority fields carried, by kind, with how many requests carried each.
fn carried(records: &[Record]) -> Vec<Value> {
    let mut carried: BTreeMap<Carried, u64> = BTreeMap::new();
    for r in records {
        if let Some(kind) = r.kind {
            *carried
                .entry((kind, r.priority, r.strict_priority, r.osl))
                .or_default() += 1;
        }
    }
    carried
        .into_iter()
        .map(|((kind, priority, strict, osl), n)| {
            json!({"kind": kind.tag(), "priority": priority, "strict_priority": strict, "osl": osl, "requests": n})
        })
        .collect()
}

/// The leg's workload, as configured.
fn workload(config: &Config, tactic_runs: usize) -> Value {
    json!({
        "background_clients": config.background,
        "background_prompt_words": config.bg_words,
        "background_max_tokens": [config.bg_tokens.0, config.bg_tokens.1],
        "tactic_runs": tactic_runs,
        "runs_per_wave": config.runs_per_wave,
        "waves": config.waves,
        "wave_gap_s": config.wave_gap.as_secs_f64(),
        "stagger_ms": config.stagger.as_millis() as u64,
        "tactic_max_tokens": config.tactic_tokens,
        "warmup_s": config.warmup.as_secs_f64(),
        "fixed_window_s": config.window.as_secs_f64(),
    })
}

/// The requests by kind: background, tactic, and untagged.
fn requests(records: &[Record]) -> Value {
    let unknown = records.iter().filter(|r| r.kind.is_none()).count();
    let background = records
        .iter()
        .filter(|r| r.kind == Some(Kind::Background))
        .count();
    json!({
        "total": records.len(),
        "background": background,
        "tactic": records.len() - background - unknown,
        "untagged": unknown,
    })
}

/// The failed attempts and runs, and the first few of their errors.
struct Failures {
    attempts: usize,
    runs: usize,
    first: Vec<String>,
}

fn failures(records: &[Record], outcomes: &[RunOutcome]) -> Failures {
    let failed_attempts: Vec<&Record> = records.iter().filter(|r| r.error.is_some()).collect();
    let failed_runs: Vec<&RunOutcome> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    let mut first: Vec<String> = failed_attempts
        .iter()
        .filter_map(|r| r.error.clone())
        .chain(failed_runs.iter().filter_map(|o| o.error.clone()))
        .take(5)
        .collect();
    first.dedup();
    Failures {
        attempts: failed_attempts.len(),
        runs: failed_runs.len(),
        first,
    }
}

/// The figures of one leg.
fn figures(
    config: &Config,
    records: &[Record],
    outcomes: &[RunOutcome],
    ttfts: &HashMap<String, f64>,
    tactics_start: f64,
    stopped: f64,
) -> Value {
    let tokens = first_tokens(records, ttfts);
    let window_start = outcomes
        .iter()
        .map(|o| o.start)
        .fold(f64::INFINITY, f64::min);
    let window_end = outcomes.iter().map(|o| o.end).fold(0.0, f64::max);
    let fixed_end = tactics_start + config.window.as_secs_f64();
    let failures = failures(records, outcomes);
    json!({
        "leg": config.leg,
        "setup": config.setup,
        "background_hints": config.bg_hints,
        "workload": workload(config, outcomes.len()),
        "requests": requests(records),
        "errors": failures.attempts + failures.runs,
        "failed_attempts": failures.attempts,
        "failed_runs": failures.runs,
        "first_errors": failures.first,
        "makespan_s": makespans(outcomes),
        "runs": outcomes.iter().map(|o| json!({
            "run": o.run, "shape": o.shape.name(), "start_s": o.start, "makespan_s": o.end - o.start,
            "ok": o.error.is_none(),
        })).collect::<Vec<_>>(),
        "ttft_ms": tokens.ttft_by_class.iter().map(|(class, v)| (class.to_string(), summary(v))).collect::<BTreeMap<_, _>>(),
        "ttft_source": {
            "client_first_delta": tokens.from_client,
            "frontend_log": tokens.from_log,
            "missing": tokens.missing,
        },
        "background_in_tactic_window": background_throughput(records, window_start, window_end),
        "background_in_fixed_window": background_throughput(records, tactics_start, fixed_end),
        "reordered": reordered(&tokens.firsts),
        "carried": carried(records),
        "seconds": stopped,
    })
}
