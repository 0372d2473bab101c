//! Fallback endpoints and the circuit breaker on the wire: local stub servers stand for the
//! endpoints and record what each receives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::TempDir;
use lllm_runtime::agent::StreamEvent;
use lllm_runtime::batch::{BatchItem, BatchOutput, BatchPlan};
use lllm_runtime::config::Fallback;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::{StubReply, StubServer};
use lllm_runtime::{
    load_tactic, Agent, Engine, InferenceHints, ModelArgs, OpenAiInvoker, Profile, TacticRegistry,
};
use serde_json::json;

fn invoker() -> Arc<OpenAiInvoker> {
    Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()))
}

/// An agent on `primary` with `fallbacks`, Dynamo hints with a written priority.
fn agent(primary: &StubServer, fallbacks: Vec<Fallback>) -> Agent {
    let mut args = ModelArgs::new().api_base(primary.base_url()).max_tokens(8);
    args.fallback = fallbacks;
    Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("big")
        .invoker(invoker())
        .model_args(args)
        .inference_hints(
            InferenceHints::builder()
                .profile(Profile::Dynamo)
                .priority(5)
                .build()
                .expect("hints"),
        )
        .build()
        .expect("agent")
}

fn rate_limited(retry_after: &str) -> StubReply {
    StubReply::error(429, "slow down").header("retry-after", retry_after)
}

#[tokio::test]
async fn a_long_retry_after_falls_back_at_once_with_its_model_and_the_same_session() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.push(rate_limited("120"));
    let agent = agent(
        &primary,
        vec![Fallback::new(spare.base_url()).model("small")],
    );
    agent.open("main").expect("open");
    agent.receive("hello").expect("receive");
    let started = Instant::now();
    let answer = agent.respond("main").await.expect("the fallback answers");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer.text(), "stub answer to: hello");
    let (first, second) = (&primary.requests()[0], &spare.requests()[0]);
    assert_eq!(primary.requests().len(), 1);
    assert_eq!(second.body["model"], "small");
    assert_eq!(first.body["model"], "big");
    let session = first.header("x-dynamo-session-id").expect("session");
    assert_eq!(second.header("x-dynamo-session-id"), Some(session));
    assert_eq!(second.body["nvext"]["agent_hints"]["priority"], 5);
    let stats = agent.call_stats();
    assert_eq!((stats.fallback_answers, stats.hops), (1, 1));
    assert_eq!(stats.answered_by.get(&spare.base_url()), Some(&1));
}

#[tokio::test]
async fn a_short_retry_after_is_waited_for_and_the_same_endpoint_retried() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.push(rate_limited("1"));
    let agent = agent(&primary, vec![Fallback::new(spare.base_url())]);
    agent.open("main").expect("open");
    agent.receive("hello").expect("receive");
    let started = Instant::now();
    agent
        .respond("main")
        .await
        .expect("answered after the wait");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(primary.requests().len(), 2);
    assert!(spare.requests().is_empty(), "the fallback is never called");
    assert_eq!(agent.call_stats().fallback_answers, 0);
}

#[tokio::test]
async fn overload_and_a_dead_endpoint_move_on_and_each_endpoint_gets_its_profiles_hints() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.push(StubReply::error(503, "overloaded"));
    // A port nothing listens on: the connection is refused.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let dead_url = format!("http://{}/v1", dead.local_addr().expect("addr"));
    drop(dead);
    let agent = agent(
        &primary,
        vec![
            Fallback::new(dead_url),
            Fallback::new(spare.base_url()).profile(Profile::Vllm),
        ],
    );
    agent.open("main").expect("open");
    agent.receive("hello").expect("receive");
    agent
        .respond("main")
        .await
        .expect("the last endpoint answers");
    let sent = &spare.requests()[0];
    // vLLM runs lower values first: the priority is negated there, and nothing of Dynamo's is sent.
    assert_eq!(sent.body["priority"], -5, "{}", sent.body);
    assert!(sent.body.get("nvext").is_none(), "{}", sent.body);
    assert_eq!(agent.call_stats().hops, 2);
}

#[tokio::test]
async fn client_errors_never_fall_back() {
    for (status, words) in [(401, "401"), (400, "400")] {
        let (primary, spare) = (
            StubServer::start().await.expect("stub"),
            StubServer::start().await.expect("stub"),
        );
        primary.push(StubReply::error(status, "no"));
        let agent = agent(&primary, vec![Fallback::new(spare.base_url())]);
        agent.open("main").expect("open");
        agent.receive("hello").expect("receive");
        let error = agent.respond("main").await.expect_err("refused");
        assert!(lllm_core::full_message(&error).contains(words), "{error}");
        assert!(spare.requests().is_empty(), "{status} went to the fallback");
        assert_eq!(
            agent.dialog("main").expect("dialog").len(),
            2,
            "the dialog is as it was"
        );
    }
}

#[tokio::test]
async fn a_stream_that_broke_after_its_first_delta_is_not_sent_elsewhere() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.push(StubReply::sse_cut(&[
        json!({"choices": [{"index": 0, "delta": {"content": "Half an ans"}}]}),
    ]));
    let agent = agent(&primary, vec![Fallback::new(spare.base_url())]);
    agent.open("main").expect("open");
    agent.receive("hello").expect("receive");
    let mut shown = String::new();
    let error = agent
        .respond_to("main")
        .stream(&mut |event| {
            if let StreamEvent::Text(piece) = event {
                shown.push_str(piece);
            }
        })
        .await
        .expect_err("the stream broke");
    assert_eq!(shown, "Half an ans");
    assert!(
        spare.requests().is_empty(),
        "what was shown cannot be taken back"
    );
    assert_eq!(primary.requests().len(), 1);
    let text = lllm_core::full_message(&error);
    assert!(
        text.contains("connection") || text.contains("stream"),
        "{text}"
    );
}

/// A chat tactic on `primary` with `spare` as its fallback, no retries of its own.
fn batch_tactic(dir: &TempDir, primary: &StubServer, spare: &StubServer) -> std::path::PathBuf {
    dir.write(
        "chat.yaml",
        &format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30, fallback: [{{api_base: \"{}\"}}]}}\n  max_call_retries: 0\nagent_configs:\n  - {{name: a, system_prompt: You answer.}}\n",
            primary.base_url(),
            spare.base_url()
        ),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_primary_is_skipped_by_its_circuit_while_the_fallback_answers_a_batch() {
    let dir = TempDir::new("breaker");
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.answer_unscripted(Duration::ZERO, Some(StubReply::error(503, "down")));
    let engine = Engine::new(TacticRegistry::new()).with_invoker(invoker());
    let tactic = engine
        .prepare(load_tactic(&batch_tactic(&dir, &primary, &spare)).expect("tactic"))
        .await
        .expect("prepared");
    let items: Vec<BatchItem> = (0..20)
        .map(|i| BatchItem {
            id: i.to_string(),
            id_json: serde_json::value::RawValue::from_string(i.to_string()).expect("json"),
            input: Some(format!("item {i}")),
            vars: Default::default(),
        })
        .collect();
    let output = BatchOutput::open(&dir.0.join("out.jsonl")).expect("output");
    let mut plan = BatchPlan::default();
    plan.concurrency = 2;
    let report = engine
        .batch(&tactic, items, &plan, &output, &|_| {})
        .await
        .expect("batch");
    assert_eq!((report.answered, report.failed), (20, 0));
    assert_eq!(spare.requests().len(), 20);
    // Three failures open the circuit (two more may have been in flight at that moment); the
    // rest of the batch goes to the fallback without trying the primary.
    let tried = primary.requests().len();
    assert!(
        (3..=5).contains(&tried),
        "the failing primary got {tried} requests"
    );
    tactic.shutdown().await;
}

#[tokio::test]
async fn the_environments_key_never_travels_to_a_fallback() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.push(StubReply::error(503, "overloaded"));
    let mut args = ModelArgs::new().api_base(primary.base_url());
    args.fallback = vec![Fallback::new(spare.base_url())];
    let agent = Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults({
            let mut defaults = ServerDefaults::none();
            defaults.api_key = Some(lllm_runtime::config::Secret::new("sk-environment"));
            defaults
        })))
        .model_args(args)
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("hello").expect("receive");
    agent.respond("main").await.expect("the fallback answers");
    assert_eq!(
        primary.requests()[0].header("authorization"),
        Some("Bearer sk-environment")
    );
    assert_eq!(spare.requests()[0].header("authorization"), None);
}
