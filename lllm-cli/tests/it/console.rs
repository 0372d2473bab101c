//! The console of `lllm serve` in a real browser (headless Chromium, see `browser.rs`): the run list
//! shows a new run by itself, a run's page shows its dialog tree with the sessions the model server
//! received, Approve and Reject answer a paused run, and nothing a model or a tool wrote runs as
//! markup or script.
//!
//! With `LLLM_CONSOLE_SCREENSHOTS=DIR` the tests also save the pictures `docs/serve.md` shows
//! (`scripts/console_screenshots.sh` makes them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::browser::Browser;
use crate::support::{arg, Serving, TempDir};

/// A tactic whose lead answers and a fork of its dialog checks the answer; its `act` tool appends
/// a line to `effects.txt` and needs a confirmation when `confirm`, and its `page` tool prints the
/// file `payload.txt`.
fn tactic(dir: &TempDir, stub: &StubServer, confirm: bool) -> PathBuf {
    dir.write(
        "team.yaml",
        format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo, priority: 5}}
  max_call_retries: 0
agent_configs:
  - name: lead
    system_prompt: You lead.
    tools:
      - name: act
        description: Does something
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" | tee -a "$2"', sh, "{{{{ line }}}}", "{effects}"]
        confirm: {confirm}
      - name: page
        description: Reads a page
        parameters: {{type: object, properties: {{}}}}
        command: [cat, "{payload}"]
steps:
  - {{agent: lead, receive: "{{{{ input }}}}", save: draft}}
  - {{agent: lead, fork_from: main, dialog: check, receive: "Check it."}}
"#,
            api = stub.base_url(),
            effects = dir.path("effects.txt").display(),
            payload = dir.path("payload.txt").display(),
        ),
    )
}

/// Starts a run with `POST /v1/runs`; its id.
async fn start_run(serving: &Serving, session: &str) -> String {
    let reply = reqwest::Client::new()
        .post(format!("{}/v1/runs", serving.base))
        .header("x-session-id", session)
        .body(json!({"model": "team", "input": "go"}).to_string())
        .send()
        .await
        .expect("sent");
    let text = reply.text().await.expect("body");
    let run: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    run["id"].as_str().expect("id").to_owned()
}

/// Waits for the run's status through the API.
async fn wait_status(serving: &Serving, id: &str, wanted: &str) {
    let started = Instant::now();
    loop {
        let text = reqwest::get(format!("{}/v1/runs/{id}", serving.base))
            .await
            .expect("sent")
            .text()
            .await
            .expect("body");
        if text.contains(&format!("\"status\":\"{wanted}\"")) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never {wanted}: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An answer whose prompt the server says it partly had cached, served by worker `w-2`.
fn cached(text: &str, prompt: u64, cached: u64) -> StubReply {
    StubReply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "stub",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40,
                         "prompt_tokens_details": {"cached_tokens": cached}}}),
    )
}

fn screenshot_to(name: &str) -> Option<PathBuf> {
    std::env::var_os("LLLM_CONSOLE_SCREENSHOTS").map(|dir| Path::new(&dir).join(name))
}

fn lines_of(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |text| text.lines().count())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_list_shows_a_new_run_by_itself() {
    let Some(browser) = Browser::start("console list").await else {
        return;
    };
    let dir = TempDir::new("console-list");
    let stub = StubServer::start().await.expect("stub");
    let team = tactic(&dir, &stub, false);
    let state = dir.path("state");
    let serving = Serving::start(&[arg(&team), "--state", arg(&state)], &[]);
    browser.goto(&format!("{}/", serving.base)).await;
    browser
        .wait_until(
            "the empty list, live",
            "return !document.querySelector('#no-runs').hidden && document.querySelector('#live').textContent === 'live'",
        )
        .await;
    // A mark on this page: a reload would lose it.
    browser.run("window.__same_page = 42; return true").await;
    stub.push(cached("draft", 800, 0).delay(Duration::from_millis(400)));
    stub.push(cached("checked", 860, 790));
    let id = start_run(&serving, "conv-list").await;
    let row = format!("tr[data-run='{id}']");
    browser
        .wait_until(
            "the new run",
            &format!("return !!document.querySelector(\"{row}\")"),
        )
        .await;
    browser
        .wait_until(
            "the run completed, with its tokens",
            &format!("const r = document.querySelector(\"{row}\"); return !!r.querySelector('[data-status=completed]') && r.cells[6].textContent === '2'"),
        )
        .await;
    assert_eq!(
        browser
            .text(&format!("{row} td:nth-child(6)"))
            .await
            .as_deref(),
        Some("conv-list")
    );
    assert_eq!(
        browser
            .text(&format!("{row} td:nth-child(10)"))
            .await
            .as_deref(),
        Some("48 %")
    );
    assert_eq!(browser.run("return window.__same_page").await, json!(42));
    if let Some(file) = screenshot_to("console-runs.png") {
        browser.screenshot(&file).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_page_shows_its_dialog_tree_with_the_sessions_the_server_received() {
    let Some(browser) = Browser::start("console tree").await else {
        return;
    };
    let dir = TempDir::new("console-tree");
    let stub = StubServer::start().await.expect("stub");
    let team = tactic(&dir, &stub, false);
    let serving = Serving::start(&[arg(&team), "--state", arg(&dir.path("state"))], &[]);
    stub.push(cached("draft", 1200, 0));
    stub.push(cached("checked", 1290, 1184));
    let id = start_run(&serving, "conv-tree").await;
    wait_status(&serving, &id, "completed").await;
    browser.goto(&format!("{}/#/runs/{id}", serving.base)).await;
    browser
        .wait_until(
            "two dialogs",
            "return document.querySelectorAll('#dialogs .dialog').length === 2",
        )
        .await;
    let received: Vec<String> = stub
        .requests()
        .iter()
        .map(|r| {
            r.header("x-dynamo-session-id")
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(received[0], "conv-tree");
    // The fork is drawn inside its parent's branch, each with the session its requests carried.
    let shown = browser
        .run(
            "const root = document.querySelector('#dialogs > .tree > li > .dialog');
             const fork = document.querySelector('#dialogs > .tree > li > .tree > li > .dialog');
             return [root.querySelector('.title').textContent, root.querySelector('.session').textContent,
                     fork.querySelector('.title').textContent, fork.querySelector('.session').textContent];",
        )
        .await;
    assert_eq!(
        shown,
        json!(["lead / main", received[0], "lead / check", received[1]])
    );
    assert_eq!(browser.text("#answer").await.as_deref(), Some("checked"));
    // Each request's tokens, cache share and priority as sent.
    let fork_call = browser
        .run("return [...document.querySelectorAll('#dialogs .tree .tree tbody td')].slice(0, 5).map(c => c.textContent)")
        .await;
    assert_eq!(fork_call, json!(["1,290", "40", "1,184 (92 %)", "5", "0"]));
    if let Some(file) = screenshot_to("console-run.png") {
        browser.screenshot(&file).await;
    }
}

/// A run of `act` waiting for a decision, shown in the browser; the serving and the tool's file.
async fn waiting_run(browser: &Browser, dir: &TempDir, stub: &StubServer) -> (Serving, String) {
    let team = tactic(dir, stub, true);
    let serving = Serving::start(&[arg(&team), "--state", arg(&dir.path("state"))], &[]);
    stub.push(StubReply::tool_calls(&[(
        "call-1",
        "act",
        r#"{"line": "deployed"}"#,
    )]));
    let id = start_run(&serving, "conv-approve").await;
    wait_status(&serving, &id, "requires_action").await;
    browser.goto(&format!("{}/#/runs/{id}", serving.base)).await;
    browser
        .wait_until(
            "the pending call",
            "return !!document.querySelector(\"#pending [data-call='call-1'] button.approve\")",
        )
        .await;
    let card = browser.text("#pending [data-call='call-1']").await;
    let card = card.unwrap_or_default();
    assert!(
        card.contains("act") && card.contains("lead") && card.contains("a command tool"),
        "{card}"
    );
    assert!(card.contains("\"line\": \"deployed\""), "{card}");
    (serving, id)
}

#[tokio::test(flavor = "multi_thread")]
async fn approve_in_the_browser_completes_the_run_and_the_tool_runs_once() {
    let Some(browser) = Browser::start("console approve").await else {
        return;
    };
    let dir = TempDir::new("console-approve");
    let stub = StubServer::start().await.expect("stub");
    let (serving, id) = waiting_run(&browser, &dir, &stub).await;
    if let Some(file) = screenshot_to("console-approval.png") {
        browser.screenshot(&file).await;
    }
    stub.push(StubReply::text("draft, deployed"));
    stub.push(StubReply::text("checked"));
    browser
        .click("#pending [data-call='call-1'] button.approve")
        .await;
    browser
        .wait_until(
            "the completed run",
            "return !!document.querySelector('h1 [data-status=completed]')",
        )
        .await;
    wait_status(&serving, &id, "completed").await;
    assert_eq!(lines_of(&dir.path("effects.txt")), 1, "the tool ran once");
    assert_eq!(
        browser
            .text("#tools [data-call='call-1'] .result")
            .await
            .as_deref(),
        Some("deployed")
    );
    assert!(
        browser
            .run("return !document.querySelector('#pending')")
            .await
            == json!(true)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_in_the_browser_declines_the_call_and_the_tool_never_runs() {
    let Some(browser) = Browser::start("console reject").await else {
        return;
    };
    let dir = TempDir::new("console-reject");
    let stub = StubServer::start().await.expect("stub");
    let (serving, id) = waiting_run(&browser, &dir, &stub).await;
    stub.push(StubReply::text("not deployed"));
    stub.push(StubReply::text("checked"));
    browser
        .click("#pending [data-call='call-1'] button.reject")
        .await;
    wait_status(&serving, &id, "completed").await;
    browser
        .wait_until(
            "the declined call",
            "const r = document.querySelector(\"#tools [data-call='call-1'] .result\"); return !!r && r.textContent.includes('declined')",
        )
        .await;
    assert_eq!(lines_of(&dir.path("effects.txt")), 0, "the tool ran");
    // The model was told the call was declined.
    let told = stub.requests()[1].body.to_string();
    assert!(told.contains("declined"), "{told}");
}

#[tokio::test(flavor = "multi_thread")]
async fn markup_from_a_model_or_a_tool_is_shown_as_text_and_never_runs() {
    let Some(browser) = Browser::start("console escaping").await else {
        return;
    };
    let dir = TempDir::new("console-escaping");
    let stub = StubServer::start().await.expect("stub");
    let team = tactic(&dir, &stub, false);
    let attack = r#"<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><a href="javascript:window.__pwned=3">x</a>"#;
    dir.write("payload.txt", attack);
    let serving = Serving::start(&[arg(&team), "--state", arg(&dir.path("state"))], &[]);
    stub.push(StubReply::tool_calls(&[("call-<b>1</b>", "page", "{}")]));
    stub.push(StubReply::text(attack));
    stub.push(StubReply::text(&format!("{attack}</pre></div>")));
    let id = start_run(&serving, "<script>window.__pwned=4</script>").await;
    wait_status(&serving, &id, "completed").await;
    for page in [
        format!("{}/", serving.base),
        format!("{}/#/runs/{id}", serving.base),
    ] {
        browser.goto(&page).await;
        browser
            .wait_until(
                "the run",
                &format!("return document.body.textContent.includes('{id}') && !!document.querySelector('[data-status=completed]')"),
            )
            .await;
    }
    browser
        .wait_until(
            "the tool's result",
            "return !!document.querySelector('#tools .result')",
        )
        .await;
    let verdict = browser
        .run(
            "return {pwned: window.__pwned === undefined ? null : window.__pwned,
                     markup: document.querySelectorAll('#main img, #main script, #main a[href^=javascript], #main b').length,
                     result: document.querySelector('#tools .result').textContent,
                     answer: document.querySelector('#answer').textContent};",
        )
        .await;
    assert_eq!(verdict["pwned"], Value::Null, "a script ran: {verdict}");
    assert_eq!(verdict["markup"], 0, "markup was made: {verdict}");
    assert_eq!(verdict["result"], attack);
    assert!(verdict["answer"]
        .as_str()
        .is_some_and(|a| a.starts_with(attack)));
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_key_the_browser_signs_in_once_and_the_console_works() {
    let Some(browser) = Browser::start("console key").await else {
        return;
    };
    let dir = TempDir::new("console-key");
    let stub = StubServer::start().await.expect("stub");
    let team = tactic(&dir, &stub, false);
    let serving = Serving::start(
        &[arg(&team), "--state", arg(&dir.path("state"))],
        &[("LLLM_SERVE_KEY", "k-console-7")],
    );
    stub.push(StubReply::text("draft"));
    stub.push(StubReply::text("checked"));
    let id = {
        let reply = reqwest::Client::new()
            .post(format!("{}/v1/runs", serving.base))
            .header("authorization", "Bearer k-console-7")
            .body(json!({"model": "team", "input": "go"}).to_string())
            .send()
            .await
            .expect("sent");
        let run: Value = serde_json::from_str(&reply.text().await.expect("body")).expect("json");
        run["id"].as_str().expect("id").to_owned()
    };
    // The password a person types into the browser's prompt, given in the address here.
    let address = serving.base.trim_start_matches("http://");
    browser
        .goto(&format!("http://me:k-console-7@{address}/"))
        .await;
    browser
        .wait_until(
            "the run, live, with the key",
            &format!("return document.querySelector('#live').textContent === 'live' && !!document.querySelector(\"tr[data-run='{id}'] [data-status=completed]\")"),
        )
        .await;
    browser.goto(&format!("http://{address}/#/runs/{id}")).await;
    browser
        .wait_until(
            "the run's dialogs, with the key remembered",
            "return document.querySelectorAll('#dialogs .dialog').length === 2",
        )
        .await;
    assert!(!serving.stderr.lock().expect("log").contains("k-console-7"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_tasks_show_under_the_dialog_that_started_them_with_their_status() {
    let Some(browser) = Browser::start("console tasks").await else {
        return;
    };
    let dir = TempDir::new("console-tasks");
    let stub = StubServer::start().await.expect("stub");
    let team = dir.write(
        "team.yaml",
        format!(
            r#"global:
  model_name: m
  model_args: {{api_base: "{api}", timeout: 30}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: lead
    system_prompt: You lead.
    subagents:
      - {{name: researcher, mode: fork, background: true}}
      - {{name: outsider, agent: scout, mode: isolated, background: true}}
  - {{name: scout, system_prompt: You scout.}}
"#,
            api = stub.base_url()
        ),
    );
    let serving = Serving::start(&[arg(&team), "--state", arg(&dir.path("state"))], &[]);
    let start = |subagent: &str, instructions: &str| {
        json!({"subagent": subagent, "instructions": instructions}).to_string()
    };
    let (a, b) = (
        start("researcher", "Dig into A."),
        start("outsider", "Judge B."),
    );
    stub.push(
        StubReply::tool_calls(&[("c1", "task_start", &a), ("c2", "task_start", &b)])
            .for_message("go"),
    );
    let id = start_run(&serving, "conv-tasks").await;
    wait_status(&serving, &id, "completed").await;
    browser.goto(&format!("{}/", serving.base)).await;
    let row = format!("tr[data-run='{id}']");
    browser
        .wait_until(
            "the run with its tasks",
            &format!("const r = document.querySelector(\"{row}\"); return !!r && !!r.querySelector('.tasks')"),
        )
        .await;
    assert_eq!(
        browser.text(&format!("{row} .tasks")).await.as_deref(),
        Some("2 tasks")
    );
    browser.goto(&format!("{}/#/runs/{id}", serving.base)).await;
    browser
        .wait_until(
            "the tasks",
            "return document.querySelectorAll('#tasks tbody tr').length === 2",
        )
        .await;
    let table = browser
        .run("return [...document.querySelectorAll('#tasks tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
        .await;
    assert_eq!(
        table,
        json!([
            [
                "t1",
                "researcher",
                "lead",
                "lead",
                "fork",
                "yes",
                "finished"
            ],
            ["t2", "outsider", "scout", "lead", "isolated", "yes", "finished"]
        ])
    );
    // Both children hang under the lead's dialog, the isolated one too, each saying which task it is.
    let tree = browser
        .run(
            "const root = document.querySelector('#dialogs > .tree > li');
             const kids = [...root.querySelectorAll(':scope > .tree > li > .dialog')];
             return [root.querySelector(':scope > .dialog .title').textContent,
                     document.querySelectorAll('#dialogs > .tree > li').length,
                     kids.map(k => [k.querySelector('.task').dataset.task, k.querySelector('.task').textContent])];",
        )
        .await;
    assert_eq!(
        tree,
        json!([
            "lead / main",
            1,
            [
                [
                    "t1",
                    "task t1: researcher, fork, in the background finished"
                ],
                [
                    "t2",
                    "task t2: outsider, answered by scout, isolated, in the background finished"
                ]
            ]
        ])
    );
    if let Some(file) = screenshot_to("console-tasks.png") {
        browser.screenshot(&file).await;
    }
}
