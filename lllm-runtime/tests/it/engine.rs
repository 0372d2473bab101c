//! The run engine: runs from plans, handles with their events, cancellation, a pause answered by
//! call, batches and resumes, against the recording stub server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{alive, TempDir};
use futures::StreamExt as _;
use lllm_runtime::batch::{BatchItem, BatchOutput, BatchPlan};
use lllm_runtime::engine::{plan_resume, JournalPlan, Resumable};
use lllm_runtime::events::{RunEvent, RunStatus};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::{StubReply, StubServer};
use lllm_runtime::tools::{Decision, Decisions};
use lllm_runtime::{load_tactic, Engine, OpenAiInvoker, RunError, RunPlan, TacticRegistry};
use serde_json::{json, Value};

fn engine() -> Engine {
    Engine::new(TacticRegistry::new()).with_invoker(Arc::new(OpenAiInvoker::with_defaults(
        ServerDefaults::none(),
    )))
}

/// A `worker` with a command tool `act` (which appends its line to `effects.txt`, or sleeps when
/// asked to) and a `reviewer`; steps: the worker acts, the reviewer reviews.
fn tactic(dir: &TempDir, server: &StubServer, confirm: bool) -> PathBuf {
    let effects = dir.0.join("effects.txt");
    let pid = dir.0.join("pid.txt");
    dir.write(
        "tactic.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'echo $$ > "$3"; if [ "$1" = sleep ]; then sleep 30; fi; printf "%s\n" "$1" | tee -a "$2"', sh, "{{{{ line }}}}", "{effects}", "{pid}"]
        confirm: {confirm}
  - name: reviewer
    system_prompt: You review.
steps:
  - {{agent: worker, receive: "{{{{ input }}}}", save: work}}
  - {{agent: reviewer, receive: "Review: {{{{ work }}}}"}}
"#,
            api = server.base_url(),
            effects = effects.display(),
            pid = pid.display()
        ),
    )
}

fn effects(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.0.join("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn load(path: &Path) -> lllm_runtime::TacticSpec {
    load_tactic(path).expect("tactic")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_started_run_streams_its_events_in_order_and_ends_completed() {
    let dir = TempDir::new("events");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "one"}"#,
    )]));
    server.push(StubReply::text("worked"));
    server.push(StubReply::text("reviewed"));
    let engine = engine();
    let tactic = engine
        .prepare(load(&tactic(&dir, &server, false)))
        .await
        .expect("prepared");
    let handle = engine.start(tactic.clone(), RunPlan::new().input("go"));
    let events: Vec<_> = handle.events(0).collect().await;
    let outcome = handle.wait().await;
    let output = outcome.as_ref().as_ref().expect("answered");
    assert_eq!(output.answer, "reviewed");
    assert_eq!(output.agents.len(), 2);
    assert_eq!(handle.status(), RunStatus::Completed);
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as u64).collect::<Vec<_>>(),
        "numbered in order"
    );
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &e.event {
            RunEvent::Status(s) => format!("status {s}"),
            RunEvent::StepStarted { agent, .. } => format!("start {agent}"),
            RunEvent::StepEnded { agent, .. } => format!("end {agent}"),
            RunEvent::ToolCall { call, .. } => format!("call {}", call.name),
            RunEvent::ToolResult { content, .. } => format!("result {content}"),
            RunEvent::ModelCall(call) => format!(
                "model {} {:?} {:?}",
                call.agent,
                call.alias,
                call.usage.map(|u| u.prompt_tokens)
            ),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "status running",
            "start worker",
            "model worker Some(\"main\") Some(11)",
            "call act",
            "result one",
            "model worker Some(\"main\") Some(11)",
            "end worker",
            "start reviewer",
            "model reviewer Some(\"main\") Some(11)",
            "end reviewer",
            "status completed"
        ]
    );
    // A late subscriber resumes after the last event it saw.
    let rest: Vec<_> = handle.events(5).collect().await;
    assert_eq!(rest.first().map(|e| e.id), Some(6));
    assert_eq!(effects(&dir), ["one"]);
    tactic.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_kills_a_running_command_tool_and_ends_cancelled() {
    let dir = TempDir::new("cancel");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "sleep"}"#,
    )]));
    let engine = engine();
    let tactic = engine
        .prepare(load(&tactic(&dir, &server, false)))
        .await
        .expect("prepared");
    let handle = engine.start(tactic.clone(), RunPlan::new().input("go"));
    let pid_file = dir.0.join("pid.txt");
    let started = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the tool never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    handle.cancel().await;
    assert_eq!(handle.status(), RunStatus::Cancelled);
    assert!(matches!(
        handle.wait().await.as_ref(),
        Err(RunError::Cancelled)
    ));
    let killed = Instant::now();
    while alive(pid) {
        assert!(
            killed.elapsed() < Duration::from_secs(2),
            "the tool's process outlived the cancel by 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(effects(&dir).is_empty(), "the tool never finished");
    tactic.shutdown().await;
}

/// Whether process `pid` still runs (a zombie counts as gone).

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_run_lists_its_pending_call_and_an_approval_by_id_completes_it() {
    let dir = TempDir::new("pause");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "one"}"#,
    )]));
    let engine = engine();
    let path = tactic(&dir, &server, true);
    let tactic = engine.prepare(load(&path)).await.expect("prepared");
    let journal = dir.0.join("run.journal");
    let plan = RunPlan::new()
        .input("go")
        .journal(JournalPlan::Create(journal.clone()))
        .confirm(Arc::new(Decisions::new()));
    let handle = engine.start(tactic.clone(), plan);
    handle.wait().await;
    assert_eq!(handle.status(), RunStatus::RequiresAction);
    let pending = handle.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].call, "c1");
    assert_eq!(pending[0].agent.as_deref(), Some("worker"));
    assert_eq!(pending[0].tool, "act");
    assert_eq!(pending[0].arguments, json!({"line": "one"}));
    assert!(effects(&dir).is_empty(), "nothing ran before the approval");

    server.push(StubReply::text("worked"));
    server.push(StubReply::text("reviewed"));
    let Resumable::Unfinished { spec, plan } =
        plan_resume(&journal, false, Vec::new()).expect("resumable")
    else {
        panic!("the run did not finish")
    };
    assert_eq!(spec.path(), path.canonicalize().expect("path"));
    let decisions = Decisions::new().decide(&pending[0].call, Decision::Approve);
    let output = engine
        .run(&tactic, plan.confirm(Arc::new(decisions)))
        .await
        .expect("completed");
    assert_eq!(output.answer, "reviewed");
    assert_eq!(effects(&dir), ["one"], "the approved call ran once");
    // The first request was answered before the pause: it was not sent again.
    assert_eq!(server.requests().len(), 3);
    assert!(matches!(
        plan_resume(&journal, false, Vec::new()),
        Ok(Resumable::Finished { ref output }) if output == "reviewed"
    ));
    tactic.shutdown().await;
}

/// The events a handle has now, without waiting for more.
fn events_now(handle: &lllm_runtime::RunHandle) -> Vec<lllm_runtime::engine::StreamedEvent> {
    use futures::FutureExt as _;
    let mut events = Box::pin(handle.events(0));
    std::iter::from_fn(|| events.next().now_or_never().flatten()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pause_shows_only_after_before_end_returned_and_with_its_pending_calls() {
    let dir = TempDir::new("before-end");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "one"}"#,
    )]));
    let engine = engine();
    let tactic = engine
        .prepare(load(&tactic(&dir, &server, true)))
        .await
        .expect("prepared");
    let plan = RunPlan::new()
        .input("go")
        .journal(JournalPlan::Create(dir.0.join("run.journal")))
        .confirm(Arc::new(Decisions::new()));
    // The hook says it was called, then holds the run's end until the test lets it go.
    let (entered, entering) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let before_end: lllm_runtime::engine::BeforeEnd = Box::new(move |outcome, last| {
        entered
            .send((
                outcome.as_ref().err().is_some_and(RunError::is_paused),
                last,
            ))
            .ok();
        released.recv().ok();
    });
    let handle = engine.start_with(tactic.clone(), plan, before_end);
    let (paused, last) = tokio::task::spawn_blocking(move || entering.recv().expect("called"))
        .await
        .expect("joined");
    assert!(paused);
    // Held: the run looks as if it were running.
    assert_eq!(handle.status(), RunStatus::Running);
    assert!(handle.outcome().is_none() && handle.pending().is_empty());
    let held = events_now(&handle);
    assert!(held.iter().all(|e| e.id < last), "{held:?}");
    assert!(!held
        .iter()
        .any(|e| e.event == RunEvent::Status(RunStatus::RequiresAction)));
    release.send(()).expect("released");
    handle.wait().await;
    // Let go: its status, its last event (the id the hook was told) and its pending calls at once.
    assert_eq!(handle.status(), RunStatus::RequiresAction);
    assert_eq!(handle.pending().len(), 1);
    assert_eq!(handle.last_event_id(), last);
    let shown = events_now(&handle);
    let end = shown.last().expect("events");
    assert_eq!(
        (end.id, &end.event),
        (last, &RunEvent::Status(RunStatus::RequiresAction))
    );
    tactic.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_appends_one_line_per_item_and_knows_which_are_answered() {
    let dir = TempDir::new("batch");
    let server = StubServer::start().await.expect("stub");
    let engine = engine();
    let path = dir.write(
        "chat.yaml",
        &format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30}}\n  max_call_retries: 0\nagent_configs:\n  - {{name: a, system_prompt: \"Hi {{{{ who }}}}.\"}}\n",
            server.base_url()
        ),
    );
    let tactic = engine.prepare(load(&path)).await.expect("prepared");
    let item = |id: &str, input: Option<&str>| BatchItem {
        id: lllm_runtime_id(id),
        id_json: serde_json::value::RawValue::from_string(id.to_owned()).expect("json"),
        input: input.map(str::to_owned),
        vars: [("who".to_owned(), Value::from("you"))]
            .into_iter()
            .collect(),
    };
    let items = vec![item("1", Some("first")), item("\"two\"", None)];
    server.push(StubReply::text("answer one"));
    let output_path = dir.0.join("out.jsonl");
    let output = BatchOutput::open(&output_path).expect("output");
    let plan = BatchPlan::default();
    let report = engine
        .batch(&tactic, items, &plan, &output, &|_| {})
        .await
        .expect("batch");
    assert_eq!((report.run, report.answered, report.failed), (2, 1, 1));
    let lines: Vec<Value> = std::fs::read_to_string(&output_path)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let answered = lines.iter().find(|l| l["id"] == 1).expect("item 1");
    assert_eq!(answered["output"], "answer one");
    let failed = lines.iter().find(|l| l["id"] == "two").expect("item two");
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("input")),
        "{failed}"
    );
    let ids = BatchOutput::answered_ids(&output_path).expect("ids");
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), ["1"]);
    let request = &server.requests()[0];
    assert_eq!(request.body["messages"][0]["content"], "Hi you.");
    tactic.shutdown().await;
}

/// An item id as the batch reads it: a string's value, a number as written.
fn lllm_runtime_id(id: &str) -> String {
    serde_json::from_str::<String>(id).unwrap_or_else(|_| id.to_owned())
}

/// Two branches at once: `worker` runs a slow tool, `asker` a tool that needs confirmation.
fn parallel_tactic(dir: &TempDir, server: &StubServer) -> PathBuf {
    let effects = dir.0.join("effects.txt");
    let tool = |name: &str, confirm: bool, sleep: &str| {
        format!(
            r#"      - name: {name}
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'sleep {sleep}; printf "%s\n" "$1" | tee -a "$2"', sh, "{{{{ line }}}}", "{effects}"]
        confirm: {confirm}
"#,
            effects = effects.display()
        )
    };
    dir.write(
        "parallel.yaml",
        &format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    tools:
{slow}  - name: asker
    system_prompt: You ask.
    tools:
{ask}steps:
  - parallel:
      - {{agent: worker, receive: slow work, save: work}}
      - {{agent: asker, receive: ask first, save: asked}}
output: "{{{{ work }}}} / {{{{ asked }}}}"
"#,
            api = server.base_url(),
            slow = tool("slow", false, "1"),
            ask = tool("ask", true, "0"),
        ),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pause_in_one_branch_lets_another_branch_finish_its_running_tool() {
    let dir = TempDir::new("pause-branches");
    let server = StubServer::start().await.expect("stub");
    server.push(
        StubReply::tool_calls(&[("w1", "slow", r#"{"line": "slow"}"#)]).for_message("slow work"),
    );
    // The asking branch pauses once the slow tool is surely running: that tool must then finish.
    server.push(
        StubReply::tool_calls(&[("a1", "ask", r#"{"line": "asked"}"#)])
            .for_message("ask first")
            .delay(Duration::from_millis(300)),
    );
    let engine = engine();
    let tactic = engine
        .prepare(load(&parallel_tactic(&dir, &server)))
        .await
        .expect("prepared");
    let journal = dir.0.join("run.journal");
    let plan = RunPlan::new()
        .journal(JournalPlan::Create(journal.clone()))
        .confirm(Arc::new(Decisions::new()));
    let paused = engine.run(&tactic, plan).await.expect_err("paused");
    assert!(paused.is_paused(), "{paused}");
    assert_eq!(
        effects(&dir),
        ["slow"],
        "the other branch's running tool finished (it was not killed by the pause)"
    );
    let finished: Vec<Value> = std::fs::read_to_string(&journal)
        .expect("journal")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "tool_finished")
        .collect();
    assert_eq!(finished.len(), 1, "its result is journaled: {finished:?}");
    assert_eq!(finished[0]["call"], "w1");
    assert_eq!(
        server.requests().len(),
        2,
        "nothing more was asked once paused"
    );

    // Resumed with the approval: the slow tool does not run again, the asked one runs once.
    server.push(StubReply::text("worked").for_message("slow work"));
    server.push(StubReply::text("asked it").for_message("ask first"));
    let Resumable::Unfinished { plan, .. } =
        plan_resume(&journal, false, Vec::new()).expect("resumable")
    else {
        panic!("the run did not finish")
    };
    let decisions = Decisions::new().decide("a1", Decision::Approve);
    let output = engine
        .run(&tactic, plan.confirm(Arc::new(decisions)))
        .await
        .expect("completed");
    assert_eq!(output.answer, "worked / asked it");
    assert_eq!(effects(&dir), ["slow", "asked"]);
    tactic.shutdown().await;
}
