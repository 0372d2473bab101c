//! Tactics on the wire: forks name their parent, parallel branches overlap in time, every dialog keeps
//! one session id and different dialogs have different ones.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lllm_runtime::config::parse_tactic;
use lllm_runtime::config::PromptVars;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::{ProgressEvent, StepsTactic};
use lllm_runtime::tactic::{TacticError, Team};
use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use lllm_runtime::{OpenAiInvoker, Tactic, TacticRegistry};
use serde_json::Value;

use crate::support::last_user;

fn tactic(server: &StubServer, steps: &str) -> lllm_runtime::TacticSpec {
    let text = format!(
        "global:
  model_name: dynamo/m
  model_args: {{api_base: \"{}\"}}
  inference_hints: {{profile: dynamo}}
  max_llm_recall: 1
agent_configs:
  - {{name: planner, system_prompt: You plan.}}
  - {{name: critic, system_prompt: You critique.}}
{steps}",
        server.base_url()
    );
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("valid tactic")
}

fn team(spec: &lllm_runtime::TacticSpec) -> Team {
    Team::from_spec(
        spec,
        Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none())),
    )
    .expect("team")
}

fn vars(input: &str) -> PromptVars {
    [("input".to_owned(), Value::from(input))]
        .into_iter()
        .collect()
}

fn by_message(requests: &[RecordedRequest]) -> HashMap<String, RecordedRequest> {
    requests.iter().map(|r| (last_user(r), r.clone())).collect()
}

const ISSUE_EXAMPLE: &str = "steps:
  - agent: planner
    receive: \"Plan: {{ input }}\"
    save: plan
  - agent: planner
    dialog: retry
    fork_from: main
    receive: Find the weakest point of that plan.
    save: critique
  - parallel:
      - {agent: planner, dialog: a, fork_from: main, receive: Do part A of the plan., save: a}
      - {agent: planner, dialog: b, fork_from: main, receive: Do part B of the plan., save: b}
      - {agent: critic, receive: \"Rate this plan: {{ plan }}\", save: rating}
      - steps:
          - {agent: planner, dialog: c, fork_from: main, receive: Draft part C., save: c_draft}
          - {agent: planner, dialog: c, receive: Now polish part C., save: c}
output: \"{{ plan }} | {{ critique }} | {{ rating }} | {{ c }}\"
";

#[tokio::test]
async fn the_issue_example_runs_with_forks_parallel_branches_and_an_output_template() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(&server, ISSUE_EXAMPLE);
    let team = team(&spec);
    let tactic = TacticRegistry::new().create(&spec).expect("steps tactic");
    let answer = tactic.run(&team, &vars("a picnic")).await.expect("runs");
    assert_eq!(
        answer,
        "stub answer to: Plan: a picnic | stub answer to: Find the weakest point of that plan. | stub answer to: Rate this plan: stub answer to: Plan: a picnic | stub answer to: Now polish part C."
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let sent = by_message(&requests);
    let session = |message: &str| {
        sent[message]
            .header("x-dynamo-session-id")
            .map(str::to_owned)
    };
    let parent = |message: &str| {
        sent[message]
            .header("x-dynamo-parent-session-id")
            .map(str::to_owned)
    };
    let planner = team.agent("planner").expect("planner");
    let id = |alias: &str| Some(planner.dialog_id(alias).expect("dialog").to_string());

    assert_eq!(session("Plan: a picnic"), id("main"));
    assert_eq!(parent("Plan: a picnic"), None);
    for (message, alias) in [
        ("Find the weakest point of that plan.", "retry"),
        ("Do part A of the plan.", "a"),
        ("Do part B of the plan.", "b"),
        ("Draft part C.", "c"),
    ] {
        assert_eq!(session(message), id(alias), "{message}");
        assert_eq!(
            parent(message),
            id("main"),
            "a fork names its parent: {message}"
        );
    }
    assert_eq!(
        session("Now polish part C."),
        id("c"),
        "one dialog, one session"
    );
    assert_eq!(parent("Now polish part C."), id("main"));
    let critic = team.agent("critic").expect("critic");
    assert_eq!(
        session("Rate this plan: stub answer to: Plan: a picnic"),
        Some(critic.dialog_id("main").expect("main").to_string())
    );
    let mut sessions: Vec<_> = requests
        .iter()
        .filter_map(|r| r.header("x-dynamo-session-id"))
        .collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), 6, "six dialogs, six session ids");
    // The fork carries its parent's prefix.
    let fork_messages = sent["Do part A of the plan."].body["messages"]
        .as_array()
        .map(Vec::len);
    assert_eq!(fork_messages, Some(4));
}

#[tokio::test]
async fn parallel_branches_are_in_flight_at_the_same_time() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(
        &server,
        "steps:
  - {agent: planner, receive: lead}
  - parallel:
      - {agent: planner, dialog: a, fork_from: main, receive: one}
      - {agent: planner, dialog: b, fork_from: main, receive: two}
      - {agent: critic, receive: three}
      - steps:
          - {agent: planner, dialog: c, fork_from: main, receive: four}
          - {agent: planner, dialog: c, receive: five}
",
    );
    server.push(StubReply::text("lead answer"));
    // one, two, three and four are answered only once all four are in the server together.
    for _ in 0..4 {
        server.push(StubReply::text("branch answer").together(4));
    }
    server.push(StubReply::text("five answer"));
    let team = team(&spec);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let team = team.on_progress(move |p| {
        if let ProgressEvent::Started = p.event {
            seen.lock().expect("lock").push(p.step.to_owned());
        }
    });
    StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team, &PromptVars::new())
        .await
        .expect("runs: every branch was answered, so all four were in flight together");
    assert_eq!(server.most_in_flight(), 4);
    // The sequence inside a branch waits: five is sent with four's answer in its dialog.
    let sent = by_message(&server.requests());
    let five = sent["five"].body["messages"].as_array().expect("messages");
    assert_eq!(
        five[five.len() - 2],
        serde_json::json!({"role": "assistant", "content": "branch answer"})
    );
    assert_eq!(events.lock().expect("lock").len(), 6);
}

#[tokio::test]
async fn a_failing_step_fails_the_run_and_missing_variables_name_themselves() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(
        &server,
        "steps:\n  - {agent: planner, receive: \"{{ topic }}\"}\n",
    );
    let err = StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team(&spec), &PromptVars::new())
        .await
        .expect_err("missing variable");
    assert!(err.is_usage());
    assert!(
        lllm_core::full_message(&err).contains("uses the variable `topic`"),
        "{err}"
    );

    for _ in 0..2 {
        server.push(StubReply::error(500, "down"));
    }
    let spec = tactic(&server, "steps:\n  - {agent: planner, receive: hi}\n");
    let err = StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team(&spec), &PromptVars::new())
        .await
        .expect_err("server down");
    assert!(
        matches!(err, TacticError::Agent(_)) && !err.is_usage(),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_tactic_types_list_the_registered_ones() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(&server, "tactic_type: debate\n");
    let err = TacticRegistry::new().create(&spec).err().expect("unknown");
    assert_eq!(
        err.to_string(),
        "unknown tactic_type `debate`; the registered types are: chat, steps"
    );
}

/// A tactic written in Rust: asks every agent the input in turn and joins the answers.
struct RoundRobin {
    separator: String,
}

#[async_trait::async_trait]
impl Tactic for RoundRobin {
    async fn run(&self, team: &Team, vars: &PromptVars) -> Result<String, TacticError> {
        let input = vars.get("input").and_then(Value::as_str).unwrap_or("");
        let mut answers = Vec::new();
        for agent in team.agents() {
            agent.open_with("main", vars)?;
            agent.receive_in("main", input)?;
            answers.push(agent.respond("main").await?.content.unwrap_or_default());
        }
        Ok(answers.join(&self.separator))
    }
}

#[tokio::test]
async fn tactics_written_in_rust_are_registered_by_name_and_read_their_config() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(
        &server,
        "tactic_type: round_robin\nconfig: {separator: \" + \"}\n",
    );
    let mut registry = TacticRegistry::new();
    registry.register("round_robin", |spec| {
        let separator = spec.config()["separator"]
            .as_str()
            .ok_or("config.separator is required")?;
        Ok(Box::new(RoundRobin {
            separator: separator.to_owned(),
        }) as Box<dyn Tactic>)
    });
    assert_eq!(registry.names(), ["chat", "round_robin", "steps"]);
    let team = team(&spec);
    let answer = registry
        .create(&spec)
        .expect("registered")
        .run(&team, &vars("hi"))
        .await
        .expect("runs");
    assert_eq!(answer, "stub answer to: hi + stub answer to: hi");
    assert_eq!(server.requests().len(), 2);
    let spec = tactic(&server, "tactic_type: round_robin\n");
    let err = registry.create(&spec).err().expect("bad config");
    assert_eq!(err.to_string(), "config.separator is required");
}

#[tokio::test]
async fn two_hundred_parallel_subagents_are_all_in_flight_at_once() {
    let server = StubServer::start().await.expect("server");
    let branches: String = (0..200)
        .map(|i| {
            format!(
                "      - {{agent: planner, dialog: sub{i}, fork_from: main, receive: part {i}}}\n"
            )
        })
        .collect();
    let spec = tactic(
        &server,
        &format!("steps:\n  - {{agent: planner, receive: lead}}\n  - parallel:\n{branches}"),
    );
    server.push(StubReply::text("lead"));
    for _ in 0..200 {
        server.push(StubReply::text("done").together(200));
    }
    let team = team(&spec);
    StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team, &PromptVars::new())
        .await
        .expect("runs: every subagent was answered, so all 200 were in flight together");
    assert_eq!(server.requests().len(), 201);
    assert_eq!(server.most_in_flight(), 200);
    let planner = team.agent("planner").expect("planner");
    assert_eq!(planner.aliases().len(), 201);
    let lead = planner.dialog_id("main").expect("main").to_string();
    assert!(server.requests()[1..]
        .iter()
        .all(|r| r.header("x-dynamo-parent-session-id") == Some(lead.as_str())));
}

#[tokio::test]
async fn a_failing_branch_stops_its_siblings_and_leaves_their_dialogs_clean() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(
        &server,
        "steps:
  - {agent: planner, receive: lead}
  - parallel:
      - {agent: planner, dialog: slow, fork_from: main, receive: take your time}
      - {agent: critic, receive: fail fast}
",
    );
    server.push(StubReply::text("lead answer"));
    // The slow branch waits; the critic's request gets a 400 (not retried). The branches' requests
    // arrive in either order, so each reply names its request. Had the run waited for the slow
    // branch, its events would end "slow finished".
    server.push(
        StubReply::text("too late")
            .delay(Duration::from_secs(30))
            .for_message("take your time"),
    );
    server.push(StubReply::error(400, "bad request").for_message("fail fast"));
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let team = team(&spec).on_progress(move |p| {
        let kind = match p.event {
            ProgressEvent::Started => "started",
            ProgressEvent::Finished(_) => "finished",
            ProgressEvent::Failed(_) => "failed",
            ProgressEvent::Cancelled(_) => "cancelled",
        };
        seen.lock()
            .expect("lock")
            .push(format!("{} {kind}", p.dialog));
    });
    let err = StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team, &PromptVars::new())
        .await
        .expect_err("the critic fails");
    assert!(lllm_core::full_message(&err).contains("HTTP 400"), "{err}");
    let mut events = events.lock().expect("lock").clone();
    events.sort();
    assert_eq!(
        events,
        [
            "main failed",
            "main finished",
            "main started",
            "main started",
            "slow cancelled",
            "slow started"
        ]
    );
    let planner = team.agent("planner").expect("planner");
    assert_eq!(
        planner.dialog("slow").expect("slow").len(),
        3,
        "no unanswered message left"
    );
    planner
        .receive_in("slow", "still usable")
        .expect("not busy");
    assert_eq!(
        team.agent("critic")
            .expect("critic")
            .dialog("main")
            .expect("main")
            .len(),
        1
    );
}
