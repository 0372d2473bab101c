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
    load_tactic, Agent, Engine, InferenceHints, ModelArgs, OpenAiInvoker, Profile, RunPlan,
    TacticRegistry,
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

/// Every ordered pair of profiles, the agent's and its fallback's: the agent's hints hold every
/// field its own profile can send, whatever the fallback can carry. The primary must run with all
/// of them, and a hop must send the fallback's shape and nothing of the primary's.
mod fallback_profiles {
    use super::*;
    use lllm_runtime::testing::RecordedRequest;
    use serde_json::{Map, Value};
    use Profile::{Dynamo, OpenAi, Sglang, Vllm};

    /// Hints of `profile` with every field it can send set.
    fn full_hints(profile: Profile) -> InferenceHints {
        let builder = InferenceHints::builder().profile(profile);
        let builder = match profile {
            Dynamo => builder
                .priority(3)
                .strict_priority(2)
                .osl(64)
                .speculative_prefill(true)
                .cache_salt("tenant-a"),
            Vllm => builder.priority(3).cache_salt("tenant-a"),
            Sglang => builder.priority(3),
            OpenAi => builder,
        };
        builder.build().expect("valid for its own profile")
    }

    /// What a request to a `to` endpoint carries of `full_hints(from)`, written out by hand from
    /// each server's documented fields (not read from lllm's tables).
    fn expected_hints(from: Profile, to: Profile) -> Value {
        let priority = from != OpenAi;
        let salt = matches!(from, Dynamo | Vllm);
        let mut body = Map::new();
        match to {
            Dynamo => {
                let mut agent_hints = Map::new();
                if priority {
                    agent_hints.insert("priority".into(), json!(3));
                }
                if from == Dynamo {
                    agent_hints.insert("strict_priority".into(), json!(2));
                    agent_hints.insert("speculative_prefill".into(), json!(true));
                }
                // Without an `osl` of its own, Dynamo's defaults to the request's max_tokens.
                let osl = if from == Dynamo { 64 } else { 8 };
                agent_hints.insert("osl".into(), json!(osl));
                let mut nvext = Map::new();
                nvext.insert("agent_hints".into(), Value::Object(agent_hints));
                if salt {
                    nvext.insert("cache_salt".into(), json!("tenant-a"));
                }
                body.insert("nvext".into(), Value::Object(nvext));
            }
            Vllm => {
                if priority {
                    // vLLM runs lower values first.
                    body.insert("priority".into(), json!(-3));
                }
                if salt {
                    body.insert("cache_salt".into(), json!("tenant-a"));
                }
            }
            Sglang => {
                if priority {
                    body.insert("priority".into(), json!(3));
                }
            }
            OpenAi => {}
        }
        Value::Object(body)
    }

    /// The body fields of `request` beyond the standard ones lllm always writes here.
    fn hint_part(request: &RecordedRequest) -> Value {
        let mut body = request.body.as_object().cloned().unwrap_or_default();
        for standard in [
            "model",
            "messages",
            "max_tokens",
            "stream",
            "stream_options",
        ] {
            body.remove(standard);
        }
        Value::Object(body)
    }

    fn session_header(profile: Profile) -> &'static str {
        match profile {
            Dynamo => "x-dynamo-session-id",
            _ => "x-session-id",
        }
    }

    async fn pair(from: Profile, to: Profile) {
        let (primary, spare) = (
            StubServer::start().await.expect("stub"),
            StubServer::start().await.expect("stub"),
        );
        let args = ModelArgs::new()
            .api_base(primary.base_url())
            .max_tokens(8)
            .fallback(Fallback::new(spare.base_url()).profile(to));
        let agent = Agent::builder()
            .name("worker")
            .system_prompt("You work.")
            .model("m")
            .invoker(invoker())
            .model_args(args)
            .inference_hints(full_hints(from))
            .build()
            .expect("agent");
        agent.open("main").expect("open");
        // The primary answers: its hints its fallback cannot carry do not stop it.
        agent.receive("first").expect("receive");
        agent.respond("main").await.expect("the primary answers");
        let sent = &primary.requests()[0];
        assert_eq!(
            hint_part(sent),
            expected_hints(from, from),
            "{from}: primary"
        );
        let session = sent
            .header(session_header(from))
            .expect("session")
            .to_owned();
        assert!(spare.requests().is_empty());
        // The primary is overloaded: the call hops, with the fallback's shape only.
        primary.push(StubReply::error(503, "overloaded"));
        agent.receive("second").expect("receive");
        agent.respond("main").await.expect("the fallback answers");
        let hopped = &spare.requests()[0];
        assert_eq!(
            hint_part(hopped),
            expected_hints(from, to),
            "{from} to {to}: {}",
            hopped.body
        );
        assert_eq!(hopped.header(session_header(to)), Some(session.as_str()));
        if session_header(to) != session_header(from) {
            assert_eq!(hopped.header(session_header(from)), None, "{from} to {to}");
        }
        assert_eq!(agent.call_stats().fallback_answers, 1);
    }

    macro_rules! pairs {
        ($($name:ident: $from:ident => $to:ident,)*) => {$(
            #[tokio::test]
            async fn $name() {
                pair($from, $to).await;
            }
        )*};
    }

    pairs! {
        dynamo_to_dynamo: Dynamo => Dynamo,
        dynamo_to_vllm: Dynamo => Vllm,
        dynamo_to_sglang: Dynamo => Sglang,
        dynamo_to_openai: Dynamo => OpenAi,
        vllm_to_dynamo: Vllm => Dynamo,
        vllm_to_vllm: Vllm => Vllm,
        vllm_to_sglang: Vllm => Sglang,
        vllm_to_openai: Vllm => OpenAi,
        sglang_to_dynamo: Sglang => Dynamo,
        sglang_to_vllm: Sglang => Vllm,
        sglang_to_sglang: Sglang => Sglang,
        sglang_to_openai: Sglang => OpenAi,
        openai_to_dynamo: OpenAi => Dynamo,
        openai_to_vllm: OpenAi => Vllm,
        openai_to_sglang: OpenAi => Sglang,
        openai_to_openai: OpenAi => OpenAi,
    }
}

#[tokio::test]
async fn two_engines_in_one_process_keep_separate_breakers() {
    let dir = TempDir::new("two-engines");
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.answer_unscripted(Duration::ZERO, Some(StubReply::error(503, "down")));
    let path = batch_tactic(&dir, &primary, &spare);
    let first = Engine::new(TacticRegistry::new()).with_invoker(invoker());
    let second = Engine::new(TacticRegistry::new()).with_invoker(invoker());
    let run = |engine: &Engine| {
        let engine = engine.clone();
        let path = path.clone();
        async move {
            let tactic = engine
                .prepare(load_tactic(&path).expect("tactic"))
                .await
                .expect("prepared");
            let output = engine
                .run(&tactic, RunPlan::new().input("hello"))
                .await
                .expect("the fallback answers");
            assert_eq!(output.answer, "stub answer to: hello");
            tactic.shutdown().await;
        }
    };
    // Three failures open the first engine's circuit of the primary; its next run skips it.
    for _ in 0..4 {
        run(&first).await;
    }
    assert_eq!(primary.requests().len(), 3, "the open circuit skips it");
    // The second engine has seen no failure of that URL: it sends there first.
    run(&second).await;
    assert_eq!(
        primary.requests().len(),
        4,
        "another engine's circuit is its own"
    );
    assert_eq!(spare.requests().len(), 5);
}
