//! OpenTelemetry export and agentic traces, end to end: the `lllm` binary runs a tactic with a fork
//! tree, parallel branches, joins and a tool call against the stub server, and
//!
//! - exports its spans over OTLP/HTTP (JSON) to a local collector that records what it receives:
//!   span tree, kinds, GenAI attributes, fork links, content only when asked, `TRACEPARENT`;
//! - exports them over OTLP/HTTP (protobuf) to a real Arize Phoenix, whose API is queried
//!   (`LLLM_PHOENIX_URL`, started by `scripts/test.sh`);
//! - writes a `dynamo.agentic_mooncake` trace that NVIDIA Dynamo's offline simulator replays
//!   (`LLLM_DYNAMO_PYTHON`, the Dynamo virtualenv's Python, set by `scripts/test.sh`).
//!
//! A missing Phoenix or Dynamo skips those tests with a note, unless `LLLM_REQUIRE_PHOENIX=1` or
//! `LLLM_REQUIRE_DYNAMO_REPLAY=1` (as the test script sets them) makes it a failure.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;
use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;
use tokio::process::Command;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "lllm-observability-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A tactic with a fork tree two levels deep, parallel branches, joins, and a command tool the
/// first turn calls.
fn fork_tree(url: &str) -> String {
    format!(
        r#"global:
  model_name: hosted_vllm/tiny
  model_args: {{api_base: "{url}", max_tokens: 24, temperature: 0.5}}
  inference_hints: {{profile: dynamo, session_prefix: tree, priority: 7}}
agent_configs:
  - name: lead
    system_prompt: You plan.
    tools:
      - name: count
        description: Count words.
        parameters: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
        command: [wc, -w]
steps:
  - {{agent: lead, receive: "SECRET-PROMPT plan {{{{ input }}}}", save: plan}}
  - parallel:
      - steps:
          - {{agent: lead, dialog: a, fork_from: main, receive: part A, save: draft_a}}
          - parallel:
              - {{agent: lead, dialog: a_cost, fork_from: a, receive: cost of A, save: a_cost}}
              - {{agent: lead, dialog: a_risk, fork_from: a, receive: risk of A, save: a_risk}}
          - {{agent: lead, dialog: a, receive: "merge {{{{ a_cost }}}} {{{{ a_risk }}}}", save: part_a}}
      - {{agent: lead, dialog: b, fork_from: main, receive: part B, save: part_b}}
  - {{agent: lead, receive: "combine {{{{ part_a }}}} {{{{ part_b }}}}", save: final}}
output: "{{{{ final }}}}"
"#
    )
}

/// The stub answers the first turn with a tool call, then text.
async fn stub() -> StubServer {
    let server = StubServer::start().await.expect("stub server");
    server.push(
        StubReply::tool_calls(&[("call_1", "count", r#"{"text": "one two"}"#)])
            .for_message("SECRET-PROMPT"),
    );
    server
}

fn lllm() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
    command
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("LLLM_LOG")
        .env_remove("TRACEPARENT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_EXPORTER_OTLP_HEADERS")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env_remove("OTEL_SERVICE_NAME")
        .kill_on_drop(true);
    command
}

async fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let output = lllm()
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("lllm runs");
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// An OTLP/HTTP collector that keeps every JSON body posted to `/v1/traces`.
struct Collector {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Collector {
    async fn start() -> Collector {
        let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
        let kept = bodies.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            post(move |body: Bytes| {
                let kept = kept.clone();
                async move {
                    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    kept.lock().expect("lock").push(value);
                    "{}"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    stopped.await.ok();
                })
                .await
                .ok();
        });
        Collector {
            url,
            bodies,
            _stop: stop,
        }
    }

    /// Every span received, flattened: `{name, kind, traceId, spanId, parentSpanId, links,
    /// attributes: {key: value}, status}`.
    fn spans(&self) -> Vec<Span> {
        let bodies = self.bodies.lock().expect("lock").clone();
        let mut spans = Vec::new();
        for body in bodies {
            for resource in body["resourceSpans"].as_array().into_iter().flatten() {
                let service = attributes(&resource["resource"]["attributes"]);
                for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                    for span in scope["spans"].as_array().into_iter().flatten() {
                        spans.push(Span {
                            name: span["name"].as_str().unwrap_or_default().to_owned(),
                            kind: span["kind"].as_i64().unwrap_or(0),
                            trace: span["traceId"].as_str().unwrap_or_default().to_owned(),
                            id: span["spanId"].as_str().unwrap_or_default().to_owned(),
                            parent: span["parentSpanId"].as_str().unwrap_or_default().to_owned(),
                            links: span["links"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|l| l["spanId"].as_str().unwrap_or_default().to_owned())
                                .collect(),
                            attributes: attributes(&span["attributes"]),
                            status: span["status"]["code"].as_i64().unwrap_or(0),
                            resource: service.clone(),
                        });
                    }
                }
            }
        }
        spans
    }
}

#[derive(Debug, Clone)]
struct Span {
    name: String,
    kind: i64,
    trace: String,
    id: String,
    parent: String,
    links: Vec<String>,
    attributes: serde_json::Map<String, Value>,
    status: i64,
    resource: serde_json::Map<String, Value>,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }

    fn str(&self, key: &str) -> &str {
        self.attr(key).and_then(Value::as_str).unwrap_or_default()
    }
}

/// OTLP JSON attributes (`[{key, value: {stringValue|intValue|doubleValue|boolValue}}]`) as a map.
fn attributes(list: &Value) -> serde_json::Map<String, Value> {
    let mut map = serde_json::Map::new();
    for kv in list.as_array().into_iter().flatten() {
        let value = &kv["value"];
        let plain = if let Some(s) = value.get("stringValue") {
            s.clone()
        } else if let Some(i) = value.get("intValue") {
            // Protobuf JSON writes 64-bit integers as strings or numbers.
            i.as_str()
                .and_then(|s| s.parse::<i64>().ok())
                .map_or_else(|| i.clone(), Value::from)
        } else if let Some(d) = value.get("doubleValue") {
            d.clone()
        } else if let Some(b) = value.get("boolValue") {
            b.clone()
        } else {
            value.clone()
        };
        map.insert(kv["key"].as_str().unwrap_or_default().to_owned(), plain);
    }
    map
}

const INTERNAL: i64 = 1;
const CLIENT: i64 = 3;

async fn run_exported(
    collector: &Collector,
    server: &StubServer,
    extra: &[(&str, &str)],
) -> (Output, TempDir) {
    let dir = TempDir::new("otlp");
    let tactic = dir.write("tree.yaml", &fork_tree(&server.base_url()));
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ];
    env.extend_from_slice(extra);
    let output = run(&["run", arg(&tactic), "--input", "a garden"], &env).await;
    (output, dir)
}

#[tokio::test]
async fn spans_follow_the_genai_conventions_and_join_the_server_on_the_session_id() {
    let collector = Collector::start().await;
    let server = stub().await;
    let (output, _dir) = run_exported(&collector, &server, &[]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let spans = collector.spans();

    // One trace, rooted in the run's workflow span.
    let traces: std::collections::BTreeSet<&str> = spans.iter().map(|s| s.trace.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace per run: {traces:?}");
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    let workflow = roots[0];
    assert_eq!(workflow.name, "invoke_workflow tree");
    assert_eq!(workflow.kind, INTERNAL);
    assert_eq!(workflow.str("gen_ai.operation.name"), "invoke_workflow");
    assert_eq!(
        workflow.resource.get("service.name"),
        Some(&Value::from("lllm"))
    );

    let by_id = |id: &str| spans.iter().find(|s| s.id == id);
    let agents: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent lead")
        .collect();
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat tiny").collect();
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "execute_tool count")
        .collect();
    // Seven turns; the first calls the tool, so it makes two requests.
    assert_eq!(
        agents.len(),
        7,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert_eq!(chats.len(), 8);
    assert_eq!(tools.len(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    for agent in &agents {
        assert_eq!(agent.kind, INTERNAL);
        assert_eq!(agent.parent, workflow.id, "agents are children of the run");
        assert_eq!(agent.str("gen_ai.operation.name"), "invoke_agent");
        assert_eq!(agent.str("gen_ai.agent.name"), "lead");
        assert_eq!(agent.str("gen_ai.provider.name"), "dynamo");
    }
    let sessions: Vec<&str> = requests
        .iter()
        .filter_map(|r| r.header("x-dynamo-session-id"))
        .collect();
    for chat in &chats {
        assert_eq!(chat.kind, CLIENT);
        let parent = by_id(&chat.parent).expect("a chat's parent");
        assert_eq!(parent.name, "invoke_agent lead");
        assert_eq!(chat.str("gen_ai.operation.name"), "chat");
        assert_eq!(chat.str("gen_ai.request.model"), "tiny");
        assert_eq!(
            chat.attr("gen_ai.request.max_tokens"),
            Some(&Value::from(24))
        );
        assert_eq!(
            chat.attr("gen_ai.request.temperature"),
            Some(&Value::from(0.5))
        );
        assert_eq!(chat.attr("lllm.priority"), Some(&Value::from(7)));
        assert_eq!(chat.attr("lllm.retry.attempt"), Some(&Value::from(1)));
        assert_eq!(chat.str("lllm.profile"), "dynamo");
        assert_eq!(chat.str("server.address"), "127.0.0.1");
        assert!(chat
            .attr("gen_ai.usage.input_tokens")
            .is_some_and(Value::is_i64));
        assert!(chat
            .attr("gen_ai.usage.output_tokens")
            .is_some_and(Value::is_i64));
        assert!(!chat.str("gen_ai.response.id").is_empty());
        assert_eq!(chat.str("gen_ai.response.finish_reasons"), r#"["stop"]"#);
        // The conversation id is the session id the server received.
        let conversation = chat.str("gen_ai.conversation.id");
        assert!(
            sessions.contains(&conversation),
            "{conversation} in {sessions:?}"
        );
        assert_eq!(parent.str("gen_ai.conversation.id"), conversation);
    }
    // Each request's session header matches one chat span, one for one.
    let mut from_spans: Vec<&str> = chats
        .iter()
        .map(|c| c.str("gen_ai.conversation.id"))
        .collect();
    let mut on_wire = sessions.clone();
    from_spans.sort_unstable();
    on_wire.sort_unstable();
    assert_eq!(from_spans, on_wire);
    // A fork's parent session is there, as the server was told.
    let forked: Vec<&&Span> = chats
        .iter()
        .filter(|c| !c.str("lllm.parent_session.id").is_empty())
        .collect();
    assert_eq!(
        forked.len(),
        5,
        "the requests of forks a (two), a_cost, a_risk and b"
    );
    let tool = tools[0];
    assert_eq!(tool.kind, INTERNAL);
    assert_eq!(tool.str("gen_ai.tool.name"), "count");
    assert_eq!(tool.str("gen_ai.tool.call.id"), "call_1");
    assert_eq!(tool.str("gen_ai.tool.type"), "function");
    assert_eq!(
        by_id(&tool.parent).map(|p| p.name.as_str()),
        Some("invoke_agent lead")
    );

    // Every fork's first span links to its parent dialog's latest span; nothing else links.
    let linked: Vec<&&Span> = agents.iter().filter(|a| !a.links.is_empty()).collect();
    assert_eq!(linked.len(), 4, "{linked:?}");
    for fork in linked {
        let target = by_id(&fork.links[0]).expect("a link names a span of the run");
        assert_eq!(target.name, "invoke_agent lead");
        assert_ne!(target.str("lllm.dialog.id"), fork.str("lllm.dialog.id"));
    }

    // No content by default: no prompt, answer or tool argument anywhere.
    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert!(span.attr(key).is_none(), "{} has {key}", span.name);
        }
        let all = serde_json::to_string(&span.attributes).expect("json");
        assert!(!all.contains("SECRET-PROMPT"), "{all}");
        assert!(!all.contains("stub answer"), "{all}");
    }
}

#[tokio::test]
async fn content_is_recorded_when_asked_and_traceparent_joins_the_callers_trace() {
    let collector = Collector::start().await;
    let server = stub().await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{caller}-01");
    let (output, _dir) = run_exported(
        &collector,
        &server,
        &[
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ("TRACEPARENT", &traceparent),
            ("OTEL_SERVICE_NAME", "planner-service"),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let spans = collector.spans();
    assert!(
        spans.iter().all(|s| s.trace == trace_id),
        "every span joins the caller's trace"
    );
    let workflow = spans
        .iter()
        .find(|s| s.name == "invoke_workflow tree")
        .expect("workflow span");
    assert_eq!(workflow.parent, caller);
    assert_eq!(
        workflow.resource.get("service.name"),
        Some(&Value::from("planner-service"))
    );
    let first = spans
        .iter()
        .find(|s| s.str("gen_ai.input.messages").contains("SECRET-PROMPT"))
        .expect("the prompt is recorded when asked");
    let input: Value = serde_json::from_str(first.str("gen_ai.input.messages")).expect("JSON");
    assert_eq!(input[0]["role"], "system");
    assert_eq!(input[0]["parts"][0]["content"], "You plan.");
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool count")
        .expect("tool span");
    assert_eq!(
        tool.str("gen_ai.tool.call.arguments"),
        r#"{"text": "one two"}"#
    );
    assert_eq!(tool.str("gen_ai.tool.call.result").trim(), "2");
    assert!(spans
        .iter()
        .any(|s| s.str("gen_ai.output.messages").contains("stub answer")));
}

#[tokio::test]
async fn failures_mark_spans_and_an_unreachable_collector_changes_nothing() {
    // A failing run still exports its spans, marked as errors.
    let collector = Collector::start().await;
    let server = StubServer::start().await.expect("stub");
    for _ in 0..4 {
        server.push(StubReply::error(400, "bad request"));
    }
    let (output, _dir) = run_exported(&collector, &server, &[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let spans = collector.spans();
    let chat = spans
        .iter()
        .find(|s| s.name == "chat tiny")
        .expect("chat span");
    assert_eq!(chat.status, 2, "status ERROR");
    assert_eq!(chat.str("error.type"), "400");
    let workflow = spans
        .iter()
        .find(|s| s.name == "invoke_workflow tree")
        .expect("the failed run's span is flushed before exit");
    assert_eq!(workflow.status, 2);
    assert_eq!(workflow.str("error.type"), "run_failed");

    // Nothing listens on port 9 of loopback: the run succeeds, with one warning.
    let server = stub().await;
    let dir = TempDir::new("unreachable");
    let tactic = dir.write("tree.yaml", &fork_tree(&server.base_url()));
    let output = run(
        &["run", arg(&tactic), "--input", "a garden"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer sk-otel-secret-123",
            ),
        ],
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(text(&output.stdout).contains("stub answer"));
    assert_eq!(
        stderr.matches("cannot send spans").count(),
        1,
        "one warning: {stderr}"
    );
    assert!(!stderr.contains("sk-otel-secret-123"), "{stderr}");

    // An unknown protocol is reported, and the run goes on without export.
    let output = run(
        &["run", arg(&tactic), "--input", "a garden"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"),
        ],
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL is `carrier-pigeon`"),
        "{stderr}"
    );
}

/// The service a test needs, named by `variable`: skipped with a note when it is not set, a failure
/// when `require` is `1`.
fn service(variable: &str, require: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => Some(value),
        _ => {
            assert!(
                std::env::var(require).as_deref() != Ok("1"),
                "{variable} is not set ({require}=1); scripts/test.sh starts the service and sets it"
            );
            eprintln!("skipped: {variable} is not set (scripts/test.sh sets it)");
            None
        }
    }
}

fn get_json(url: &str) -> Option<Value> {
    let output = std::process::Command::new("curl")
        .args(["-sf", "--max-time", "10", url])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| serde_json::from_slice(&output.stdout).ok())
        .flatten()
}

#[tokio::test]
async fn phoenix_receives_the_span_tree_with_the_servers_session_ids() {
    let Some(phoenix) = service("LLLM_PHOENIX_URL", "LLLM_REQUIRE_PHOENIX") else {
        return;
    };
    let server = stub().await;
    let dir = TempDir::new("phoenix");
    let tactic = dir.write("tree.yaml", &fork_tree(&server.base_url()));
    let project = format!("lllm-test-{}", std::process::id());
    let header = format!("x-project-name={project}");
    // Protobuf, the default protocol.
    let output = run(
        &["run", arg(&tactic), "--input", "a garden"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.as_str()),
            ("OTEL_EXPORTER_OTLP_HEADERS", header.as_str()),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let url = format!("{phoenix}/v1/projects/{project}/spans?limit=1000");
    let mut spans = Vec::new();
    for _ in 0..100 {
        if let Some(body) = get_json(&url) {
            spans = body["data"].as_array().cloned().unwrap_or_default();
            if spans.len() >= 17 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // 1 workflow + 7 invoke_agent + 8 chat + 1 execute_tool.
    assert_eq!(spans.len(), 17, "{spans:#?}");
    let traces: std::collections::BTreeSet<&str> = spans
        .iter()
        .filter_map(|s| s["context"]["trace_id"].as_str())
        .collect();
    assert_eq!(traces.len(), 1, "one trace per run");
    let name = |s: &Value| s["name"].as_str().unwrap_or_default().to_owned();
    let by_id = |id: &str| spans.iter().find(|s| s["context"]["span_id"] == id);
    let root: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(root.len(), 1);
    assert_eq!(name(root[0]), "invoke_workflow tree");
    let sessions: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r.header("x-dynamo-session-id").map(str::to_owned))
        .collect();
    let mut chats = 0;
    for span in &spans {
        let attrs = &span["attributes"];
        let parent = span["parent_id"].as_str().and_then(by_id).map(name);
        match name(span).as_str() {
            "chat tiny" => {
                chats += 1;
                assert_eq!(parent.as_deref(), Some("invoke_agent lead"));
                assert_eq!(span["span_kind"], "LLM");
                assert_eq!(attrs["gen_ai.operation.name"], "chat");
                assert_eq!(attrs["gen_ai.provider.name"], "dynamo");
                assert_eq!(attrs["gen_ai.request.model"], "tiny");
                assert!(attrs["gen_ai.usage.input_tokens"].is_i64(), "{attrs}");
                assert!(attrs["gen_ai.usage.output_tokens"].is_i64(), "{attrs}");
                let conversation = attrs["gen_ai.conversation.id"].as_str().unwrap_or_default();
                assert!(sessions.iter().any(|s| s == conversation), "{conversation}");
            }
            "invoke_agent lead" => {
                assert_eq!(parent.as_deref(), Some("invoke_workflow tree"));
                assert_eq!(span["span_kind"], "AGENT");
                assert_eq!(attrs["gen_ai.agent.name"], "lead");
            }
            "execute_tool count" => {
                assert_eq!(parent.as_deref(), Some("invoke_agent lead"));
                assert_eq!(attrs["gen_ai.tool.name"], "count");
            }
            "invoke_workflow tree" => {}
            other => panic!("unexpected span {other}"),
        }
        let all = attrs.to_string();
        assert!(
            !all.contains("SECRET-PROMPT") && !all.contains("stub answer"),
            "{all}"
        );
        assert!(attrs.get("gen_ai.input.messages").is_none());
    }
    assert_eq!(chats, 8);

    // gRPC export comes with the `otlp-grpc` feature (the test command builds every feature).
    if !cfg!(feature = "otlp-grpc") {
        return;
    }
    // The same run over gRPC reaches Phoenix's gRPC port (the HTTP port + 1, as
    // scripts/servers/phoenix.sh opens it); the project comes from the resource this time.
    let port: u16 = phoenix
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("LLLM_PHOENIX_URL ends with its port");
    let grpc = format!("http://127.0.0.1:{}", port + 1);
    let project = format!("lllm-grpc-{}", std::process::id());
    let resource = format!("openinference.project.name={project}");
    let server = stub().await;
    let tactic = dir.write("tree-grpc.yaml", &fork_tree(&server.base_url()));
    let output = run(
        &["run", arg(&tactic), "--input", "a garden"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", grpc.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_RESOURCE_ATTRIBUTES", resource.as_str()),
        ],
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("cannot send spans"), "{stderr}");
    let url = format!("{phoenix}/v1/projects/{project}/spans?limit=1000");
    let mut received = 0;
    for _ in 0..100 {
        received = get_json(&url)
            .and_then(|body| body["data"].as_array().map(Vec::len))
            .unwrap_or(0);
        if received >= 17 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(received, 17, "every span arrives over gRPC too");
}

#[tokio::test]
async fn dynamos_simulator_replays_the_agentic_trace_of_a_fork_tree() {
    let Some(python) = service("LLLM_DYNAMO_PYTHON", "LLLM_REQUIRE_DYNAMO_REPLAY") else {
        return;
    };
    let server = stub().await;
    let dir = TempDir::new("agentic");
    let tactic = dir.write("tree.yaml", &fork_tree(&server.base_url()));
    let trace = dir.0.join("tree.jsonl");
    let output = run(
        &[
            "run",
            arg(&tactic),
            "--input",
            "a garden",
            "--trace",
            arg(&trace),
            "--trace-format",
            "agentic-mooncake",
        ],
        &[],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines[0]["schema"], "dynamo.agentic_mooncake");
    let rows = &lines[1..];
    assert_eq!(rows.len(), 8);
    let relations = |row: &Value| -> Vec<String> {
        row["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d["relation"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let count = |relation: &str| {
        rows.iter()
            .flat_map(relations)
            .filter(|r| r == relation)
            .count()
    };
    // Forks a, b (of main) and a_cost, a_risk (of a); the tool round and two later turns of
    // main and a; the merge of a waits for a_cost and a_risk, the last step for a and b.
    assert_eq!(count("spawn"), 4);
    assert_eq!(count("sequence"), 3);
    assert_eq!(count("join"), 4);
    assert_eq!(
        rows.iter().filter(|r| relations(r).is_empty()).count(),
        1,
        "one root"
    );
    // The session ids are those the server received.
    let sessions: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r.header("x-dynamo-session-id").map(str::to_owned))
        .collect();
    for row in rows {
        assert!(sessions.iter().any(|s| row["session_id"] == *s.as_str()));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/replay_agentic.py");
    let replay = Command::new(python)
        .arg(script)
        .arg(&trace)
        .args(["--router", "both", "--check"])
        .output()
        .await
        .expect("the replay script runs");
    let report = text(&replay.stdout);
    assert!(
        replay.status.success(),
        "{report}\n{}",
        text(&replay.stderr)
    );
    assert_eq!(
        report.matches("requests 8/8 completed").count(),
        2,
        "{report}"
    );
    assert_eq!(
        report.matches("trajectories 1/1 completed").count(),
        2,
        "{report}"
    );
    assert_eq!(report.matches("check: ok").count(), 2, "{report}");
}

fn one_turn(url: &str) -> String {
    format!(
        "global:\n  model_name: hosted_vllm/tiny\n  model_args: {{api_base: \"{url}\", max_tokens: 8}}\n  inference_hints: {{profile: dynamo}}\nagent_configs:\n  - name: solo\n    system_prompt: Be brief.\n"
    )
}

#[tokio::test]
async fn a_malformed_traceparent_is_reported_and_the_run_traces_on_its_own() {
    let collector = Collector::start().await;
    let server = StubServer::start().await.expect("stub");
    let dir = TempDir::new("traceparent");
    let tactic = dir.write("solo.yaml", &one_turn(&server.base_url()));
    let output = run(
        &["run", arg(&tactic), "--input", "hi"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("TRACEPARENT", "00-zzzz-not-a-trace-\u{1b}[31m"),
        ],
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("TRACEPARENT is not a W3C trace context"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let spans = collector.spans();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.contains(&"invoke_workflow solo"));
    assert_eq!(spans.iter().filter(|s| s.parent.is_empty()).count(), 1);
}

#[tokio::test]
async fn what_a_hostile_server_names_reaches_spans_bounded_and_printable() {
    let collector = Collector::start().await;
    let server = StubServer::start().await.expect("stub");
    let huge_model = format!("\u{1b}]0;pwned\u{7}{}", "m".repeat(100_000));
    server.push(StubReply::json(
        200,
        serde_json::json!({
            "id": "chatcmpl-1",
            "model": huge_model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
            "nvext": {"worker_id": {"prefill_worker_id": 1, "decode_worker_id": 13432463561746359355u64}}
        }),
    ));
    let dir = TempDir::new("hostile");
    let tactic = dir.write("solo.yaml", &one_turn(&server.base_url()));
    let output = run(
        &["run", arg(&tactic), "--input", "hi"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let spans = collector.spans();
    let chat = spans
        .iter()
        .find(|s| s.name == "chat tiny")
        .expect("chat span");
    let model = chat.str("gen_ai.response.model");
    // 256 characters kept, control characters shown escaped, and a mark where it was cut.
    assert!(
        model.chars().count() <= 300,
        "{} characters",
        model.chars().count()
    );
    assert!(!model.chars().any(char::is_control), "{model:?}");
    // The worker Dynamo reports (with `nvext.extra_fields: ["worker_id"]`) is the decode worker.
    assert_eq!(chat.str("lllm.worker.id"), "13432463561746359355");
}

#[tokio::test]
async fn a_signal_still_sends_the_spans_that_ended() {
    let collector = Collector::start().await;
    let server = StubServer::start().await.expect("stub");
    // The first turn answers; the second hangs until the signal.
    server.push(StubReply::text("planned").for_message("SECRET-PROMPT"));
    server.push(StubReply::text("late").delay(Duration::from_secs(60)));
    let dir = TempDir::new("signal");
    let tactic = dir.write("tree.yaml", &fork_tree(&server.base_url()));
    let mut child = lllm()
        .args(["run", arg(&tactic), "--input", "a garden"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lllm starts");
    for _ in 0..200 {
        if server.requests().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server.requests().len() >= 2,
        "the run reached its second turn"
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("lllm exits")
        .expect("status");
    assert_eq!(output.code(), Some(143));
    let spans = collector.spans();
    assert!(
        spans
            .iter()
            .any(|s| s.name == "chat tiny" && s.attr("gen_ai.usage.output_tokens").is_some()),
        "the first turn's answered request was exported: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
}
