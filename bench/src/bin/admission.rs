//! Admission by priority (`model_args.max_in_flight` with `priority: auto`) against first come,
//! first served: N fan-out tactics at once (a plan, then fifteen one-turn branches and one six-turn
//! branch listed last, then a merge: 23 requests, a critical path of 8) share one endpoint's few
//! slots; the figures are the makespan (the last tactic's end) and the mean time to finish a
//! tactic, for 1, 2, 4 and 16 tactics at once.
//!
//! Env: LLLM_ADMISSION_URL (the endpoint; without it, an in-process stub with a fixed service time
//! of LLLM_ADMISSION_SERVICE_MS, default 40), LLLM_ADMISSION_TACTICS (a comma-separated list,
//! default 1,2,4,16), LLLM_ADMISSION_SLOTS (max_in_flight, default 4), LLLM_ADMISSION_RUNS (default
//! 3; the run with the median makespan of each leg is kept). Prints one JSON line per leg.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_runtime::config::{parse_tactic, PromptVars};
use lllm_runtime::hints::RunClass;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::{StepsTactic, Team};
use lllm_runtime::testing::StubServer;
use lllm_runtime::{OpenAiInvoker, Tactic};
use serde_json::json;

/// One-turn branches of each fan-out.
const SHORT_BRANCHES: u64 = 15;
/// Turns of the long branch.
const LONG_TURNS: u64 = 6;

/// One fan-out tactic: its dialogs' sessions start with `t{index}`.
fn tactic(url: &str, index: u64, slots: u64, priority: &str) -> lllm_runtime::TacticSpec {
    let mut branches = String::new();
    for i in 1..=SHORT_BRANCHES {
        branches.push_str(&format!(
            "      - {{agent: lead, dialog: s{i}, fork_from: main, receive: Short part {i}.}}\n"
        ));
    }
    let mut long = String::new();
    for step in 1..=LONG_TURNS {
        let fork = if step == 1 { ", fork_from: main" } else { "" };
        long.push_str(&format!(
            "          - {{agent: lead, dialog: long{fork}, receive: Long part step {step}.}}\n"
        ));
    }
    let text = format!(
        "global:
  model_name: tiny
  model_args: {{api_base: \"{url}\", max_tokens: 16, max_in_flight: {slots}}}
  inference_hints: {{profile: dynamo, session_prefix: t{index}{priority}}}
agent_configs:
  - {{name: lead, system_prompt: You plan work and merge its parts. Be brief.}}
steps:
  - {{agent: lead, receive: Plan the work.}}
  - parallel:
{branches}      - steps:
{long}  - {{agent: lead, receive: Merge the parts.}}
"
    );
    parse_tactic(text.as_bytes(), Path::new("fan_out.yaml"), &|_| None).expect("valid tactic")
}

/// Runs `tactics` fan-outs at once; each one's seconds to finish, and the makespan.
async fn run_once(url: &str, tactics: u64, slots: u64, priority: &str) -> (Vec<f64>, f64) {
    let invoker = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    let started = Instant::now();
    let runs = (0..tactics).map(|index| {
        let spec = tactic(url, index, slots, priority);
        let invoker = invoker.clone();
        async move {
            let team = Team::builder(&spec)
                .invoker(invoker)
                .run_class(RunClass::Interactive)
                .build()
                .expect("team");
            StepsTactic::new(spec.steps().to_vec(), None)
                .run(&team, &PromptVars::new())
                .await
                .expect("the tactic ends");
            started.elapsed().as_secs_f64()
        }
    });
    let ends = futures::future::join_all(runs).await;
    (ends, started.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() {
    let counts: Vec<u64> = std::env::var("LLLM_ADMISSION_TACTICS")
        .unwrap_or_else(|_| "1,2,4,16".into())
        .split(',')
        .map(|n| n.trim().parse().expect("LLLM_ADMISSION_TACTICS: counts"))
        .collect();
    let slots = lllm_bench::env_number("LLLM_ADMISSION_SLOTS", 4);
    let runs = lllm_bench::env_number("LLLM_ADMISSION_RUNS", 3).max(1);
    let service = Duration::from_millis(lllm_bench::env_number("LLLM_ADMISSION_SERVICE_MS", 40));
    let stub = match std::env::var("LLLM_ADMISSION_URL") {
        Ok(_) => None,
        Err(_) => {
            let server = StubServer::start().await.expect("stub");
            server.answer_unscripted(service, None);
            Some(server)
        }
    };
    let url = std::env::var("LLLM_ADMISSION_URL")
        .unwrap_or_else(|_| stub.as_ref().map(StubServer::base_url).unwrap_or_default());
    let legs = counts
        .iter()
        .flat_map(|&n| [(n, "fcfs", ""), (n, "auto", ", priority: auto")]);
    for (tactics, leg, priority) in legs {
        let mut results = Vec::new();
        for _ in 0..runs {
            results.push(run_once(&url, tactics, slots, priority).await);
            if let Some(server) = &stub {
                server.clear_requests();
            }
        }
        results.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (ends, makespan) = &results[results.len() / 2];
        let mean = ends.iter().sum::<f64>() / ends.len().max(1) as f64;
        println!(
            "{}",
            json!({
                "leg": leg, "target": if stub.is_some() { "stub" } else { "dynamo" },
                "tactics": tactics, "slots": slots, "runs": runs,
                "service_ms": stub.as_ref().map(|_| service.as_millis() as u64),
                "makespan_s": makespan, "mean_finish_s": mean,
                "requests_per_tactic": SHORT_BRANCHES + LONG_TURNS + 2,
            })
        );
    }
}
