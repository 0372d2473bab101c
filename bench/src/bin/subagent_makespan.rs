//! The makespan of background subagents on a real KV-aware router: a lead whose dialog holds a
//! long shared prefix (some 6,800 tokens of sources) starts four `fork` researchers, in one of two
//! legs that differ only in how the researchers run:
//!   background  `background: true`: the four `task_start` calls return task ids at once, the
//!               researchers run at the same time while the lead goes on, and the lead gets one
//!               more turn with their answers (what issue 34 builds)
//!   sequential  `background: false` with `max_parallel_tools: 1`: the same four calls, each
//!               answered by its researcher before the next starts (an agent as a tool, one at a
//!               time)
//! Each run's system prompts start with a word of its own, so nothing an earlier run left in the
//! engines' caches counts for the next. The legs alternate for `ROUNDS` rounds.
//!
//! Dynamo's mocker answers without words or tool calls, so a wrapper plays the model's part (the
//! lead's question gets four `task_start` calls, a researcher's instructions its finding); every
//! request still goes to Dynamo, which computes (simulates) its prefill and decodes `max_tokens`
//! tokens: a researcher `RESEARCHER_TOKENS` (default 256), the lead 16.
//!
//! Env: LLLM_DYNAMO_URL. Args: `[ROUNDS [RESEARCHER_TOKENS]]` (default 3, 256).
//! Prints one JSON object of figures (the report's `subagents` section reads it with the memory
//! benchmark's).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{ensure, Context as _};
use async_trait::async_trait;
use lllm_runtime::agent::Role;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::Team;
use lllm_runtime::tools::ToolCall;
use lllm_runtime::{ChatRequest, ChatResponse, InvokeError, Invoker, OpenAiInvoker};
use serde_json::json;

/// Researchers the lead starts.
const RESEARCHERS: usize = 4;
/// Ends the lead's question; its answer starts the researchers.
const QUESTION: &str = "Which modules parse YAML? Start your researchers.";

/// One request: who sent it, its prompt tokens and how many the engine had cached.
#[derive(Debug, Clone)]
struct Seen {
    researcher: bool,
    prompt_tokens: u64,
    cached_tokens: u64,
    completion_tokens: u64,
}

/// Sends every request to Dynamo and plays the model's part in the dialog.
#[derive(Debug)]
struct Scripted {
    inner: OpenAiInvoker,
    seen: Mutex<Vec<Seen>>,
}

#[async_trait]
impl Invoker for Scripted {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let mut response = self.inner.invoke(request).await?;
        let asked = request
            .messages
            .last()
            .filter(|m| m.role == Role::User)
            .and_then(|m| m.content.clone())
            .unwrap_or_default();
        let researcher = asked.starts_with("Research part");
        let usage = response.message.usage.unwrap_or_default();
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Seen {
                researcher,
                prompt_tokens: usage.prompt_tokens,
                cached_tokens: usage.cached_tokens.unwrap_or(0),
                completion_tokens: usage.completion_tokens,
            });
        let message = &mut response.message;
        if asked.ends_with(QUESTION) {
            message.content = None;
            message.tool_calls = (1..=RESEARCHERS)
                .map(|n| ToolCall {
                    id: format!("call-{n}"),
                    name: "task_start".to_owned(),
                    arguments: json!({
                        "subagent": "researcher",
                        "instructions": format!("Research part {n} of the sources."),
                    })
                    .to_string(),
                })
                .collect();
            message.finish_reason = Some("tool_calls".to_owned());
        } else if researcher {
            message.content = Some(format!("finding for: {asked}"));
        } else {
            message.content = Some("Merged.".to_owned());
        }
        Ok(response)
    }
}

/// Some 6,800 tokens of sources (with the mocker's tokenizer): the prefix the researchers share.
fn sources() -> String {
    (1..=120)
        .map(|i| {
            format!(
                "Source {i}: module m{i} reads its settings from file s{i}.yaml and hands \
                 them to parser p{}.\n",
                i % 7
            )
        })
        .collect()
}

/// The tactic of one leg: the lead forks its researchers (answered by `researcher`, which decodes
/// up to `tokens` tokens per answer).
fn spec(
    url: &str,
    leg: &str,
    nonce: u128,
    tokens: u32,
) -> anyhow::Result<lllm_runtime::TacticSpec> {
    let (background, parallel) = match leg {
        "background" => ("true", RESEARCHERS),
        _ => ("false", 1),
    };
    let args = |max: u32| format!("{{api_base: \"{url}\", max_tokens: {max}, timeout: 600}}");
    let text = format!(
        r#"global:
  model_name: dynamo/tiny
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: lead
    model_args: {lead_args}
    system_prompt: "Run {nonce} {leg}. You lead four researchers. Be brief."
    max_background_tasks: {RESEARCHERS}
    max_parallel_tools: {parallel}
    subagents:
      - {{name: researcher, agent: researcher, mode: fork, background: {background}}}
  - name: researcher
    model_args: {researcher_args}
    system_prompt: You research.
"#,
        lead_args = args(16),
        researcher_args = args(tokens),
    );
    lllm_runtime::config::parse_tactic(text.as_bytes(), Path::new("makespan.yaml"), &|_| None)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// One run of a leg: its wall time and what Dynamo counted.
#[derive(Debug)]
struct Run {
    seconds: f64,
    seen: Vec<Seen>,
}

async fn run_leg(url: &str, leg: &str, nonce: u128, tokens: u32) -> anyhow::Result<Run> {
    let model = Arc::new(Scripted {
        inner: OpenAiInvoker::with_defaults(ServerDefaults::none()),
        seen: Mutex::new(Vec::new()),
    });
    let spec = spec(url, leg, nonce, tokens)?;
    let team = Team::builder(&spec).invoker(model.clone()).build()?;
    let lead = team.agent("lead").context("lead")?;
    lead.open("main")?;
    lead.receive(format!("{}\n{QUESTION}", sources()))?;
    let since = Instant::now();
    lead.respond("main")
        .await
        .with_context(|| format!("{leg}: Dynamo answers the run"))?;
    let seconds = since.elapsed().as_secs_f64();
    let seen = model.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let researchers = seen.iter().filter(|s| s.researcher).count();
    ensure!(
        researchers == RESEARCHERS,
        "{leg}: {researchers} researchers asked, not {RESEARCHERS}"
    );
    Ok(Run { seconds, seen })
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("LLLM_DYNAMO_URL").context("LLLM_DYNAMO_URL names Dynamo's /v1")?;
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(Ok(3), |a| a.parse())?;
    let tokens: u32 = args.next().map_or(Ok(256), |a| a.parse())?;
    ensure!((1..=20).contains(&rounds), "ROUNDS: 1 to 20");
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut legs: Vec<(&str, Vec<Run>)> =
        vec![("background", Vec::new()), ("sequential", Vec::new())];
    for round in 0..rounds {
        for (leg, runs) in &mut legs {
            let run = run_leg(&url, leg, nonce + round as u128, tokens).await?;
            eprintln!("round {round}: {leg} {:.2} s", run.seconds);
            runs.push(run);
        }
    }
    let figures: serde_json::Map<String, serde_json::Value> = legs
        .iter()
        .map(|(leg, runs)| {
            let seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
            let last = &runs[runs.len() - 1].seen;
            let researchers = || last.iter().filter(|s| s.researcher);
            let prompt: u64 = researchers().map(|s| s.prompt_tokens).sum();
            let cached: u64 = researchers().map(|s| s.cached_tokens).sum();
            let decoded: u64 = researchers().map(|s| s.completion_tokens).sum();
            let value = json!({
                "seconds": seconds,
                "median_s": median(&seconds),
                "requests": last.len(),
                "researcher_prompt_tokens": prompt,
                "researcher_cached_tokens": cached,
                "researcher_completion_tokens": decoded,
            });
            ((*leg).to_owned(), value)
        })
        .collect();
    let lead_prompt = legs[0].1[0].seen.first().map_or(0, |s| s.prompt_tokens);
    println!(
        "{}",
        json!({
            "researchers": RESEARCHERS,
            "researcher_tokens": tokens,
            "rounds": rounds,
            "lead_prompt_tokens": lead_prompt,
            "legs": figures,
        })
    );
    Ok(())
}
