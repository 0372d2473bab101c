//! One conversation, one session, one growing prefix: every source of a conversation's identity,
//! the continuation of the tactic's stored dialogs (tool rounds included) so that each turn's
//! first downstream request extends the previous turn's last one byte for byte, and the cases
//! that must not continue (a diverging history, another key's conversation, an unknown
//! reference).

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::{json, Value};

use super::{chat_body, chat_tactic, post, serve, serve_with, tool_tactic_confirming, Reply};
use crate::support::TempDir;

/// Scripts one turn of the tool tactic: a call of `act`, then the answer.
fn script_turn(stub: &StubServer, turn: usize, answer: &str) {
    stub.push(StubReply::tool_calls(&[(
        &format!("call_{turn}"),
        "act",
        &format!("{{\"line\": \"line {turn}\"}}"),
    )]));
    stub.push(StubReply::text(answer));
}

fn messages(request: &RecordedRequest) -> &Vec<Value> {
    request.body["messages"].as_array().expect("messages")
}

/// `next` starts with every message of `last`, byte for byte, then `answer` and `user`.
fn assert_extends(last: &RecordedRequest, answer: &str, next: &RecordedRequest, user: &str) {
    let (last, next) = (messages(last), messages(next));
    assert!(next.len() >= last.len() + 2, "{next:#?}");
    assert_eq!(next[..last.len()], last[..], "the prefix is kept");
    assert_eq!(next[last.len()]["role"], "assistant");
    assert_eq!(next[last.len()]["content"], answer);
    assert_eq!(
        next[last.len() + 1],
        json!({"role": "user", "content": user})
    );
}

fn session(reply: &Reply) -> (String, String) {
    (
        reply
            .header("x-lllm-session-id")
            .expect("session")
            .to_owned(),
        reply
            .header("x-lllm-session-source")
            .expect("source")
            .to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_client_continues_the_tactics_dialogs_tool_rounds_included() {
    let dir = TempDir::new("conversation-stateless");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    let running = serve(&[("worker", &worker)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let mut history = vec![json!({"role": "user", "content": "Do one."})];
    let mut sessions = Vec::new();
    for (turn, answer) in [(1, "Did one."), (2, "Did two."), (3, "Did three.")] {
        script_turn(&stub, turn, answer);
        let reply = post(&url, &[], &chat_body("worker", json!(history), false)).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.json()["choices"][0]["message"]["content"], answer);
        sessions.push(session(&reply));
        history.push(json!({"role": "assistant", "content": answer}));
        history.push(json!({"role": "user", "content": format!("Do {}.", turn + 1)}));
    }
    assert_eq!(sessions[0].1, "minted");
    for later in &sessions[1..] {
        assert_eq!(later, &(sessions[0].0.clone(), "history".to_owned()));
    }
    let requests = stub.requests();
    assert_eq!(requests.len(), 6);
    for request in &requests {
        assert_eq!(
            request.header("x-dynamo-session-id"),
            Some(sessions[0].0.as_str())
        );
    }
    // Each turn's first request extends the turn before's last, its tool round included.
    assert_extends(&requests[1], "Did one.", &requests[2], "Do 2.");
    assert_extends(&requests[3], "Did two.", &requests[4], "Do 3.");
    assert!(messages(&requests[2]).iter().any(|m| m["role"] == "tool"));
}

/// A request of one API with headers and a body, and the session id and source it must get.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Value, &'a str, &'a str);

#[tokio::test(flavor = "multi_thread")]
async fn every_source_of_a_conversations_identity_names_its_session() {
    let dir = TempDir::new("conversation-sources");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let chat = format!("{}/v1/chat/completions", running.base);
    let responses = format!("{}/v1/responses", running.base);
    let user = json!([{"role": "user", "content": "hi"}]);
    let cases: Vec<Case<'_>> = vec![
        (
            "chat",
            vec![("session-id", "s-1")],
            json!({"messages": user}),
            "s-1",
            "header",
        ),
        (
            "chat",
            vec![],
            json!({"messages": user, "prompt_cache_key": "ses_oc/2"}),
            "ses_oc~2F2",
            "prompt_cache_key",
        ),
        (
            "responses",
            vec![],
            json!({"input": "hi", "prompt_cache_key": "pk-3"}),
            "pk-3",
            "prompt_cache_key",
        ),
        (
            "responses",
            vec![],
            json!({"input": "hi", "conversation": "conv_4"}),
            "conv_4",
            "conversation",
        ),
        (
            "responses",
            vec![],
            json!({"input": "hi", "conversation": {"id": "conv_5"}}),
            "conv_5",
            "conversation",
        ),
        // A header comes first, then the body's key.
        (
            "chat",
            vec![("x-session-id", "h-6")],
            json!({"messages": user, "prompt_cache_key": "pk-6"}),
            "h-6",
            "header",
        ),
    ];
    for (api, headers, mut body, id, source) in cases {
        body["model"] = "helper".into();
        stub.push(StubReply::text("hello"));
        let url = if api == "chat" { &chat } else { &responses };
        let reply = post(url, &headers, &body.to_string()).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(
            session(&reply),
            (id.to_owned(), source.to_owned()),
            "{body}"
        );
        let sent = stub.requests().pop().expect("sent");
        assert_eq!(sent.header("x-dynamo-session-id"), Some(id));
    }
    // The previous response's conversation, continued.
    stub.push(StubReply::text("one"));
    let first = post(
        &responses,
        &[],
        &json!({"model": "helper", "input": "a", "prompt_cache_key": "pk-7"}).to_string(),
    )
    .await;
    let id = first.json()["id"].as_str().expect("id").to_owned();
    stub.push(StubReply::text("two"));
    let second = post(
        &responses,
        &[],
        &json!({"model": "helper", "input": "b", "previous_response_id": id}).to_string(),
    )
    .await;
    assert_eq!(
        session(&second),
        ("pk-7".to_owned(), "previous_response_id".to_owned())
    );
    // A Responses `conversation` continues its latest turn: input is the new message only.
    stub.push(StubReply::text("three"));
    post(
        &responses,
        &[],
        &json!({"model": "helper", "input": "c", "conversation": "conv_4"}).to_string(),
    )
    .await;
    let requests = stub.requests();
    let last = requests.last().expect("sent");
    let texts: Vec<&str> = messages(last)
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts[1..], ["hi", "hello", "c"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn item_references_resolve_to_lllms_own_answers_and_an_unknown_one_is_a_400() {
    let dir = TempDir::new("conversation-references");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    let running = serve(&[("worker", &worker)]).await;
    let url = format!("{}/v1/responses", running.base);
    script_turn(&stub, 1, "Did one.");
    let first = post(
        &url,
        &[],
        &json!({"model": "worker", "input": [{"role": "user", "content": "Do one."}]}).to_string(),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let item = first.json()["output"][0]["id"]
        .as_str()
        .expect("item id")
        .to_owned();
    let (id, _) = session(&first);
    // As the Vercel AI SDK sends an earlier answer of a stored response: by reference.
    script_turn(&stub, 2, "Did two.");
    let second = post(
        &url,
        &[],
        &json!({"model": "worker", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Do one."}]},
            {"type": "item_reference", "id": item},
            {"role": "user", "content": [{"type": "input_text", "text": "Do two."}]}
        ]})
        .to_string(),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(session(&second), (id, "item_reference".to_owned()));
    let requests = stub.requests();
    assert_extends(&requests[1], "Did one.", &requests[2], "Do two.");
    let unknown = post(
        &url,
        &[],
        &json!({"model": "worker", "input": [
            {"role": "user", "content": "Do one."},
            {"type": "item_reference", "id": "msg_forged"},
            {"role": "user", "content": "Do two."}
        ]})
        .to_string(),
    )
    .await;
    assert_eq!(unknown.status, 400, "{}", unknown.text);
    let message = unknown.json()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        message.contains("input[1]") && message.contains("msg_forged"),
        "{message}"
    );
    assert_eq!(
        stub.requests().len(),
        4,
        "nothing sent for the refused request"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_history_differing_in_one_byte_seeds_fresh_dialogs_under_the_same_session() {
    let dir = TempDir::new("conversation-diverged");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    let running = serve(&[("worker", &worker)]).await;
    let url = format!("{}/v1/chat/completions", running.base);
    let thread = [("thread-id", "t-9")];
    script_turn(&stub, 1, "Did one.");
    post(
        &url,
        &thread,
        &chat_body(
            "worker",
            json!([{"role": "user", "content": "Do one."}]),
            false,
        ),
    )
    .await;
    script_turn(&stub, 2, "Did two.");
    let edited = json!([
        {"role": "user", "content": "Do one!"},
        {"role": "assistant", "content": "Did one."},
        {"role": "user", "content": "Do two."}
    ]);
    let reply = post(&url, &thread, &chat_body("worker", edited, false)).await;
    assert_eq!(session(&reply), ("t-9".to_owned(), "header".to_owned()));
    let requests = stub.requests();
    let fresh: Vec<(&str, &str)> = messages(&requests[2])
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        fresh,
        [
            ("system", "You work."),
            ("user", "Do one!"),
            ("assistant", "Did one."),
            ("user", "Do two.")
        ]
    );
    assert_eq!(requests[2].header("x-dynamo-session-id"), Some("t-9"));
}

#[tokio::test(flavor = "multi_thread")]
async fn another_keys_requests_get_none_of_a_conversations_dialogs() {
    let dir = TempDir::new("conversation-keys");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    let running = serve_with(&[("worker", &worker)], |b| {
        b.api_key("key-alpha").api_key("key-beta")
    })
    .await;
    let (chat, responses) = (
        format!("{}/v1/chat/completions", running.base),
        format!("{}/v1/responses", running.base),
    );
    let alpha = ("authorization", "Bearer key-alpha");
    let beta = ("authorization", "Bearer key-beta");
    script_turn(&stub, 1, "Alpha's secret.");
    let first = post(
        &responses,
        &[alpha],
        &json!({"model": "worker", "input": "Do one."}).to_string(),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let (id, _) = session(&first);
    let response = first.json()["id"].as_str().expect("id").to_owned();
    let item = first.json()["output"][0]["id"]
        .as_str()
        .expect("item")
        .to_owned();
    let history = json!([
        {"role": "user", "content": "Do one."},
        {"role": "assistant", "content": "Alpha's secret."},
        {"role": "user", "content": "Do two."}
    ]);
    // The same history from another key: a new conversation, seeded from the text alone.
    stub.push(StubReply::text("beta"));
    let forged = post(&chat, &[beta], &chat_body("worker", history.clone(), false)).await;
    assert_eq!(session(&forged).1, "minted");
    // Alpha's conversation id from another key: that key's own conversation of that name.
    stub.push(StubReply::text("beta"));
    let named = post(
        &chat,
        &[beta, ("thread-id", &id)],
        &chat_body("worker", history.clone(), false),
    )
    .await;
    assert_eq!(named.status, 200, "{}", named.text);
    for request in &stub.requests()[2..] {
        assert!(
            !messages(request).iter().any(|m| m["role"] == "tool"),
            "none of alpha's tool rounds"
        );
    }
    let by_response = post(
        &responses,
        &[beta],
        &json!({"model": "worker", "input": "x", "previous_response_id": response}).to_string(),
    )
    .await;
    assert_eq!(by_response.status, 404);
    let by_item = post(&responses, &[beta], &json!({"model": "worker", "input": [{"role": "user", "content": "Do one."}, {"type": "item_reference", "id": item}, {"role": "user", "content": "x"}]}).to_string()).await;
    assert_eq!(by_item.status, 400);
    assert_eq!(stub.requests().len(), 4);
    // Alpha itself continues.
    script_turn(&stub, 2, "Did two.");
    let own = post(&chat, &[alpha], &chat_body("worker", history, false)).await;
    assert_eq!(session(&own), (id, "history".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_continues_a_conversation_kept_under_its_state_directory() {
    let dir = TempDir::new("conversation-restart");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    let state = dir.0.join("state");
    let url = |running: &super::Running| format!("{}/v1/chat/completions", running.base);
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    script_turn(&stub, 1, "Did one.");
    let first = post(
        &url(&running),
        &[],
        &chat_body(
            "worker",
            json!([{"role": "user", "content": "Do one."}]),
            false,
        ),
    )
    .await;
    let (id, _) = session(&first);
    drop(running);
    let running = serve_with(&[("worker", &worker)], |b| b.state_dir(&state)).await;
    script_turn(&stub, 2, "Did two.");
    let history = json!([
        {"role": "user", "content": "Do one."},
        {"role": "assistant", "content": "Did one."},
        {"role": "user", "content": "Do two."}
    ]);
    let second = post(&url(&running), &[], &chat_body("worker", history, false)).await;
    assert_eq!(session(&second), (id, "history".to_owned()));
    let requests = stub.requests();
    assert_extends(&requests[1], "Did one.", &requests[2], "Do two.");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_earlier_turns_response_branches_without_replacing_the_latest_turn() {
    let dir = TempDir::new("conversation-branch");
    let stub = StubServer::start().await.expect("stub");
    let worker = tool_tactic_confirming(&dir, &stub, false);
    let running = serve(&[("worker", &worker)]).await;
    let url = format!("{}/v1/responses", running.base);
    let ask = |input: &str, previous: Option<&str>| {
        let mut body = json!({"model": "worker", "input": input});
        if let Some(previous) = previous {
            body["previous_response_id"] = previous.into();
        }
        body.to_string()
    };
    script_turn(&stub, 1, "Did one.");
    let first = post(&url, &[], &ask("Do one.", None)).await.json();
    let r1 = first["id"].as_str().expect("id").to_owned();
    script_turn(&stub, 2, "Did two.");
    let second = post(&url, &[], &ask("Do two.", Some(&r1))).await.json();
    let r2 = second["id"].as_str().expect("id").to_owned();
    // A retry of turn 2 (the client timed out while it ran): a branch from turn 1.
    script_turn(&stub, 3, "Did two again.");
    let branch = post(&url, &[], &ask("Do two.", Some(&r1))).await;
    assert_eq!(branch.status, 200, "{}", branch.text);
    // The latest turn is still continued with its dialogs, tool rounds included.
    script_turn(&stub, 4, "Did three.");
    let third = post(&url, &[], &ask("Do three.", Some(&r2))).await;
    assert_eq!(third.status, 200, "{}", third.text);
    let requests = stub.requests();
    assert_extends(&requests[3], "Did two.", &requests[6], "Do three.");
}

#[tokio::test(flavor = "multi_thread")]
async fn other_instructions_or_a_failed_turn_never_continue_stale_dialogs() {
    let dir = TempDir::new("conversation-instructions");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve(&[("helper", &helper)]).await;
    let url = format!("{}/v1/responses", running.base);
    stub.push(StubReply::text("one"));
    let first = post(
        &url,
        &[],
        &json!({"model": "helper", "input": "a", "instructions": "Be terse."}).to_string(),
    )
    .await;
    let r1 = first.json()["id"].as_str().expect("id").to_owned();
    stub.push(StubReply::text("two"));
    let second = post(&url, &[], &json!({"model": "helper", "input": "b", "instructions": "Be verbose.", "previous_response_id": r1}).to_string()).await;
    assert_eq!(second.status, 200, "{}", second.text);
    let requests = stub.requests();
    // The new instructions reach the system prompt: fresh dialogs from the transcript.
    assert_eq!(
        messages(&requests[1])[0]["content"],
        "You help. The client says: Be verbose."
    );
    let texts: Vec<&str> = messages(&requests[1])
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts[1..], ["a", "one", "b"]);
    // A turn that fails leaves the conversation as it was: the next continues after turn 2.
    let r2 = second.json()["id"].as_str().expect("id").to_owned();
    stub.push(StubReply::error(400, "bad request"));
    let failed = post(&url, &[], &json!({"model": "helper", "input": "c", "instructions": "Be verbose.", "previous_response_id": r2}).to_string()).await;
    assert!(failed.status >= 400, "{}", failed.text);
    stub.push(StubReply::text("four"));
    let again = post(&url, &[], &json!({"model": "helper", "input": "d", "instructions": "Be verbose.", "previous_response_id": r2}).to_string()).await;
    assert_eq!(again.status, 200, "{}", again.text);
    let last = stub.requests().pop().expect("sent");
    let texts: Vec<&str> = messages(&last)
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts[1..], ["a", "one", "b", "two", "d"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_keys_runs_are_not_found_and_not_listed() {
    let dir = TempDir::new("conversation-runs-keys");
    let stub = StubServer::start().await.expect("stub");
    let helper = chat_tactic(&dir, &stub, "own");
    let running = serve_with(&[("helper", &helper)], |b| {
        b.api_key("key-alpha").api_key("key-beta")
    })
    .await;
    let alpha = ("authorization", "Bearer key-alpha");
    let beta = ("authorization", "Bearer key-beta");
    stub.push(StubReply::text("alpha's"));
    let made = post(
        &format!("{}/v1/runs", running.base),
        &[alpha, ("idempotency-key", "k1")],
        &json!({"model": "helper", "input": "hi"}).to_string(),
    )
    .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let id = made.json()["id"].as_str().expect("id").to_owned();
    stub.push(StubReply::text("alpha chat"));
    post(
        &format!("{}/v1/chat/completions", running.base),
        &[alpha],
        &chat_body("helper", json!([{"role": "user", "content": "hi"}]), false),
    )
    .await;
    for path in [
        format!("/v1/runs/{id}"),
        format!("/v1/runs/{id}/dialogs"),
        format!("/v1/runs/{id}/events"),
    ] {
        let seen = super::get(&format!("{}{path}", running.base), &[beta]).await;
        assert_eq!(seen.status, 404, "{path}: {}", seen.text);
    }
    let cancel = post(
        &format!("{}/v1/runs/{id}/cancel", running.base),
        &[beta],
        "{}",
    )
    .await;
    assert_eq!(cancel.status, 404);
    let listed = super::get(&format!("{}/v1/runs", running.base), &[beta])
        .await
        .json();
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(0), "{listed}");
    let own = super::get(&format!("{}/v1/runs", running.base), &[alpha])
        .await
        .json();
    assert_eq!(own["data"].as_array().map(Vec::len), Some(2), "{own}");
    // The same idempotency key from another key is another run.
    stub.push(StubReply::text("beta's"));
    let other = post(
        &format!("{}/v1/runs", running.base),
        &[beta, ("idempotency-key", "k1")],
        &json!({"model": "helper", "input": "hi"}).to_string(),
    )
    .await;
    assert_ne!(other.json()["id"], made.json()["id"]);
}
