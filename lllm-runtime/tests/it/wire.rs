//! Wire tests: real HTTP requests from the OpenAI-compatible invoker to a local recording server, with
//! exact assertions on headers and JSON bodies.

use std::sync::Arc;
use std::time::Duration;

use lllm_runtime::agent::{AgentErrorKind, RetryPolicy};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use lllm_runtime::{Agent, InferenceHints, InvokeError, ModelArgs, OpenAiInvoker, Profile};
use serde_json::{json, Value};

/// Headers a client library adds on its own; everything else must be exactly what lllm means to send.
const TRANSPORT_HEADERS: [&str; 5] = [
    "host",
    "content-type",
    "content-length",
    "accept",
    "user-agent",
];

fn lllm_headers(request: &RecordedRequest) -> Vec<(String, String)> {
    let mut headers: Vec<_> = request
        .headers
        .iter()
        .filter(|(n, _)| !TRANSPORT_HEADERS.contains(&n.as_str()))
        .cloned()
        .collect();
    headers.sort();
    headers
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = p
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    v.sort();
    v
}

/// The body without `model` and `messages`, which every request has.
fn hint_part(request: &RecordedRequest) -> Value {
    let mut body = request.body.clone();
    if let Some(map) = body.as_object_mut() {
        map.remove("model");
        map.remove("messages");
    }
    body
}

fn agent(server: &StubServer, hints: Option<InferenceHints>, args: ModelArgs) -> Agent {
    let mut builder = Agent::builder()
        .name("planner")
        .system_prompt("You plan.")
        .model("hosted_vllm/Qwen/Qwen2.5-7B-Instruct")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(args.api_base(server.base_url()))
        .retry_policy(
            RetryPolicy::default()
                .max_call_retries(2)
                .base_delay(Duration::from_millis(5))
                .max_delay(Duration::from_millis(10))
                .max_retry_after(Duration::from_secs(1)),
        );
    if let Some(hints) = hints {
        builder = builder.inference_hints(hints);
    }
    builder.build().expect("valid agent")
}

async fn one_turn(agent: &Agent) -> String {
    agent.open("main").expect("open");
    agent.receive("Draft a plan.").expect("receive");
    agent.respond("main").await.expect("answer");
    agent.dialog_id("main").expect("id").to_string()
}

async fn server() -> StubServer {
    StubServer::start().await.expect("stub server starts")
}

#[tokio::test]
async fn reference_example_main_and_its_fork() {
    let server = server().await;
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .priority(5)
        .speculative_prefill(true)
        .session_prefix("run-1")
        .build()
        .expect("valid");
    let agent = agent(&server, Some(hints), ModelArgs::new().max_tokens(24));
    let main = one_turn(&agent).await;
    let retry = agent.fork("main", "retry").expect("fork").to_string();
    agent.receive("Find the weakest point.").expect("receive");
    agent.respond("retry").await.expect("answer");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        lllm_headers(&requests[0]),
        pairs(&[("x-dynamo-session-id", &format!("run-1:{main}"))])
    );
    assert_eq!(
        lllm_headers(&requests[1]),
        pairs(&[
            ("x-dynamo-session-id", &format!("run-1:{retry}")),
            ("x-dynamo-parent-session-id", &format!("run-1:{main}")),
        ])
    );
    let expected = json!({"max_tokens": 24, "nvext": {"agent_hints": {"priority": 5, "osl": 24, "speculative_prefill": true}}});
    assert_eq!(hint_part(&requests[0]), expected);
    assert_eq!(hint_part(&requests[1]), expected);
    assert_eq!(requests[1].path, "/v1/chat/completions");
    assert_eq!(requests[1].body["model"], "Qwen/Qwen2.5-7B-Instruct");
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "system", "content": "You plan."},
            {"role": "user", "content": "Draft a plan."},
            {"role": "assistant", "content": "stub answer to: Draft a plan."},
            {"role": "user", "content": "Find the weakest point."}
        ]),
        "the fork carries the shared prefix; no `name`, `system` not `developer`"
    );
}

#[tokio::test]
async fn each_profile_sends_its_own_headers_and_body() {
    let cases = [
        (
            InferenceHints::builder()
                .profile(Profile::Dynamo)
                .priority(2)
                .strict_priority(1)
                .osl(50)
                .speculative_prefill(false)
                .cache_salt("t1"),
            "x-dynamo-session-id",
            json!({"nvext": {"agent_hints": {"priority": 2, "strict_priority": 1, "osl": 50, "speculative_prefill": false}, "cache_salt": "t1"}}),
        ),
        (
            InferenceHints::builder()
                .profile(Profile::Vllm)
                .priority(2)
                .cache_salt("tenant-a"),
            "x-session-id",
            json!({"priority": -2, "cache_salt": "tenant-a"}),
        ),
        (
            InferenceHints::builder()
                .profile(Profile::Sglang)
                .priority(7),
            "x-session-id",
            json!({"priority": 7}),
        ),
        (
            InferenceHints::builder().profile(Profile::OpenAi),
            "x-session-id",
            json!({}),
        ),
    ];
    for (builder, header, body) in cases {
        let server = server().await;
        let hints = builder.build().expect("valid");
        let profile = hints.profile();
        let agent = agent(&server, Some(hints), ModelArgs::new());
        let id = one_turn(&agent).await;
        let request = &server.requests()[0];
        assert_eq!(lllm_headers(request), pairs(&[(header, &id)]), "{profile}");
        assert_eq!(hint_part(request), body, "{profile}");
    }
}

#[tokio::test]
async fn forks_name_their_parent_in_the_generic_header() {
    let server = server().await;
    let agent = agent(&server, Some(InferenceHints::default()), ModelArgs::new());
    let main = one_turn(&agent).await;
    let child = agent.fork("main", "child").expect("fork").to_string();
    agent.receive("more").expect("receive");
    agent.respond("child").await.expect("answer");
    assert_eq!(
        lllm_headers(&server.requests()[1]),
        pairs(&[("x-session-id", &child), ("x-parent-session-id", &main)])
    );
}

#[tokio::test]
async fn session_prefix_session_off_osl_default_and_unset_fields() {
    let server = server().await;
    let prefixed = InferenceHints::builder()
        .profile(Profile::Vllm)
        .session_prefix("run-42")
        .build()
        .expect("valid");
    let id = one_turn(&agent(&server, Some(prefixed), ModelArgs::new())).await;
    let request = &server.requests()[0];
    assert_eq!(
        lllm_headers(request),
        pairs(&[("x-session-id", &format!("run-42:{id}"))])
    );
    assert_eq!(hint_part(request), json!({}), "unset fields are not sent");

    let server = self::server().await;
    let off = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .session(false)
        .priority(1)
        .build()
        .expect("valid");
    let agent_off = agent(
        &server,
        Some(off),
        ModelArgs::new().param("max_completion_tokens", 64),
    );
    one_turn(&agent_off).await;
    agent_off.fork("main", "child").expect("fork");
    agent_off.receive("x").expect("receive");
    agent_off.respond("child").await.expect("answer");
    for request in server.requests() {
        assert_eq!(
            lllm_headers(&request),
            vec![],
            "session: false sends no identity"
        );
        assert_eq!(
            hint_part(&request),
            json!({"max_completion_tokens": 64, "nvext": {"agent_hints": {"priority": 1, "osl": 64}}})
        );
    }
}

#[tokio::test]
async fn explicit_headers_and_body_win_over_hints() {
    let server = server().await;
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .priority(5)
        .speculative_prefill(true)
        .build()
        .expect("valid");
    let mut extra = serde_json::Map::new();
    extra.insert(
        "nvext".into(),
        json!({"extra_fields": ["worker_id"], "agent_hints": {"priority": 1}}),
    );
    let args = ModelArgs::new()
        .max_tokens(24)
        .extra_header("X-Dynamo-Session-ID", "mine")
        .extra_header("x-team", "blue")
        .extra_body(extra);
    one_turn(&agent(&server, Some(hints), args)).await;
    let request = &server.requests()[0];
    assert_eq!(
        request.header_values("x-dynamo-session-id"),
        ["mine"],
        "the user's header replaces the hint's, once"
    );
    assert_eq!(
        lllm_headers(request),
        pairs(&[("x-dynamo-session-id", "mine"), ("x-team", "blue")])
    );
    assert_eq!(
        hint_part(request),
        json!({"max_tokens": 24, "nvext": {"extra_fields": ["worker_id"],
               "agent_hints": {"priority": 1, "osl": 24, "speculative_prefill": true}}})
    );
}

#[tokio::test]
async fn a_parameter_the_user_set_wins_over_the_same_hint() {
    let server = server().await;
    let hints = InferenceHints::builder()
        .profile(Profile::Vllm)
        .priority(4)
        .build()
        .expect("valid");
    // The user's own `priority` parameter is explicit, so it wins over the hint.
    let args = ModelArgs::new().param("priority", 0).temperature(0.0);
    one_turn(&agent(&server, Some(hints), args)).await;
    let request = &server.requests()[0];
    assert_eq!(
        hint_part(request),
        json!({"priority": 0, "temperature": 0.0})
    );
    assert_eq!(request.body["model"], "Qwen/Qwen2.5-7B-Instruct");
}

#[tokio::test]
async fn retry_after_429_sends_the_same_session_twice() {
    let server = server().await;
    server.push(StubReply::error(429, "slow down").header("retry-after", "0"));
    let agent = agent(
        &server,
        Some(InferenceHints::for_profile(Profile::Dynamo)),
        ModelArgs::new(),
    );
    let id = one_turn(&agent).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.header("x-dynamo-session-id"), Some(id.as_str()));
    }
    assert_eq!(requests[0].body, requests[1].body);
    assert_eq!(agent.dialog("main").expect("main").len(), 3);
}

#[tokio::test]
async fn failure_after_retries_keeps_status_message_and_the_dialog() {
    let server = server().await;
    for _ in 0..3 {
        server.push(StubReply::error(503, "engine overloaded"));
    }
    let agent = agent(&server, Some(InferenceHints::default()), ModelArgs::new());
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent.respond("main").await.expect_err("fails");
    match err.kind() {
        AgentErrorKind::Invoke {
            attempts, source, ..
        } => {
            assert_eq!(*attempts, 3);
            assert_eq!(
                *source,
                InvokeError::Http {
                    status: http::StatusCode::SERVICE_UNAVAILABLE,
                    message: "engine overloaded".into(),
                    retry_after: None
                }
            );
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(agent.dialog("main").expect("main"), before);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn dynamo_style_400_reports_its_message() {
    let server = server().await;
    server.push(StubReply::json(
        400,
        json!({"message": "Unsupported parameter(s): `priority`", "type": "Bad Request", "code": 400}),
    ));
    let agent = agent(&server, None, ModelArgs::new());
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let err = lllm_core::full_message(&agent.respond("main").await.expect_err("400"));
    assert!(
        err.contains("HTTP 400: Unsupported parameter(s): `priority`"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn timeout_and_cancellation_leave_the_dialog_unchanged() {
    let server = server().await;
    server.push(StubReply::text("late").delay(Duration::from_secs(2)));
    let agent = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(
            ModelArgs::new()
                .api_base(server.base_url())
                .timeout(Duration::from_millis(200)),
        )
        .max_call_retries(0)
        .build()
        .expect("valid");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent.respond("main").await.expect_err("times out");
    assert!(
        matches!(
            err.kind(),
            AgentErrorKind::Invoke {
                source: InvokeError::Timeout(_),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(agent.dialog("main").expect("main"), before);

    server.push(StubReply::text("late").delay(Duration::from_secs(2)));
    let cancelled = tokio::time::timeout(Duration::from_millis(100), agent.respond("main")).await;
    assert!(cancelled.is_err(), "the respond was still waiting");
    assert_eq!(agent.dialog("main").expect("main"), before);
    agent.receive("still usable").expect("not left busy");
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_only_when_configured() {
    let server = server().await;
    one_turn(&agent(&server, None, ModelArgs::new().api_key("sk-test"))).await;
    one_turn(&agent(&server, None, ModelArgs::new())).await;
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    assert!(requests[1].header_values("authorization").is_empty());
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_after_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let agent = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(ModelArgs::new().api_base(format!("http://127.0.0.1:{port}/v1")))
        .retry_policy(
            RetryPolicy::default()
                .max_call_retries(1)
                .base_delay(Duration::from_millis(1)),
        )
        .build()
        .expect("valid");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    match agent.respond("main").await.expect_err("refused").kind() {
        AgentErrorKind::Invoke {
            attempts: 2,
            source: InvokeError::Connection { url, .. },
            ..
        } => {
            assert_eq!(*url, format!("http://127.0.0.1:{port}/v1/chat/completions"));
        }
        other => panic!("unexpected {other}"),
    }
}

#[tokio::test]
async fn null_content_and_odd_fields_are_accepted() {
    let server = server().await;
    server.push(StubReply::json(
        200,
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
               "reasoning_content": "thinking"}, "finish_reason": "length_cap_v2"}],
               "usage": {"prompt_tokens": 30, "completion_tokens": 5,
                         "prompt_tokens_details": {"cached_tokens": 16}}, "nvext": {"worker_id": 1}}),
    ));
    let agent = agent(&server, None, ModelArgs::new());
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let answer = agent.respond("main").await.expect("lenient");
    assert_eq!(answer.content, None);
    assert_eq!(answer.finish_reason.as_deref(), Some("length_cap_v2"));
    assert_eq!(agent.usage().cached_tokens, Some(16));
    // The null answer goes back as "" on the next turn.
    agent.receive("again").expect("receive");
    agent.respond("main").await.expect("answer");
    assert_eq!(
        server.requests()[1].body["messages"][2],
        json!({"role": "assistant", "content": ""})
    );
}
