//! Content-free traces of a multi-agent run: prefix structure kept, no text written.

use std::path::Path;
use std::sync::Arc;

use lllm_runtime::config::parse_tactic;
use lllm_runtime::config::PromptVars;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::Team;
use lllm_runtime::testing::{SharedBuffer, StubServer};
use lllm_runtime::trace::TraceRecorder;
use lllm_runtime::{OpenAiInvoker, TacticRegistry};
use serde_json::Value;

const SECRET_WORDS: [&str; 5] = [
    "Marmalade",
    "zeppelin",
    "weakest",
    "stub answer",
    "You plan",
];

#[tokio::test]
async fn a_trace_keeps_the_prefix_structure_and_no_text() {
    let server = StubServer::start().await.expect("server");
    let text = format!(
        "global:
  model_name: m
  model_args: {{api_base: \"{}\", max_tokens: 32}}
  inference_hints: {{profile: dynamo, priority: 3}}
agent_configs:
  - {{name: planner, system_prompt: \"You plan trips for the Marmalade family. {}\"}}
steps:
  - {{agent: planner, receive: \"Plan: {{{{ input }}}}\", save: plan}}
  - parallel:
      - {{agent: planner, dialog: critique, fork_from: main, receive: Find the weakest point.}}
      - steps:
          - {{agent: planner, dialog: c, fork_from: main, receive: Draft part C.}}
          - {{agent: planner, dialog: c, receive: Now polish part C.}}
",
        server.base_url(),
        "Always travel by zeppelin. ".repeat(30)
    );
    let spec = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("tactic");
    let out = SharedBuffer::default();
    let recorder = Arc::new(TraceRecorder::new(Box::new(out.clone()), 16).expect("recorder"));
    let invoker = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    let team = Team::traced(&spec, invoker, Some(recorder.clone())).expect("team");
    let vars: PromptVars = [("input".to_owned(), "a week in the Alps".into())]
        .into_iter()
        .collect();
    TacticRegistry::new()
        .create(&spec)
        .expect("steps")
        .run(&team, &vars)
        .await
        .expect("runs");
    recorder.flush().expect("flush");

    let written = out.text();
    for word in SECRET_WORDS {
        assert!(!written.contains(word), "the trace contains {word:?}");
    }
    let mut lines = written
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"));
    let header = lines.next().expect("header");
    assert_eq!(header["format"], "lllm-trace/1");
    assert_eq!(header["block_size"], 16);
    let rows: Vec<Value> = lines.collect();
    assert_eq!(rows.len(), 4);

    let planner = team.agent("planner").expect("planner");
    let session = |alias: &str| planner.dialog_id(alias).expect("dialog").to_string();
    let row = |alias: &str, nth: usize| {
        rows.iter()
            .filter(|r| r["session_id"] == session(alias).as_str())
            .nth(nth)
            .cloned()
            .unwrap_or_else(|| panic!("no row {nth} for {alias}"))
    };
    let ids = |r: &Value| -> Vec<u64> {
        r["hash_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_u64().expect("id"))
            .collect()
    };
    let main = ids(&row("main", 0));
    assert!(main.len() > 10, "a long system prompt makes many blocks");
    let full = main.len() - 1;
    for fork in ["critique", "c"] {
        let first = row(fork, 0);
        assert_eq!(
            ids(&first)[..full],
            main[..full],
            "{fork} starts from its parent's prefix"
        );
        assert_eq!(first["parent_session_id"], session("main").as_str());
        assert_eq!(first["agent"], "planner");
        assert_eq!(first["priority"], 3);
        assert_eq!(first["osl"], 32);
    }
    let draft = ids(&row("c", 0));
    let polish = ids(&row("c", 1));
    assert_eq!(
        polish[..draft.len() - 1],
        draft[..draft.len() - 1],
        "a later turn extends the earlier one"
    );
    assert!(polish.len() > draft.len());
    let second = row("c", 1);
    assert!(second["delay"].as_u64().is_some());
    assert_eq!(second["tool_wait_ms"], 0);
    assert_eq!(second["input_length"], 11, "the server's usage count");
    assert_eq!(second["output_length"], 3);
    assert!(second["latency_ms"].as_u64().is_some());
    let timestamps: Vec<u64> = rows
        .iter()
        .map(|r| r["timestamp"].as_u64().expect("timestamp"))
        .collect();
    assert!(timestamps.iter().all(|t| *t < 60_000));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nap {
    ms: u64,
}

#[tokio::test]
async fn tool_time_and_exact_token_blocks_are_recorded() {
    use lllm_runtime::testing::ScriptedInvoker;
    use lllm_runtime::tools::ToolError;
    use lllm_runtime::{tool_fn, Agent, Message};

    let tokenizer_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiny-tokenizer.json");
    let tokenizer = TraceRecorder::load_tokenizer(&tokenizer_path).expect("tokenizer");
    let out = SharedBuffer::default();
    let recorder = Arc::new(
        TraceRecorder::with_tokenizer(Box::new(out.clone()), 8, Some(tokenizer.clone()))
            .expect("recorder"),
    );
    let mut call = Message::assistant("");
    call.content = None;
    call.tool_calls = vec![lllm_runtime::tools::ToolCall {
        id: "n".into(),
        name: "nap".into(),
        arguments: r#"{"ms": 250}"#.into(),
    }];
    let invoker = Arc::new(ScriptedInvoker::new().message(call).reply("rested"));
    let nap = tool_fn("nap", "Sleep", |args: Nap| async move {
        tokio::time::sleep(std::time::Duration::from_millis(args.ms)).await;
        Ok::<_, ToolError>("done")
    });
    let agent = Agent::builder()
        .name("napper")
        .system_prompt("the plan for the week is a good plan")
        .model("m")
        .invoker(invoker)
        .tool(nap)
        .trace(recorder.clone())
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("please write the plan").expect("receive");
    agent.respond("main").await.expect("answer");
    recorder.flush().expect("flush");

    let written = out.text();
    let lines: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines[0]["blocks"], "tokenizer");
    assert_eq!(lines.len(), 3);
    let (first, second) = (&lines[1], &lines[2]);
    assert_eq!(first["lengths_estimated"], true);
    // Without usage from the server, the tokenizer counts the prompt exactly.
    let dialog = agent.dialog("main").expect("main");
    let asked: Vec<&Message> = dialog.messages().iter().take(2).collect();
    let prompt = lllm_core::internal::serialise(&asked);
    let exact = tokenizer
        .encode(prompt, false)
        .expect("encodes")
        .get_ids()
        .len() as u64;
    assert_eq!(first["input_length"], exact);
    assert_eq!(
        first["hash_ids"].as_array().map(Vec::len),
        Some(exact.div_ceil(8) as usize)
    );
    let tool_wait = second["tool_wait_ms"].as_u64().expect("tool wait");
    assert!(tool_wait >= 250, "{second}");
    assert!(second["delay"].as_u64().expect("delay") >= tool_wait);
    assert_eq!(first["tool_wait_ms"], 0);
}

/// The trace says what the request carried: vLLM runs lower priorities first, so a configured 5 is
/// sent (and must be traced) as -5; Dynamo takes it as given, inside `nvext.agent_hints`.
#[tokio::test]
async fn the_traced_priority_is_the_one_the_body_carried() {
    use lllm_runtime::{Agent, InferenceHints, ModelArgs, Profile};

    for (profile, sent) in [
        (Profile::Vllm, "/priority"),
        (Profile::Dynamo, "/nvext/agent_hints/priority"),
    ] {
        let server = StubServer::start().await.expect("server");
        let out = SharedBuffer::default();
        let recorder = Arc::new(TraceRecorder::new(Box::new(out.clone()), 16).expect("recorder"));
        let agent = Agent::builder()
            .name("ranker")
            .system_prompt("s")
            .model("m")
            .invoker(Arc::new(OpenAiInvoker::with_defaults(
                ServerDefaults::none(),
            )))
            .model_args(ModelArgs::new().api_base(server.base_url()))
            .inference_hints(
                InferenceHints::builder()
                    .profile(profile)
                    .priority(5)
                    .build()
                    .expect("hints"),
            )
            .trace(recorder.clone())
            .build()
            .expect("agent");
        agent.open("main").expect("open");
        agent.receive("hi").expect("receive");
        agent.respond("main").await.expect("answer");
        recorder.flush().expect("flush");

        let body = &server.requests()[0].body;
        let row: Value =
            serde_json::from_str(out.text().lines().nth(1).expect("row")).expect("JSON");
        let expected = if profile == Profile::Vllm { -5 } else { 5 };
        assert_eq!(
            body.pointer(sent),
            Some(&Value::from(expected)),
            "{profile:?}: {body}"
        );
        assert_eq!(row["priority"], expected, "{profile:?}: {row}");
    }
}

/// A run recorded under `vllm` with `priority: 5` sends `-5`, and its trace says so along with the
/// profile. Replayed under `vllm` it sends the same `-5`; under `dynamo`, `5` in `nvext.agent_hints`;
/// under `sglang`, `5`.
#[tokio::test]
async fn a_vllm_trace_replays_the_priority_it_sent() {
    use lllm_runtime::replay::{replay, ReplayOptions};
    use lllm_runtime::trace::TraceFormat;
    use lllm_runtime::Profile;

    let trace = traced_vllm_answer(TraceFormat::Lllm).await;
    let lines = json_lines(&trace);
    assert_eq!(lines[0]["format"], "lllm-trace/1");
    assert_eq!(lines[0]["profile"], "vllm", "{}", lines[0]);
    assert_eq!(lines[1]["priority"], -5);
    assert!(
        lines[1].get("profile").is_none(),
        "the header's: {}",
        lines[1]
    );

    for (profile, path, expected) in [
        (Profile::Vllm, "/priority", -5),
        (Profile::Dynamo, "/nvext/agent_hints/priority", 5),
        (Profile::Sglang, "/priority", 5),
    ] {
        let server = StubServer::start().await.expect("server");
        let mut options = ReplayOptions::new(server.base_url(), "tiny");
        options.profile = profile;
        options.speed = 1000.0;
        let report = replay(&trace, &options).await.expect("replays");
        assert_eq!(report.requests.len(), 1);
        assert_eq!(report.requests[0].error, None);
        let body = &server.requests()[0].body;
        assert_eq!(
            body.pointer(path),
            Some(&Value::from(expected)),
            "{profile}: {body}"
        );
        if profile == Profile::Dynamo {
            assert!(body.get("priority").is_none(), "{body}");
        }
    }
}

/// One `vllm` agent with `priority: 5` answering once (the body carries `-5`), traced in `format`.
async fn traced_vllm_answer(format: lllm_runtime::trace::TraceFormat) -> String {
    use lllm_runtime::{Agent, InferenceHints, ModelArgs, Profile};

    let server = StubServer::start().await.expect("server");
    let out = SharedBuffer::default();
    let recorder = Arc::new(
        TraceRecorder::with_format(Box::new(out.clone()), 16, None, format).expect("recorder"),
    );
    let agent = Agent::builder()
        .name("ranker")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(server.base_url()))
        .inference_hints(
            InferenceHints::builder()
                .profile(Profile::Vllm)
                .priority(5)
                .build()
                .expect("hints"),
        )
        .trace(recorder.clone())
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    agent.respond("main").await.expect("answer");
    recorder.flush().expect("flush");
    let sent = &server.requests()[0].body;
    assert_eq!(sent["priority"], -5, "vLLM runs lower first: {sent}");
    out.text()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// A trace written before traces named their profile is replayed with its values as they are.
#[tokio::test]
async fn a_trace_without_a_profile_sends_its_values_as_they_are() {
    use lllm_runtime::replay::{replay, ReplayOptions};
    use lllm_runtime::Profile;

    let trace = r#"{"format": "lllm-trace/1", "block_size": 16, "blocks": "chars/4"}
{"session_id": "s", "agent": "a", "timestamp": 0, "delay": 0, "tool_wait_ms": 0, "input_length": 3, "output_length": 2, "hash_ids": [1], "priority": -5, "latency_ms": 1}
{"session_id": "t", "profile": "dynamo", "agent": "a", "timestamp": 0, "delay": 0, "tool_wait_ms": 0, "input_length": 3, "output_length": 2, "hash_ids": [1], "priority": 7, "latency_ms": 1}"#;
    let server = StubServer::start().await.expect("server");
    let mut options = ReplayOptions::new(server.base_url(), "tiny");
    options.profile = Profile::Vllm;
    options.speed = 1000.0;
    replay(trace, &options).await.expect("replays");
    let priority_of = |session: &str| {
        server
            .requests()
            .iter()
            .find(|r| r.header("x-session-id") == Some(session))
            .map(|r| r.body["priority"].clone())
    };
    assert_eq!(priority_of("s"), Some(Value::from(-5)), "as recorded");
    assert_eq!(
        priority_of("t"),
        Some(Value::from(-7)),
        "a row that names its profile is converted"
    );
}

/// Dynamo's agentic format has one meaning of `priority`, Dynamo's (higher runs first): a vLLM
/// request that sent `-5` is recorded as `5`, and the header stays exactly Dynamo's. A rows-only
/// trace has no header, so each row names its profile.
#[tokio::test]
async fn agentic_rows_record_dynamos_priority_and_rows_only_name_their_profile() {
    use lllm_runtime::trace::TraceFormat;

    let agentic = json_lines(&traced_vllm_answer(TraceFormat::AgenticMooncake).await);
    assert_eq!(agentic[0]["schema"], "dynamo.agentic_mooncake");
    let mut keys: Vec<&str> = agentic[0]
        .as_object()
        .expect("header")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["block_size", "hash_id_scope", "schema", "source", "version"]
    );
    assert_eq!(agentic[1]["priority"], 5, "{}", agentic[1]);
    assert!(agentic[1].get("profile").is_none());

    let rows = json_lines(&traced_vllm_answer(TraceFormat::RowsOnly).await);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["priority"], -5);
    assert_eq!(rows[0]["profile"], "vllm");
}

/// The header goes first even when no request was answered: flushing writes it.
#[tokio::test]
async fn a_trace_with_no_row_still_has_its_header() {
    let out = SharedBuffer::default();
    let recorder = TraceRecorder::new(Box::new(out.clone()), 16).expect("recorder");
    recorder.flush().expect("flush");
    drop(recorder);
    let lines = json_lines(&out.text());
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["format"], "lllm-trace/1");
    assert!(lines[0].get("profile").is_none());

    let dropped = SharedBuffer::default();
    drop(TraceRecorder::new(Box::new(dropped.clone()), 16).expect("recorder"));
    assert_eq!(dropped.text().lines().count(), 1, "written when dropped");
}
