//! Skills on the wire (issue 37, DESIGN §17): the index rides in the system prompt and never a
//! body; a `load_skill` result arrives at the tail, so the next request extends the previous one
//! byte for byte; `read_skill_file` stays inside the skill's folder; a loaded skill's
//! `allowed-tools` refuses a call outside it without running it, the tools offered unchanged.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::{StubReply, StubServer};
use lllm_runtime::tools::skills::SkillSet;
use lllm_runtime::tools::ToolError;
use lllm_runtime::{tool_fn, Agent, ModelArgs, OpenAiInvoker, Tool};
use serde_json::{json, Value};

use crate::support::{tool_results, TempDir};

/// Writes skill `name` under `dir/skills` with `extra` front matter lines and `body`.
fn skill(dir: &TempDir, name: &str, extra: &str, body: &str) -> std::path::PathBuf {
    let folder = dir.0.join("skills").join(name);
    std::fs::create_dir_all(&folder).expect("skill folder");
    let text = format!("---\nname: {name}\ndescription: Knows {name}.\n{extra}---\n{body}");
    std::fs::write(folder.join("SKILL.md"), text).expect("SKILL.md");
    folder
}

fn agent(server: &StubServer, skills: SkillSet, tools: Vec<Arc<dyn Tool>>) -> Agent {
    Agent::builder()
        .name("helper")
        .system_prompt("You help.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .max_call_retries(0)
        .skills(skills)
        .tools(tools)
        .build()
        .expect("agent")
}

fn text(value: &Value) -> String {
    serde_json::to_string(value).expect("json")
}

#[tokio::test]
async fn the_index_rides_in_the_system_prompt_and_a_loaded_body_arrives_at_the_tail() {
    let dir = TempDir::new("skills-tail");
    skill(&dir, "alpha", "", "ALPHA-BODY: do alpha things.\n");
    skill(&dir, "beta", "", "BETA-BODY: do beta things.\n");
    let skills = SkillSet::load(&[dir.0.join("skills")]).expect("skills");
    let server = StubServer::start().await.expect("server");
    let load = json!({"name": "alpha"}).to_string();
    server.push(StubReply::tool_calls(&[("c1", "load_skill", &load)]));
    server.push(StubReply::text("Done."));
    let agent = agent(&server, skills, Vec::new());
    agent.open("main").expect("open");
    agent.receive("Do alpha.").expect("receive");
    agent.respond("main").await.expect("answer");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (first, second) = (&requests[0], &requests[1]);
    let system = first.body["messages"][0]["content"]
        .as_str()
        .expect("system");
    assert!(
        system.starts_with("You help.\n\n# Skills\n"),
        "the index follows the system prompt: {system}"
    );
    assert!(
        system.ends_with("\n- alpha: Knows alpha.\n- beta: Knows beta."),
        "{system}"
    );
    for request in [first, second] {
        let all = text(&request.body);
        assert!(
            !all.contains("BETA-BODY"),
            "a body never loaded never travels"
        );
        let names: Vec<&str> = request.body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(names, ["load_skill", "read_skill_file"]);
    }
    assert!(
        !text(&first.body).contains("ALPHA-BODY"),
        "no body before it is loaded"
    );
    // The second request is the first one byte for byte, then the call and the body.
    let before = text(&first.body["messages"]);
    let after = text(&second.body["messages"]);
    assert!(
        after.starts_with(&before[..before.len() - 1]),
        "the prefix never changes:\n{before}\n{after}"
    );
    let tail = second.body["messages"].as_array().expect("messages");
    let last = tail.last().expect("a last message");
    assert_eq!(last["role"], "tool");
    assert_eq!(last["content"], "ALPHA-BODY: do alpha things.\n");
    assert_eq!(
        tail.len(),
        first.body["messages"].as_array().expect("m").len() + 2
    );
    assert_eq!(
        first.body["tools"], second.body["tools"],
        "the tools never change"
    );
}

#[tokio::test]
async fn read_skill_file_stays_inside_the_skill_folder() {
    let dir = TempDir::new("skills-contained");
    let folder = skill(&dir, "alpha", "", "Read template.md.\n");
    skill(&dir, "beta", "", "Beta.\n");
    std::fs::write(folder.join("template.md"), "TEMPLATE: fill me.\n").expect("template");
    dir.write("secret.txt", "TOP-SECRET\n");
    std::os::unix::fs::symlink(dir.0.join("secret.txt"), folder.join("leak.md")).expect("link");
    std::os::unix::fs::symlink(folder.join("template.md"), folder.join("inside.md"))
        .expect("link inside");
    let skills = SkillSet::load(&[dir.0.join("skills")]).expect("skills");
    let server = StubServer::start().await.expect("server");
    let read = |path: &str| json!({"name": "alpha", "path": path}).to_string();
    let absolute = read(&dir.0.join("secret.txt").display().to_string());
    let (ok, dots, leak, inside, sibling) = (
        read("template.md"),
        read("../../secret.txt"),
        read("leak.md"),
        read("inside.md"),
        read("../beta/SKILL.md"),
    );
    server.push(StubReply::tool_calls(&[
        ("c1", "read_skill_file", &ok),
        ("c2", "read_skill_file", &dots),
        ("c3", "read_skill_file", &leak),
        ("c4", "read_skill_file", &inside),
        ("c5", "read_skill_file", &sibling),
        ("c6", "read_skill_file", &absolute),
    ]));
    server.push(StubReply::text("Done."));
    let agent = agent(&server, skills, Vec::new());
    agent.open("main").expect("open");
    agent.receive("Fill the template.").expect("receive");
    agent.respond("main").await.expect("answer");
    let requests = server.requests();
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 6, "{results:?}");
    assert_eq!(results[0], "TEMPLATE: fill me.\n");
    for refused in &results[1..] {
        assert!(
            refused.starts_with("error: "),
            "refused in words: {refused}"
        );
    }
    let all = text(&requests[1].body);
    assert!(
        !all.contains("TOP-SECRET"),
        "nothing outside the folder is read"
    );
    assert!(
        !all.contains("Beta.\\n"),
        "nor another skill's file by `..`"
    );
    assert_eq!(
        all.matches("TEMPLATE: fill me.").count(),
        1,
        "a link inside is refused too"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Target {
    /// What to act on.
    target: String,
}

fn counted(name: &'static str, calls: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    tool_fn(name, "Acts on a target", move |args: Target| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(format!("{name} did {}", args.target))
        }
    })
}

#[tokio::test]
async fn allowed_tools_refuse_a_call_outside_them_without_running_it() {
    let dir = TempDir::new("skills-allowed");
    skill(
        &dir,
        "careful",
        "allowed-tools: safe(read:*)\n",
        "Only use safe.\n",
    );
    skill(&dir, "open", "", "Anything goes.\n");
    let skills = SkillSet::load(&[dir.0.join("skills")]).expect("skills");
    let (safe_calls, danger_calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tools = vec![
        counted("safe", safe_calls.clone()),
        counted("danger", danger_calls.clone()),
    ];
    let server = StubServer::start().await.expect("server");
    let target = |t: &str| json!({"target": t}).to_string();
    let load = json!({"name": "careful"}).to_string();
    // Before the skill is loaded, `danger` runs; its own answer's load holds from the next round.
    server.push(StubReply::tool_calls(&[
        ("c1", "danger", &target("one")),
        ("c2", "load_skill", &load),
    ]));
    server.push(StubReply::tool_calls(&[
        ("c3", "danger", &target("two")),
        ("c4", "safe", &target("three")),
        (
            "c5",
            "read_skill_file",
            &json!({"name": "careful", "path": "none.md"}).to_string(),
        ),
    ]));
    server.push(StubReply::text("Done."));
    let agent = agent(&server, skills, tools);
    agent.open("main").expect("open");
    agent.receive("Act.").expect("receive");
    agent.respond("main").await.expect("answer");
    assert_eq!(
        danger_calls.load(Ordering::SeqCst),
        1,
        "danger ran only before the load"
    );
    assert_eq!(safe_calls.load(Ordering::SeqCst), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let results = tool_results(&requests[2]);
    assert_eq!(results[0], "danger did one");
    assert_eq!(results[1], "Only use safe.\n");
    assert!(
        results[2].starts_with("error: not allowed: the loaded skill `careful`"),
        "{}",
        results[2]
    );
    assert!(
        results[2].contains("`danger` was not run"),
        "{}",
        results[2]
    );
    assert_eq!(results[3], "safe did three");
    assert!(
        !results[4].contains("not allowed"),
        "the skill tools stay allowed: {}",
        results[4]
    );
    for request in &requests[1..] {
        assert_eq!(
            request.body["tools"], requests[0].body["tools"],
            "the tools offered never change"
        );
    }
}

/// An answer (text or one call) whose prompt the server counted as `prompt_tokens`.
fn counted_reply(message: Value, prompt_tokens: u64) -> StubReply {
    StubReply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "m",
               "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}}),
    )
}

#[tokio::test]
async fn compaction_keeps_loaded_skills_loaded() {
    use lllm_core::{ContextPolicy, SessionOnCompaction, Window};
    let dir = TempDir::new("skills-compact");
    skill(&dir, "alpha", "", "ALPHA-BODY.\n");
    skill(&dir, "beta", "", "BETA-BODY.\n");
    let skills = SkillSet::load(&[dir.0.join("skills")]).expect("skills");
    let server = StubServer::start().await.expect("server");
    let load = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "load_skill", "arguments": "{\"name\":\"alpha\"}"}}]});
    let text = |t: &str| json!({"role": "assistant", "content": t});
    server.push(counted_reply(load, 50));
    server.push(counted_reply(text("first answer"), 100));
    server.push(counted_reply(text("second answer"), 600));
    server.push(counted_reply(text("the summary"), 650));
    server.push(counted_reply(text("third answer"), 120));
    let policy = ContextPolicy::with(Window::Tokens(1000), 0.5, 2, SessionOnCompaction::Keep)
        .expect("policy");
    let agent = Agent::builder()
        .name("helper")
        .system_prompt("You help.")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .max_call_retries(0)
        .skills(skills)
        .context(policy)
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    for question in ["q1", "q2", "q3"] {
        agent.receive(question).expect("receive");
        agent.respond("main").await.expect("answer");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let summary = &requests[3].body["messages"];
    let instruction = summary
        .as_array()
        .and_then(|m| m.last())
        .expect("instruction");
    assert!(
        instruction["content"]
            .as_str()
            .is_some_and(|t| t.contains("skills `alpha` stay loaded")),
        "{instruction}"
    );
    let window = requests[4].body["messages"].as_array().expect("messages");
    let contents: Vec<&str> = window
        .iter()
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    // The system message (with the index), the summary, the kept tail, alpha again, the question.
    assert_eq!(contents.len(), 7, "{window:?}");
    assert_eq!(contents[2..4], ["q2", "second answer"]);
    assert_eq!(window[4]["tool_calls"][0]["function"]["name"], "load_skill");
    assert_eq!(
        window[4]["tool_calls"][0]["function"]["arguments"],
        "{\"name\":\"alpha\"}"
    );
    assert_eq!(window[5]["tool_call_id"], window[4]["tool_calls"][0]["id"]);
    assert_eq!(contents[5], "ALPHA-BODY.\n");
    assert_eq!(contents[6], "q3");
    assert!(!serde_json::to_string(window)
        .expect("json")
        .contains("BETA-BODY"));
    let dialog = agent.dialog("main").expect("dialog");
    assert_eq!(
        lllm_runtime::tools::skills::loaded_skills(dialog.messages().iter()),
        ["alpha"]
    );
}
