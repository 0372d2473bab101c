//! A batch on NATS JetStream against a local batch: items per second with 1, 2 and 4 workers
//! (each running 8 items at a time), and what the queue and the JetStream journal add to each item
//! when items run one at a time. Everything in this process: a stub server with a fixed service
//! time, a nats-server of its own (`LLLM_NATS_SERVER`), the workers as tasks.
//!
//! Env: LLLM_NATS_SERVER (required), LLLM_QUEUE_ITEMS (default 400), LLLM_QUEUE_SERVICE_MS
//! (default 20). Prints one JSON object.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_runtime::batch::{BatchItem, BatchOutput, BatchPlan};
use lllm_runtime::config::PromptVars;
use lllm_runtime::engine::PreparedTactic;
use lllm_runtime::hints::RunClass;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::queue::{
    collect, enqueue, run_worker, Attempts, InFlight, QueueAddress, TacticSha, WorkerPlan,
};
use lllm_runtime::testing::{NatsServer, StubServer};
use lllm_runtime::{load_tactic, Engine, OpenAiInvoker, TacticRegistry};
use serde_json::json;

/// Items each worker (and the local batch) runs at a time.
const CONCURRENCY: usize = 8;

fn items(count: usize, tag: &str) -> Vec<BatchItem> {
    (0..count)
        .map(|i| BatchItem {
            id: format!("{tag}-{i}"),
            id_json: serde_json::value::RawValue::from_string(format!("\"{tag}-{i}\""))
                .expect("json"),
            input: Some(format!("question {i}")),
            vars: PromptVars::new(),
        })
        .collect()
}

/// Seconds for a local batch of `items` at `concurrency`.
async fn local(
    engine: &Engine,
    tactic: &PreparedTactic,
    items: Vec<BatchItem>,
    dir: &Path,
    concurrency: usize,
) -> f64 {
    let output =
        BatchOutput::open(&dir.join(format!("local-{concurrency}.jsonl"))).expect("output");
    let mut plan = BatchPlan::default();
    plan.concurrency = concurrency;
    let started = Instant::now();
    let report = engine
        .batch(tactic, items, &plan, &output, &|_| {})
        .await
        .expect("batch");
    assert_eq!(report.answered, report.run, "every item answered");
    started.elapsed().as_secs_f64()
}

/// What one queued batch needs.
struct Queued<'a> {
    engine: &'a Engine,
    tactic: &'a PreparedTactic,
    sha: &'a TacticSha,
    dir: &'a Path,
    nats: &'a NatsServer,
}

impl Queued<'_> {
    /// Seconds from enqueueing `items` to the last result, with `workers` workers of `concurrency`.
    async fn run(
        &self,
        name: &str,
        items: Vec<BatchItem>,
        workers: usize,
        concurrency: usize,
    ) -> f64 {
        let address: QueueAddress = self.nats.queue(name).parse().expect("address");
        let output = BatchOutput::open(&self.dir.join(format!("{name}.jsonl"))).expect("output");
        let attempts = Attempts::new(
            self.sha.clone(),
            &items,
            &HashMap::new(),
            &PromptVars::new(),
        );
        let stop = AtomicBool::new(false);
        let stopping = || stop.load(Ordering::SeqCst);
        let plans: Vec<WorkerPlan> = (0..workers)
            .map(|w| WorkerPlan {
                concurrency,
                class: RunClass::Batch,
                journals: self.dir.join(format!("{name}-journals-{w}")),
                ack_wait: Duration::from_secs(30),
                in_flight: InFlight::default(),
            })
            .collect();
        let started = Instant::now();
        enqueue(&address, &attempts).await.expect("enqueued");
        let runs = plans.iter().map(|plan| {
            run_worker(
                self.engine,
                self.tactic,
                self.sha,
                &address,
                plan,
                &stopping,
            )
        });
        let collecting = async {
            let collected = collect(&address, &attempts, &output, &|_| {}).await;
            let seconds = started.elapsed().as_secs_f64();
            stop.store(true, Ordering::SeqCst);
            (collected, seconds)
        };
        let (_, (collected, seconds)) = tokio::join!(futures::future::join_all(runs), collecting);
        let collected = collected.expect("collected");
        assert_eq!(collected.failed, 0, "every item answered");
        seconds
    }
}

#[tokio::main]
async fn main() {
    let count = lllm_bench::env_number("LLLM_QUEUE_ITEMS", 400) as usize;
    let service = Duration::from_millis(lllm_bench::env_number("LLLM_QUEUE_SERVICE_MS", 20));
    let dir = std::env::temp_dir().join(format!("lllm-bench-queue-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let nats = NatsServer::start("queue benchmark", &dir.join("store"))
        .expect("LLLM_NATS_SERVER is required");
    let stub = StubServer::start().await.expect("stub");
    stub.answer_unscripted(service, None);
    let file = dir.join("t.yaml");
    std::fs::write(
        &file,
        format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: You answer., max_call_retries: 0, model_args: {{api_base: \"{}\"}}}}\n",
            stub.base_url()
        ),
    )
    .expect("tactic");
    let sha = TacticSha::of(&std::fs::read(&file).expect("tactic"));
    let engine = Engine::new(TacticRegistry::new()).with_invoker(Arc::new(
        OpenAiInvoker::with_defaults(ServerDefaults::none()),
    ));
    let tactic = engine
        .prepare(load_tactic(&file).expect("tactic"))
        .await
        .expect("prepared");
    let queued = Queued {
        engine: &engine,
        tactic: &tactic,
        sha: &sha,
        dir: &dir,
        nats: &nats,
    };

    let local_parallel = local(&engine, &tactic, items(count, "lp"), &dir, CONCURRENCY).await;
    let mut workers = Vec::new();
    for n in [1usize, 2, 4] {
        let seconds = queued
            .run(
                &format!("w{n}"),
                items(count, &format!("w{n}")),
                n,
                CONCURRENCY,
            )
            .await;
        workers.push(
            json!({"workers": n, "seconds": seconds, "items_per_second": count as f64 / seconds}),
        );
    }
    let serial = count.min(100);
    let local_serial = local(&engine, &tactic, items(serial, "ls"), &dir, 1).await;
    let queue_serial = queued.run("serial", items(serial, "qs"), 1, 1).await;
    println!(
        "{}",
        json!({
            "items": count, "service_ms": service.as_millis() as u64, "concurrency": CONCURRENCY,
            "local_items_per_second": count as f64 / local_parallel,
            "workers": workers,
            "serial_items": serial,
            "local_ms_per_item": 1000.0 * local_serial / serial as f64,
            "queue_ms_per_item": 1000.0 * queue_serial / serial as f64,
        })
    );
    tactic.shutdown().await;
    drop(nats);
    std::fs::remove_dir_all(&dir).ok();
}
