//! Admission per endpoint (`model_args.max_in_flight`) against a local stub with a fixed service
//! time: the bound holds for the whole process, nested fan-out cannot deadlock on it, and waiting
//! requests are released by priority under `priority: auto`, in order of arrival without it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lllm_runtime::config::{parse_tactic, PromptVars};
use lllm_runtime::hints::RunClass;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::{StepsTactic, Team};
use lllm_runtime::testing::StubServer;
use lllm_runtime::{tool_fn, Agent, InferenceHints, ModelArgs, OpenAiInvoker, Profile, Tactic};

use crate::support::last_user;

fn invoker() -> Arc<OpenAiInvoker> {
    Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()))
}

fn limited(server: &StubServer, slots: u32) -> ModelArgs {
    let mut args = ModelArgs::new().api_base(server.base_url()).max_tokens(8);
    args.endpoint.max_in_flight = Some(slots);
    args
}

fn hints() -> InferenceHints {
    InferenceHints::builder()
        .profile(Profile::Dynamo)
        .build()
        .expect("hints")
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_two_forks_of_three_turns_never_have_more_than_two_requests_in_flight() {
    let server = StubServer::start().await.expect("stub");
    server.answer_unscripted(Duration::from_millis(10), None);
    let agent = Agent::builder()
        .name("lead")
        .system_prompt("You split work.")
        .model("m")
        .invoker(invoker())
        .model_args(limited(&server, 2))
        .inference_hints(hints())
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    let forks: Vec<String> = (0..32).map(|i| format!("f{i}")).collect();
    for fork in &forks {
        agent.fork("main", fork).expect("fork");
    }
    let branches = forks.iter().map(|fork| {
        let agent = &agent;
        async move {
            for turn in 0..3 {
                agent
                    .receive_in(fork, format!("{fork} turn {turn}"))
                    .expect("receive");
                agent.respond(fork).await.expect("answer");
            }
        }
    });
    futures::future::join_all(branches).await;
    assert_eq!(server.requests().len(), 96);
    assert_eq!(
        server.most_in_flight(),
        2,
        "the limit is used and never passed"
    );
    assert!(!agent.call_stats().queue_wait.is_zero(), "requests waited");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ask {
    question: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_runs_a_subagent_on_the_same_endpoint_does_not_deadlock_under_one_slot() {
    let server = StubServer::start().await.expect("stub");
    let helper = Arc::new(
        Agent::builder()
            .name("helper")
            .system_prompt("You help.")
            .model("m")
            .invoker(invoker())
            .model_args(limited(&server, 1))
            .build()
            .expect("helper"),
    );
    let nested = helper.clone();
    let lead = Agent::builder()
        .name("lead")
        .system_prompt("You delegate.")
        .model("m")
        .invoker(invoker())
        .model_args(limited(&server, 1))
        .tool(tool_fn("ask_helper", "Asks the helper", move |a: Ask| {
            let helper = nested.clone();
            async move {
                let alias = format!("q{}", fastrand::u32(..));
                helper.open(&alias).map_err(|e| e.to_string())?;
                helper
                    .receive_in(&alias, a.question)
                    .map_err(|e| e.to_string())?;
                let answer = helper.respond(&alias).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(answer.text().to_owned())
            }
        }))
        .build()
        .expect("lead");
    server.push(lllm_runtime::testing::StubReply::tool_calls(&[(
        "c1",
        "ask_helper",
        r#"{"question": "what is two and two"}"#,
    )]));
    lead.open("main").expect("open");
    lead.receive("delegate").expect("receive");
    let answer = tokio::time::timeout(Duration::from_secs(10), lead.respond("main"))
        .await
        .expect("no deadlock: the lead's slot is free while its tool runs")
        .expect("answer");
    assert!(
        answer.text().starts_with("stub answer to:"),
        "{}",
        answer.text()
    );
    assert_eq!(server.requests().len(), 3, "lead, helper, lead again");
    assert_eq!(server.most_in_flight(), 1);
}

/// Seven short branches, then a long one (three turns), all forked from the plan.
fn tactic(server: &StubServer, priority: &str) -> lllm_runtime::TacticSpec {
    let mut branches = String::new();
    for i in 1..=7 {
        branches.push_str(&format!(
            "      - {{agent: lead, dialog: s{i}, fork_from: main, receive: Short {i}.}}\n"
        ));
    }
    let text = format!(
        "global:
  model_name: m
  model_args: {{api_base: \"{}\", max_tokens: 8, max_in_flight: 1}}
  inference_hints: {{profile: dynamo{priority}}}
agent_configs:
  - {{name: lead, system_prompt: You lead.}}
steps:
  - {{agent: lead, receive: Plan.}}
  - parallel:
{branches}      - steps:
          - {{agent: lead, dialog: long, fork_from: main, receive: Long 1.}}
          - {{agent: lead, dialog: long, receive: Long 2.}}
          - {{agent: lead, dialog: long, receive: Long 3.}}
",
        server.base_url()
    );
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("valid tactic")
}

/// The order in which the first turns of the parallel group reached the server.
async fn first_turns_served(priority: &str) -> Vec<String> {
    let server = StubServer::start().await.expect("stub");
    server.answer_unscripted(Duration::from_millis(30), None);
    let spec = tactic(&server, priority);
    let team = Team::builder(&spec)
        .invoker(invoker())
        .run_class(RunClass::Interactive)
        .build()
        .expect("team");
    StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team, &PromptVars::new())
        .await
        .expect("the run ends");
    server
        .requests()
        .iter()
        .map(last_user)
        .filter(|a| a.starts_with("Short") || a == "Long 1.")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn under_auto_the_long_branch_goes_first_and_without_it_in_order_of_arrival() {
    let auto = first_turns_served(", priority: auto").await;
    assert_eq!(auto.len(), 8, "{auto:?}");
    let long = auto.iter().position(|a| a == "Long 1.").expect("long");
    // The first request to arrive finds the slot free; the long branch is next.
    assert!(long <= 1, "Long 1 served {}th: {auto:?}", long + 1);
    let plain = first_turns_served("").await;
    let expected: Vec<String> = (1..=7)
        .map(|i| format!("Short {i}."))
        .chain(["Long 1.".to_owned()])
        .collect();
    assert_eq!(plain, expected, "first come, first served");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nap {
    id: u32,
}

/// The most tool calls of one answer that ran at the same time, under `max_parallel_tools`.
async fn most_tools_at_once(parallel: Option<u32>) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = StubServer::start().await.expect("stub");
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (now_in, most_in) = (now.clone(), most.clone());
    let mut builder = Agent::builder()
        .name("worker")
        .system_prompt("You work.")
        .model("m")
        .invoker(invoker())
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .tool(tool_fn("nap", "Naps", move |a: Nap| {
            let (now, most) = (now_in.clone(), most_in.clone());
            async move {
                let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(running, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, String>(format!("napped {}", a.id))
            }
        }));
    if let Some(n) = parallel {
        builder = builder.max_parallel_tools(n);
    }
    let agent = builder.build().expect("agent");
    let calls: Vec<(String, String)> = (0..4)
        .map(|i| (format!("c{i}"), format!(r#"{{"id": {i}}}"#)))
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "nap", args.as_str()))
        .collect();
    server.push(lllm_runtime::testing::StubReply::tool_calls(&calls));
    agent.open("main").expect("open");
    agent.receive("nap four times").expect("receive");
    agent.respond("main").await.expect("answer");
    most.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread")]
async fn max_parallel_tools_bounds_the_calls_of_one_answer_running_at_once() {
    assert_eq!(
        most_tools_at_once(None).await,
        4,
        "the default runs all four at once"
    );
    assert_eq!(most_tools_at_once(Some(2)).await, 2);
    assert_eq!(most_tools_at_once(Some(1)).await, 1, "one after the other");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_spelling_of_one_endpoint_shares_its_one_slot() {
    let server = StubServer::start().await.expect("stub");
    server.answer_unscripted(Duration::from_millis(20), None);
    // The stub's own address, written four ways: one server, so one `max_in_flight: 1`.
    let port = server
        .base_url()
        .rsplit(':')
        .next()
        .and_then(|tail| tail.split('/').next())
        .expect("port")
        .to_owned();
    let spellings = [
        format!("http://localhost:{port}/v1"),
        format!("http://localhost:{port}/v1/"),
        format!("HTTP://localhost:{port}/v1"),
        format!("http://LocalHost:{port}/v1"),
    ];
    let agents: Vec<Agent> = spellings
        .iter()
        .enumerate()
        .map(|(i, base)| {
            let mut args = ModelArgs::new().api_base(base.clone()).max_tokens(8);
            args.endpoint.max_in_flight = Some(1);
            Agent::builder()
                .name(format!("a{i}"))
                .system_prompt("You answer.")
                .model("m")
                .invoker(invoker())
                .model_args(args)
                .build()
                .expect("agent")
        })
        .collect();
    // Four requests per spelling, all released together.
    let calls = agents.iter().flat_map(|agent| {
        (0..4).map(move |n| async move {
            let alias = format!("d{n}");
            agent.open(&alias).expect("open");
            agent.receive_in(&alias, format!("q{n}")).expect("receive");
            agent.respond(&alias).await.expect("answer");
        })
    });
    futures::future::join_all(calls).await;
    assert_eq!(server.requests().len(), 16);
    assert_eq!(
        server.most_in_flight(),
        1,
        "one slot for every spelling of the endpoint"
    );
}
