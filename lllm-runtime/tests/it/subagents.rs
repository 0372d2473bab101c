//! Background subagents on the wire: a fork child extends its parent's last request byte for byte
//! and names the parent's session, an isolated child does not; children run beside their parent;
//! the parent's last turn carries what they found; `task_cancel` stops a child's tool.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lllm_runtime::agent::AgentErrorKind;
use lllm_runtime::config::parse_tactic;
use lllm_runtime::events::{RunEvent, RunObserver};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::Team;
use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use lllm_runtime::OpenAiInvoker;
use serde_json::Value;

use crate::support::{gone_within, last_user, tool_results, TempDir};

/// A stub server, and a tactic on it whose `lead` has the subagents and extra keys given
/// (indented under the agent), with `tail` (top-level keys such as `limits:`) appended.
async fn stub_tactic(lead: &str, tail: &str) -> (StubServer, lllm_runtime::TacticSpec) {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(&server, lead, tail);
    (server, spec)
}

fn tactic(server: &StubServer, lead: &str, tail: &str) -> lllm_runtime::TacticSpec {
    let text = format!(
        "global:
  model_name: dynamo/m
  model_args: {{api_base: \"{}\"}}
  inference_hints: {{profile: dynamo}}
  max_llm_recall: 1
agent_configs:
  - name: lead
    system_prompt: You lead research.
{lead}
  - {{name: scout, system_prompt: You scout.}}
{tail}",
        server.base_url()
    );
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("valid tactic")
}

fn team(spec: &lllm_runtime::TacticSpec, events: Option<RunObserver>) -> Team {
    let builder = Team::builder(spec).invoker(Arc::new(OpenAiInvoker::with_defaults(
        ServerDefaults::none(),
    )));
    match events {
        Some(observer) => builder.observer(observer),
        None => builder,
    }
    .build()
    .expect("team")
}

/// The `lead` of `team`, its `main` dialog open with `text` received.
fn lead_told<'a>(team: &'a Team, text: &str) -> &'a lllm_runtime::Agent {
    let lead = team.agent("lead").expect("lead");
    lead.open("main").expect("open");
    lead.receive(text).expect("receive");
    lead
}

const FORK: &str = "    subagents:\n      - {name: researcher, mode: fork, background: true}\n      - {name: outsider, agent: scout, mode: isolated, background: true}\n      - {name: adviser, mode: fork, background: false}";

fn messages_text(request: &RecordedRequest) -> String {
    serde_json::to_string(&request.body["messages"]).expect("json")
}

/// The answer to the request whose last user message holds `asked`: one `task_start` call (`c1`)
/// of `subagent` on `instructions`.
fn starts(subagent: &str, instructions: &str, asked: &str) -> StubReply {
    StubReply::tool_calls(&[("c1", "task_start", &start(subagent, instructions))])
        .for_message(asked)
}

fn start(subagent: &str, instructions: &str) -> String {
    serde_json::json!({"subagent": subagent, "instructions": instructions}).to_string()
}

#[tokio::test]
async fn a_fork_child_extends_the_parents_last_request_and_runs_beside_it() {
    let (server, spec) = stub_tactic(FORK, "").await;
    server.push(starts("researcher", "Dig into A.", "Research topics."));
    // The child's answer and the parent's next answer are held until both requests are in the
    // server at once: the parent went on while its child waited for its answer.
    server.push(
        StubReply::text("A holds.")
            .for_message("Dig into A.")
            .together(2),
    );
    server.push(
        StubReply::text("Interim.")
            .for_message("Research topics.")
            .together(2),
    );
    let team = team(&spec, None);
    let lead = lead_told(&team, "Research topics.");
    lead.respond("main").await.expect("answer");
    let requests = server.requests();
    let parent_first = &requests[0];
    let child = requests
        .iter()
        .find(|r| last_user(r) == "Dig into A.")
        .expect("the child asked");
    let parent = messages_text(parent_first);
    let prefix = &parent[..parent.len() - 1];
    assert!(
        messages_text(child).starts_with(prefix),
        "the child's messages begin with the parent's last request, byte for byte:\n{}\n{}",
        parent,
        messages_text(child)
    );
    let main = lead.dialog_id("main").expect("main").to_string();
    assert_eq!(
        child.header("x-dynamo-parent-session-id"),
        Some(main.as_str())
    );
    let own = child.header("x-dynamo-session-id").expect("own session");
    assert_ne!(own, main);
    let parent_next = requests
        .iter()
        .skip(1)
        .find(|r| last_user(r) == "Research topics.")
        .expect("the parent went on");
    let started: Value = serde_json::from_str(&tool_results(parent_next)[0]).expect("json");
    assert_eq!(started["task_id"], "t1");
    assert_eq!(server.most_in_flight(), 2);
}

#[tokio::test]
async fn an_isolated_child_starts_afresh_without_a_parent_header() {
    let (server, spec) = stub_tactic(FORK, "").await;
    server.push(starts("outsider", "Scout B.", "Research topics."));
    server.push(
        StubReply::text("B is far.")
            .for_message("Scout B.")
            .together(2),
    );
    server.push(
        StubReply::text("Interim.")
            .for_message("Research topics.")
            .together(2),
    );
    let (observer, events, _) = task_events();
    let team = team(&spec, Some(observer));
    let lead = lead_told(&team, "Research topics.");
    lead.respond("main").await.expect("answer");
    let child = server
        .requests()
        .into_iter()
        .find(|r| last_user(r) == "Scout B.")
        .expect("the child asked");
    let messages = child.body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["content"], "You scout.");
    assert_eq!(messages[1]["content"], "Scout B.");
    assert_eq!(child.header("x-dynamo-parent-session-id"), None);
    let events = events.lock().expect("events").clone();
    let started = &events[0];
    assert_eq!(started["event"], "task.started");
    assert_eq!(started["data"]["mode"], "isolated");
    assert_eq!(started["data"]["agent"], "scout");
    let main = lead.dialog_id("main").expect("main").to_string();
    assert_eq!(started["data"]["parent_dialog"], main.as_str());
    assert!(events
        .iter()
        .any(|e| e["event"] == "task.ended" && e["data"]["outcome"] == "finished"));
}

#[tokio::test]
async fn a_foreground_subagent_answers_the_call_itself() {
    let (server, spec) = stub_tactic(FORK, "").await;
    server.push(starts("adviser", "Advise on C.", "Research topics."));
    server.push(StubReply::text("C is risky.").for_message("Advise on C."));
    server.push(StubReply::text("Done: C is risky.").for_message("Research topics."));
    let team = team(&spec, None);
    let lead = lead_told(&team, "Research topics.");
    let answer = lead.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "Done: C is risky.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_results(&requests[2]), vec!["C is risky.".to_owned()]);
}

/// `lead` with subagents and two command tools: `hold` writes its process id to `file` and sleeps,
/// `wait_file` returns once `file` has content.
const WITH_TOOLS: &str = "    subagents:\n      - {name: researcher, mode: fork, background: true}\n    max_background_tasks: 2\n    tools:\n      - {name: hold, description: holds, command: [sh, -c, 'echo $$ > {{ file }}; exec sleep 60'], timeout_s: 120, parameters: {type: object, properties: {file: {type: string}}, required: [file]}}\n      - {name: wait_file, description: waits, command: [sh, -c, 'while [ ! -s {{ file }} ]; do sleep 0.01; done; echo seen'], timeout_s: 120, parameters: {type: object, properties: {file: {type: string}}, required: [file]}}";

fn file_arg(path: &Path) -> String {
    serde_json::json!({"file": path.display().to_string()}).to_string()
}

/// The task events an observer saw, and a channel that gets each `task.ended` outcome.
fn task_events() -> (
    RunObserver,
    Arc<Mutex<Vec<Value>>>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let (ended, ends) = tokio::sync::mpsc::unbounded_channel();
    let observer = RunObserver::new(move |e: &RunEvent| {
        let Ok(json) = serde_json::to_value(e) else {
            return;
        };
        if json["event"] == "task.ended" {
            let _ = ended.send(json["data"]["outcome"].as_str().unwrap_or("").to_owned());
        }
        if json["event"]
            .as_str()
            .is_some_and(|n| n.starts_with("task."))
        {
            seen.lock().expect("events").push(json);
        }
    });
    (observer, events, ends)
}

#[tokio::test]
async fn the_parents_last_turn_carries_the_answer_of_a_child_still_running() {
    let dir = TempDir::new("subagents-gate");
    let gate = dir.0.join("gate");
    let (server, spec) = stub_tactic(WITH_TOOLS, "").await;
    server.push(starts("researcher", "Dig into A.", "Research topics."));
    // The child waits for a gate that opens when the parent's answer arrives (below), so the
    // parent answers while its child still runs.
    server.push(
        StubReply::tool_calls(&[("w1", "wait_file", &file_arg(&gate))]).for_message("Dig into A."),
    );
    server.push(StubReply::text("Interim.").for_message("Research topics."));
    server.push(StubReply::text("A holds.").for_message("Dig into A."));
    server.push(StubReply::text("Final: A holds.").for_message("background tasks"));
    let answered = Arc::new(Mutex::new(0));
    let opener = (answered.clone(), gate.clone());
    let observer = RunObserver::new(move |e: &RunEvent| {
        let Ok(json) = serde_json::to_value(e) else {
            return;
        };
        if json["event"] == "model_call" && json["data"]["dialog"] == "main" {
            let mut n = opener.0.lock().expect("count");
            *n += 1;
            if *n == 2 {
                std::fs::write(&opener.1, "open").expect("gate");
            }
        }
    });
    let team = team(&spec, Some(observer));
    let lead = lead_told(&team, "Research topics.");
    let answer = lead.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "Final: A holds.");
    let last = server.requests().pop().expect("requests");
    let told = last_user(&last);
    assert!(told.contains("task t1 (researcher) finished"), "{told}");
    assert!(told.contains("A holds."), "{told}");
    let messages = last.body["messages"].as_array().expect("messages");
    assert_eq!(messages[messages.len() - 2]["content"], "Interim.");
}

#[tokio::test]
async fn task_cancel_stops_a_child_in_the_middle_of_its_tool() {
    let dir = TempDir::new("subagents-cancel");
    let pid_file = dir.0.join("pid");
    let (server, spec) = stub_tactic(WITH_TOOLS, "").await;
    server.push(starts("researcher", "Hold on.", "Research topics."));
    server.push(
        StubReply::tool_calls(&[("h1", "hold", &file_arg(&pid_file))]).for_message("Hold on."),
    );
    // The parent waits until the child's tool runs, then cancels the child.
    server.push(
        StubReply::tool_calls(&[("w1", "wait_file", &file_arg(&pid_file))])
            .for_message("Research topics."),
    );
    server.push(
        StubReply::tool_calls(&[("x1", "task_cancel", r#"{"task_id": "t1"}"#)])
            .for_message("Research topics."),
    );
    server.push(StubReply::text("Stopped.").for_message("Research topics."));
    let (observer, _events, mut ends) = task_events();
    let team = team(&spec, Some(observer));
    let lead = lead_told(&team, "Research topics.");
    let answer = lead.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "Stopped.");
    let last = server.requests().pop().expect("requests");
    assert!(tool_results(&last)
        .iter()
        .any(|r| r == "task t1 was cancelled"));
    assert_eq!(ends.recv().await.as_deref(), Some("cancelled"));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // The contract's bound: a cancelled child's tools are killed within 2 s.
    gone_within(
        pid,
        Duration::from_secs(2),
        "the child's tool was killed with it",
    )
    .await;
    assert_eq!(
        server.requests().len(),
        5,
        "the child asked nothing after it was cancelled"
    );
}

#[tokio::test]
async fn a_model_starting_tasks_in_a_loop_is_held_to_max_background_tasks() {
    let (server, spec) = stub_tactic(WITH_TOOLS, "").await;
    let calls: Vec<(String, String)> = (0..6)
        .map(|i| (format!("c{i}"), start("researcher", &format!("Part {i}."))))
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "task_start", args.as_str()))
        .collect();
    server.push(StubReply::tool_calls(&calls).for_message("Research topics."));
    // Both children and the parent's next request are in the server together: only two started.
    for i in 0..2 {
        server.push(
            StubReply::text(&format!("part {i} done"))
                .for_message(&format!("Part {i}."))
                .together(3),
        );
    }
    server.push(
        StubReply::text("Interim.")
            .for_message("Research topics.")
            .together(3),
    );
    let team = team(&spec, None);
    let lead = lead_told(&team, "Research topics.");
    lead.respond("main").await.expect("answer");
    let second = server
        .requests()
        .into_iter()
        .filter(|r| last_user(r) == "Research topics.")
        .nth(1)
        .expect("the parent's second request");
    let results = tool_results(&second);
    assert_eq!(results.len(), 6);
    assert!(
        results[..2].iter().all(|r| r.contains("\"task_id\"")),
        "{results:?}"
    );
    assert!(
        results[2..]
            .iter()
            .all(|r| r.starts_with("error:") && r.contains("max_background_tasks: 2")),
        "{results:?}"
    );
    assert!(server
        .requests()
        .iter()
        .all(|r| !last_user(r).starts_with("Part 2")));
}

#[tokio::test]
async fn a_task_id_of_another_run_is_unknown_here() {
    let (server, spec) = stub_tactic(FORK, "").await;
    server.push(starts("adviser", "Advise.", "First run."));
    server.push(StubReply::text("advice").for_message("Advise."));
    server.push(StubReply::text("done").for_message("First run."));
    let first = team(&spec, None);
    let lead = lead_told(&first, "First run.");
    lead.respond("main").await.expect("answer");
    server.push(
        StubReply::tool_calls(&[("c1", "task_check", r#"{"task_id": "t1"}"#)])
            .for_message("Second run."),
    );
    server.push(StubReply::text("done").for_message("Second run."));
    let second = team(&spec, None);
    let lead = lead_told(&second, "Second run.");
    lead.respond("main").await.expect("answer");
    let last = server.requests().pop().expect("requests");
    let result = &tool_results(&last)[0];
    assert!(
        result.starts_with("error: unknown task `t1` in this run"),
        "{result}"
    );
}

#[tokio::test]
async fn a_child_starts_children_of_its_own_that_name_it_as_parent() {
    let (server, spec) = stub_tactic(FORK, "").await;
    server.push(starts("adviser", "Plan B.", "Research topics."));
    server.push(
        StubReply::tool_calls(&[("c2", "task_start", &start("adviser", "Detail B."))])
            .for_message("Plan B."),
    );
    server.push(StubReply::text("B in detail").for_message("Detail B."));
    server.push(StubReply::text("B planned").for_message("Plan B."));
    server.push(StubReply::text("done").for_message("Research topics."));
    let (observer, events, _) = task_events();
    let team = team(&spec, Some(observer));
    let lead = lead_told(&team, "Research topics.");
    assert_eq!(lead.respond("main").await.expect("answer").text(), "done");
    let events = events.lock().expect("events").clone();
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "task.started")
        .collect();
    assert_eq!(started.len(), 2);
    assert_eq!(started[1]["data"]["task"], "t2");
    assert_eq!(
        started[1]["data"]["parent_dialog"],
        started[0]["data"]["dialog"]
    );
    let grandchild = server
        .requests()
        .into_iter()
        .find(|r| last_user(r) == "Detail B.")
        .expect("the grandchild asked");
    let child_id = started[0]["data"]["dialog"].as_str().expect("id");
    assert_eq!(
        grandchild.header("x-dynamo-parent-session-id"),
        Some(child_id)
    );
}

#[tokio::test]
async fn children_that_never_end_are_stopped_by_the_runs_time_limit() {
    let dir = TempDir::new("subagents-forever");
    let pid_file = dir.0.join("pid");
    let (server, spec) = stub_tactic(WITH_TOOLS, "limits: {max_seconds: 5}\n").await;
    server.push(
        StubReply::tool_calls(&[
            ("c1", "task_start", &start("researcher", "Hold on.")),
            ("c2", "task_start", &start("researcher", "Wait forever.")),
        ])
        .for_message("Research topics."),
    );
    // One child sits in a tool that would sleep a minute; the other's request is never answered
    // within the run's time.
    server.push(
        StubReply::tool_calls(&[("h1", "hold", &file_arg(&pid_file))]).for_message("Hold on."),
    );
    server.push(
        StubReply::text("too late")
            .for_message("Wait forever.")
            .delay(Duration::from_secs(120)),
    );
    // The parent waits until the first child's tool runs, then answers while both still run.
    server.push(
        StubReply::tool_calls(&[("w1", "wait_file", &file_arg(&pid_file))])
            .for_message("Research topics."),
    );
    server.push(StubReply::text("Interim.").for_message("Research topics."));
    let (observer, events, _) = task_events();
    let team = team(&spec, Some(observer));
    let lead = lead_told(&team, "Research topics.");
    let error = lead
        .respond("main")
        .await
        .expect_err("the run's time ran out while its children ran");
    assert!(
        matches!(
            error.kind(),
            AgentErrorKind::Limit {
                limit: "max_seconds",
                ..
            }
        ),
        "{error:?}"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the first child's tool ran")
        .trim()
        .parse()
        .expect("a pid");
    gone_within(
        pid,
        Duration::from_secs(2),
        "the child's tool was killed at the run's time limit",
    )
    .await;
    let events = events.lock().expect("events").clone();
    let ended: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "task.ended")
        .collect();
    assert_eq!(ended.len(), 2, "both children ended: {events:?}");
    assert!(
        ended.iter().all(|e| e["data"]["outcome"] != "finished"),
        "{ended:?}"
    );
    assert!(server
        .requests()
        .iter()
        .all(|r| !tool_results(r).iter().any(|t| t == "too late")));
}
