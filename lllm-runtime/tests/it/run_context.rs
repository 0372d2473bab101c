//! One run context handed down whole: what a team is given reaches every agent, and the builders
//! refuse the values a tactic file refuses, at `build()`, instead of changing them.

use std::path::Path;
use std::sync::{Arc, Mutex};

use lllm_runtime::agent::AgentErrorKind;
use lllm_runtime::config::{parse_tactic, RunBudget, RunLimits, ValueError};
use lllm_runtime::events::{RunEvent, RunObserver};
use lllm_runtime::hints::RunClass;
use lllm_runtime::serve::{ServeError, Served};
use lllm_runtime::tactic::Team;
use lllm_runtime::testing::ScriptedInvoker;
use lllm_runtime::{Agent, Engine, RunContext, TacticRegistry, TacticSpec};

fn spec(text: &str) -> TacticSpec {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("tactic")
}

const TWO_AGENTS: &str = "agent_configs:\n  - {name: a, model_name: m, system_prompt: A}\n  - {name: b, model_name: m, system_prompt: B}\n";

/// One budget, observer and class given to the team as one context: the first agent's request
/// spends the run's only one, the second is refused by the same budget, and the observer saw the
/// call.
#[tokio::test]
async fn the_context_given_to_a_team_reaches_every_agent() {
    let spec = spec(TWO_AGENTS);
    let invoker = Arc::new(ScriptedInvoker::new().reply("one").reply("two"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let limits = RunLimits {
        max_requests: Some(1),
        ..RunLimits::default()
    };
    let run = RunContext::new()
        .budget(Arc::new(RunBudget::new(limits)))
        .class(RunClass::Batch)
        .observer(RunObserver::new(move |event| {
            if let RunEvent::ModelCall(call) = event {
                sink.lock().expect("lock").push(call.agent.clone());
            }
        }));
    let team = Team::builder(&spec)
        .invoker(invoker.clone())
        .run_context(run)
        .build()
        .expect("team");
    assert_eq!(team.run_class(), RunClass::Batch);
    for agent in team.agents() {
        assert_eq!(agent.run_class(), RunClass::Batch, "{}", agent.name());
        agent.open("main").expect("open");
        agent.receive("go").expect("receive");
    }
    let a = team.agent("a").expect("a");
    assert_eq!(a.respond("main").await.expect("a answers").text(), "one");
    let refused = team
        .agent("b")
        .expect("b")
        .respond("main")
        .await
        .expect_err("the run's budget is spent");
    assert!(
        matches!(
            refused.kind(),
            AgentErrorKind::Limit {
                limit: "max_requests",
                ..
            }
        ),
        "{refused}"
    );
    assert_eq!(invoker.calls().len(), 1);
    assert_eq!(*seen.lock().expect("lock"), ["a"]);
}

fn agent_with_parallel_tools(calls: u32) -> Result<Agent, lllm_runtime::AgentError> {
    Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(ScriptedInvoker::new()))
        .max_parallel_tools(calls)
        .build()
}

/// `max_parallel_tools` takes 1 to 64 from Rust as from a tactic file: 0 and 65 fail `build()`
/// with an error naming the setting (before, they were clamped to 1 and 64).
#[test]
fn the_agent_builder_refuses_the_parallel_tools_a_tactic_file_refuses() {
    for refused in [0, 65] {
        let in_file = format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: s, max_parallel_tools: {refused}}}\n"
        );
        let file_error = parse_tactic(in_file.as_bytes(), Path::new("t.yaml"), &|_| None)
            .expect_err("the file refuses it");
        assert_eq!(
            file_error.field(),
            Some("agent_configs[0] (a).max_parallel_tools")
        );

        let error = agent_with_parallel_tools(refused).expect_err("the builder refuses it");
        assert!(error.is_config(), "{error}");
        match error.kind() {
            AgentErrorKind::Setting {
                setting: "max_parallel_tools",
                problem,
            } => {
                let ValueError::Number { allowed, written } = &**problem else {
                    panic!("{problem:?}")
                };
                assert_eq!(allowed, "a whole number from 1 to 64");
                assert_eq!(written, &format!("`{refused}`"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            lllm_runtime::config::full_message(&error),
            format!("cannot build agent `a`: max_parallel_tools must be a whole number from 1 to 64, not `{refused}`")
        );
    }
    for taken in [1, 64] {
        agent_with_parallel_tools(taken).expect("in range");
    }
}

/// `max_runs` and `max_connections` of 0 would serve nothing: `build()` says so, naming the
/// setting (before, they became 1).
#[tokio::test]
async fn the_served_builder_refuses_zero_runs_and_connections() {
    let engine = Engine::new(TacticRegistry::new());
    let tactic = engine.prepare(spec(TWO_AGENTS)).await.expect("prepared");
    let builder = || Served::builder(engine.clone()).tactic("t", tactic.clone());
    let refused = [
        ("max_runs", builder().max_runs(0).build()),
        ("max_connections", builder().max_connections(0).build()),
    ];
    for (name, built) in refused {
        match built.expect_err("0 is refused") {
            ServeError::Setting { setting, problem } => {
                assert_eq!(setting, name);
                assert_eq!(
                    problem.to_string(),
                    "must be a whole number from 1, not `0`"
                );
            }
            other => panic!("{name}: {other}"),
        }
    }
    builder()
        .max_runs(1)
        .max_connections(1)
        .build()
        .expect("1 is taken");
    tactic.shutdown().await;
}
