//! Tools that need confirmation run only when the agent's `Confirm` approves each call; without one,
//! or when it declines, the model reads that the user declined, and the tool never runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lllm_runtime::agent::Role;
use lllm_runtime::tactic::Team;
use lllm_runtime::testing::ScriptedInvoker;
use lllm_runtime::tools::{
    ApproveAll, Confirm, ConfirmRequest, Decision, ToolCall, ToolError, ToolOutput, ToolSpec,
};
use lllm_runtime::{Agent, Message, Tool};
use serde_json::{json, Value};

/// A tool that needs confirmation and counts its runs.
#[derive(Debug)]
struct Guarded {
    spec: ToolSpec,
    runs: Arc<AtomicUsize>,
}

impl Guarded {
    fn shared(runs: Arc<AtomicUsize>) -> Arc<dyn Tool> {
        Arc::new(Guarded {
            spec: ToolSpec {
                name: "delete".into(),
                description: "Deletes a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            runs,
        })
    }
}

#[async_trait]
impl Tool for Guarded {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn needs_confirmation(&self) -> bool {
        true
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(format!("deleted {}", arguments["path"].as_str().unwrap_or("?")).into())
    }
}

/// Approves only paths under /tmp, and remembers what it was asked.
#[derive(Debug, Default)]
struct OnlyTmp {
    asked: Mutex<Vec<(String, String, String, Value)>>,
}

#[async_trait]
impl Confirm for OnlyTmp {
    async fn confirm(&self, request: ConfirmRequest<'_>) -> Decision {
        self.asked.lock().expect("lock").push((
            request.agent.to_owned(),
            request.tool.to_owned(),
            request.source.to_owned(),
            request.arguments.clone(),
        ));
        if request.arguments["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/tmp/"))
        {
            Decision::Approve
        } else {
            Decision::Decline
        }
    }
}

fn calls(paths: &[&str]) -> Message {
    let mut message = Message::assistant("");
    message.content = None;
    message.tool_calls = paths
        .iter()
        .enumerate()
        .map(|(i, path)| ToolCall {
            id: format!("c{i}"),
            name: "delete".into(),
            arguments: json!({"path": path}).to_string(),
        })
        .collect();
    message
}

fn tool_results(invoker: &ScriptedInvoker) -> Vec<String> {
    invoker
        .calls()
        .last()
        .map(|call| {
            call.messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| m.text().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn agent(
    invoker: Arc<ScriptedInvoker>,
    runs: Arc<AtomicUsize>,
    confirm: Option<Arc<dyn Confirm>>,
) -> Agent {
    let builder = Agent::builder()
        .name("janitor")
        .system_prompt("You tidy up.")
        .model("m")
        .invoker(invoker)
        .tool(Guarded::shared(runs));
    match confirm {
        Some(confirm) => builder.confirm(confirm),
        None => builder,
    }
    .build()
    .expect("agent")
}

#[tokio::test]
async fn without_a_confirm_callback_such_calls_are_declined() {
    let invoker = Arc::new(
        ScriptedInvoker::new()
            .message(calls(&["/etc/passwd"]))
            .reply("ok"),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(invoker.clone(), runs.clone(), None);
    agent.open("main").expect("open");
    agent.receive("tidy").expect("receive");
    assert_eq!(agent.respond("main").await.expect("answer").text(), "ok");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "never ran");
    let results = tool_results(&invoker);
    assert!(
        results[0].starts_with("error: the user declined this call, so it was not run"),
        "{results:?}"
    );
}

#[tokio::test]
async fn the_callback_decides_each_call_and_sees_what_it_decides_on() {
    let invoker = Arc::new(
        ScriptedInvoker::new()
            .message(calls(&["/tmp/a", "/home/me/b", "/tmp/c"]))
            .reply("done"),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let only_tmp = Arc::new(OnlyTmp::default());
    let agent = agent(invoker.clone(), runs.clone(), Some(only_tmp.clone()));
    agent.open("main").expect("open");
    agent.receive("tidy").expect("receive");
    agent.respond("main").await.expect("answer");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let results = tool_results(&invoker);
    assert_eq!(results[0], "deleted /tmp/a");
    assert!(
        results[1].starts_with("error: the user declined"),
        "{results:?}"
    );
    assert_eq!(results[2], "deleted /tmp/c");
    let mut asked = only_tmp.asked.lock().expect("lock").clone();
    asked.sort_by_key(|a| a.3.to_string());
    assert_eq!(asked.len(), 3);
    assert_eq!(asked[0].0, "janitor");
    assert_eq!(asked[0].1, "delete");
    assert_eq!(asked[0].2, "a Rust tool");
    assert_eq!(asked[0].3, json!({"path": "/home/me/b"}));
}

#[tokio::test]
async fn arguments_that_do_not_fit_are_refused_before_anyone_is_asked() {
    let mut bad = calls(&["x"]);
    bad.tool_calls[0].arguments = r#"{"path": 7}"#.into();
    let invoker = Arc::new(ScriptedInvoker::new().message(bad).reply("ok"));
    let only_tmp = Arc::new(OnlyTmp::default());
    let agent = agent(
        invoker.clone(),
        Arc::new(AtomicUsize::new(0)),
        Some(only_tmp.clone()),
    );
    agent.open("main").expect("open");
    agent.receive("tidy").expect("receive");
    agent.respond("main").await.expect("answer");
    assert!(only_tmp.asked.lock().expect("lock").is_empty());
    assert!(tool_results(&invoker)[0].contains("do not match the tool's parameters"));
}

#[tokio::test]
async fn a_team_passes_its_callback_to_command_tools_marked_confirm() {
    let yaml = "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    tools:\n      - {name: say, description: d, parameters: {type: object, properties: {text: {type: string}}}, command: [echo, \"{{ text }}\"], confirm: true}\n";
    let spec = lllm_runtime::config::parse_tactic(
        yaml.as_bytes(),
        std::path::Path::new("t.yaml"),
        &|_| None,
    )
    .expect("tactic");
    let mut call = calls(&[]);
    call.tool_calls = vec![ToolCall {
        id: "c0".into(),
        name: "say".into(),
        arguments: r#"{"text": "approved"}"#.into(),
    }];
    for (confirm, expected) in [
        (Some(Arc::new(ApproveAll) as Arc<dyn Confirm>), "approved"),
        (None, "error: the user declined"),
    ] {
        let invoker = Arc::new(ScriptedInvoker::new().message(call.clone()).reply("ok"));
        let builder = Team::builder(&spec).invoker(invoker.clone());
        let team = match confirm {
            Some(confirm) => builder.confirm(confirm),
            None => builder,
        }
        .build()
        .expect("team");
        let agent = team.agent("a").expect("agent");
        agent.open("main").expect("open");
        agent.receive("go").expect("receive");
        agent.respond("main").await.expect("answer");
        assert!(
            tool_results(&invoker)[0].starts_with(expected),
            "{:?}",
            tool_results(&invoker)
        );
    }
}
