//! The queue against hostile messages on a real NATS server with JetStream: garbage and foreign
//! items, an item too large to publish, forged results and a forged journal. The worker and the
//! batch's collector go on; each item gets one result, and a journal that cannot be resumed is a
//! clear failure of its item, not a crash. (`lllm batch --queue` and `lllm worker` end to end:
//! lllm-cli's `queue` tests.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::TempDir;
use lllm_runtime::batch::{BatchItem, BatchOutput};
use lllm_runtime::config::PromptVars;
use lllm_runtime::hints::RunClass;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::queue::{
    collect, enqueue, run_worker, Attempts, InFlight, QueueAddress, TacticSha, WorkerPlan,
};
use lllm_runtime::testing::{NatsServer, StubServer};
use lllm_runtime::{load_tactic, Engine, OpenAiInvoker, TacticRegistry};
use serde_json::Value;

fn item(id: &str) -> BatchItem {
    BatchItem {
        id: id.to_owned(),
        id_json: serde_json::value::RawValue::from_string(format!("\"{id}\"")).expect("json"),
        input: Some(format!("question {id}")),
        vars: PromptVars::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_items_results_and_journals_leave_one_sane_result_per_item() {
    let dir = TempDir::new("queue-hostile");
    let Some(nats) = NatsServer::start("queue-hostile", &dir.0.join("store")) else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    let file = dir.write(
        "t.yaml",
        &format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: You answer., max_call_retries: 0, model_args: {{api_base: \"{}\"}}}}\n",
            server.base_url()
        ),
    );
    let sha = TacticSha::of(&std::fs::read(&file).expect("tactic"));
    let address: QueueAddress = nats.queue("hostile").parse().expect("address");
    let engine = Engine::new(TacticRegistry::new()).with_invoker(Arc::new(
        OpenAiInvoker::with_defaults(ServerDefaults::none()),
    ));
    let tactic = engine
        .prepare(load_tactic(&file).expect("tactic"))
        .await
        .expect("prepared");

    // Hostile messages first, straight on the subjects.
    let client = async_nats::connect(address.server()).await.expect("client");
    let js = async_nats::jetstream::new(client);
    let attempts = |items: &[BatchItem]| {
        Attempts::new(sha.clone(), items, &HashMap::new(), &PromptVars::new())
    };
    enqueue(&address, &attempts(&[]))
        .await
        .expect("the streams exist");
    // On this tactic's subject, where its workers read (lllm publishes nothing elsewhere).
    let items = format!("lllm.hostile.items.{sha}");
    for garbage in [
        "not json",
        r#"{"id": 5}"#,
        r#"{"id":"x","id_json":"\"x\"","vars":{},"tactic":"0000"}"#,
    ] {
        js.publish(items.clone(), garbage.into())
            .await
            .expect("published")
            .await
            .expect("stored");
    }
    let huge = vec![b'x'; 2 << 20];
    let refused = match js.publish(items.clone(), huge.into()).await {
        Ok(ack) => ack.await.is_err(),
        Err(_) => true,
    };
    assert!(refused, "a message over the limit is refused");
    let results = format!("lllm.hostile.results.{}", &sha.as_str()[..16]);
    for forged in ["{not json", r#"{"id":"stranger","output":"x","seconds":0}"#] {
        js.publish(results.clone(), forged.into())
            .await
            .expect("published")
            .await
            .expect("stored");
    }
    // A journal for "forged" that is not a journal.
    let batch = attempts(&[item("good"), item("forged")]);
    let key = &batch.key("forged").expect("forged")[..32];
    js.publish(
        format!("lllm.hostile.journal.{key}"),
        "{\"not\": \"a journal\"}\n".into(),
    )
    .await
    .expect("published")
    .await
    .expect("stored");

    enqueue(&address, &batch).await.expect("enqueued");
    let stop = AtomicBool::new(false);
    let plan = WorkerPlan {
        concurrency: 2,
        class: RunClass::Batch,
        journals: dir.0.join("journals"),
        ack_wait: Duration::from_secs(5),
        in_flight: InFlight::default(),
    };
    let output_path = dir.0.join("out.jsonl");
    let output = BatchOutput::open(&output_path).expect("output");
    let stopping = || stop.load(Ordering::SeqCst);
    let worker = run_worker(&engine, &tactic, &sha, &address, &plan, &stopping);
    let collecting = async {
        let collected = tokio::time::timeout(
            Duration::from_secs(60),
            collect(&address, &batch, &output, &|_| {}),
        )
        .await;
        stop.store(true, Ordering::SeqCst);
        collected
    };
    let (report, collected) = tokio::join!(worker, collecting);
    let collected = collected.expect("in time").expect("collected");
    assert_eq!((collected.answered, collected.failed), (1, 1));
    let report = report.expect("the worker ends");
    assert_eq!(report.refused, 1, "the item of another tactic");
    let lines: Vec<Value> = std::fs::read_to_string(&output_path)
        .expect("output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a line"))
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "one line per item, nothing forged: {lines:?}"
    );
    let good = lines.iter().find(|l| l["id"] == "good").expect("good");
    assert!(good["output"]
        .as_str()
        .is_some_and(|o| o.contains("question good")));
    let forged = lines.iter().find(|l| l["id"] == "forged").expect("forged");
    assert!(
        forged["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot be resumed")),
        "{forged}"
    );
    tactic.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_made_by_an_earlier_release_is_refused_saying_what_to_do() {
    let dir = TempDir::new("queue-earlier");
    let Some(nats) = NatsServer::start("queue-earlier", &dir.0.join("store")) else {
        return;
    };
    let address: QueueAddress = nats.queue("old").parse().expect("address");
    // The items stream as releases before the per-tactic subjects made it.
    let client = async_nats::connect(address.server()).await.expect("client");
    async_nats::jetstream::new(client)
        .create_stream(async_nats::jetstream::stream::Config {
            name: "LLLM_old_ITEMS".into(),
            subjects: vec!["lllm.old.items".into()],
            retention: async_nats::jetstream::stream::RetentionPolicy::WorkQueue,
            ..Default::default()
        })
        .await
        .expect("stream");
    let sha = TacticSha::of(b"agent_configs: []");
    let attempts = Attempts::new(sha, &[item("a")], &HashMap::new(), &PromptVars::new());
    let error = enqueue(&address, &attempts)
        .await
        .expect_err("an earlier layout");
    let message = error.to_string();
    assert!(
        message.contains("earlier release") && message.contains("nats stream rm LLLM_old_ITEMS"),
        "{message}"
    );
}
