//! Background subagents on the wire: a fork child extends its parent's last request byte for byte
//! and names the parent's session, an isolated child does not; children run beside their parent;
//! the parent's last turn carries what they found; `task_cancel` stops a child's tool.

use std::path::Path;
use std::sync::{Arc, Mutex};

use lllm_runtime::config::parse_tactic;
use lllm_runtime::events::{RunEvent, RunObserver};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::Team;
use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use lllm_runtime::OpenAiInvoker;
use serde_json::Value;

/// A tactic whose `lead` has the subagents and extra keys given (indented under the agent).
fn tactic(server: &StubServer, lead: &str) -> lllm_runtime::TacticSpec {
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
",
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

const FORK: &str = "    subagents:\n      - {name: researcher, mode: fork, background: true}\n      - {name: outsider, agent: scout, mode: isolated, background: true}\n      - {name: adviser, mode: fork, background: false}";

fn messages_text(request: &RecordedRequest) -> String {
    serde_json::to_string(&request.body["messages"]).expect("json")
}

fn last_user(request: &RecordedRequest) -> String {
    request.body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned()
}

fn start(subagent: &str, instructions: &str) -> String {
    serde_json::json!({"subagent": subagent, "instructions": instructions}).to_string()
}

fn tool_results(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn a_fork_child_extends_the_parents_last_request_and_runs_beside_it() {
    let server = StubServer::start().await.expect("server");
    let spec = tactic(&server, FORK);
    server.push(
        StubReply::tool_calls(&[("c1", "task_start", &start("researcher", "Dig into A."))])
            .for_message("Research topics."),
    );
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
    let lead = team.agent("lead").expect("lead");
    lead.open("main").expect("open");
    lead.receive("Research topics.").expect("receive");
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
    let server = StubServer::start().await.expect("server");
    let spec = tactic(&server, FORK);
    server.push(
        StubReply::tool_calls(&[("c1", "task_start", &start("outsider", "Scout B."))])
            .for_message("Research topics."),
    );
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
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let observer = RunObserver::new(move |e: &RunEvent| {
        if let Ok(json) = serde_json::to_value(e) {
            if json["event"]
                .as_str()
                .is_some_and(|n| n.starts_with("task."))
            {
                seen.lock().expect("events").push(json);
            }
        }
    });
    let team = team(&spec, Some(observer));
    let lead = team.agent("lead").expect("lead");
    lead.open("main").expect("open");
    lead.receive("Research topics.").expect("receive");
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
    let server = StubServer::start().await.expect("server");
    let spec = tactic(&server, FORK);
    server.push(
        StubReply::tool_calls(&[("c1", "task_start", &start("adviser", "Advise on C."))])
            .for_message("Research topics."),
    );
    server.push(StubReply::text("C is risky.").for_message("Advise on C."));
    server.push(StubReply::text("Done: C is risky.").for_message("Research topics."));
    let team = team(&spec, None);
    let lead = team.agent("lead").expect("lead");
    lead.open("main").expect("open");
    lead.receive("Research topics.").expect("receive");
    let answer = lead.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "Done: C is risky.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_results(&requests[2]), vec!["C is risky.".to_owned()]);
}
