use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

use lllm_core::{InferenceHints, Message, ModelArgs, Profile, PromptVars, Role};

use crate::agent::{AgentErrorKind, RetryPolicy};
use crate::invoker::InvokeError;
use crate::testing::ScriptedInvoker;
use crate::{Agent, AgentError};

fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_call_retries: max_retries,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
        max_retry_after: Duration::from_millis(5),
    }
}

fn agent(invoker: Arc<ScriptedInvoker>, hints: Option<InferenceHints>) -> Agent {
    let mut builder = Agent::builder()
        .name("planner")
        .system_prompt("You plan for {{ team }}.")
        .model("dynamo/Qwen/Qwen3-0.6B")
        .invoker(invoker)
        .model_args(ModelArgs::new().max_tokens(24))
        .retry_policy(fast_retries(2));
    if let Some(hints) = hints {
        builder = builder.inference_hints(hints);
    }
    builder.build().expect("valid agent")
}

fn vars() -> PromptVars {
    [("team".to_owned(), serde_json::Value::from("ops"))]
        .into_iter()
        .collect()
}

fn http(status: u16) -> InvokeError {
    InvokeError::Http {
        status: http::StatusCode::from_u16(status).expect("a status"),
        message: "boom".into(),
        retry_after: None,
    }
}

#[tokio::test]
async fn respond_appends_answer_and_fork_answers_with_its_own_identity() {
    let invoker = Arc::new(ScriptedInvoker::new().reply("plan").reply("critique"));
    let hints = InferenceHints::for_profile(Profile::Dynamo);
    let agent = agent(invoker.clone(), Some(hints));
    let main = agent.open_with("main", &vars()).expect("open");
    agent.receive("Draft a plan.").expect("receive");
    let answer = agent.respond("main").await.expect("answer");
    assert_eq!(answer.text(), "plan");
    let retry = agent.fork("main", "retry").expect("fork");
    assert_eq!(agent.active().as_deref(), Some("retry"));
    agent.receive("Find the weak point.").expect("receive");
    agent.respond("retry").await.expect("answer");

    let main_dialog = agent.dialog("main").expect("main");
    let texts: Vec<_> = main_dialog.messages().iter().map(Message::text).collect();
    assert_eq!(texts, ["You plan for ops.", "Draft a plan.", "plan"]);
    assert_eq!(agent.dialog("retry").expect("retry").len(), 5);

    let calls = invoker.calls();
    assert_eq!(calls.len(), 2);
    let main_id = main.to_string();
    let retry_id = retry.to_string();
    assert_eq!(
        calls[0].request.header("x-dynamo-session-id"),
        Some(main_id.as_str())
    );
    assert_eq!(calls[0].request.header("x-dynamo-parent-session-id"), None);
    assert_eq!(
        calls[1].request.header("x-dynamo-session-id"),
        Some(retry_id.as_str())
    );
    assert_eq!(
        calls[1].request.header("x-dynamo-parent-session-id"),
        Some(main_id.as_str())
    );
    assert_eq!(
        calls[1].messages.len(),
        4,
        "the fork sends the shared prefix"
    );
    assert_eq!(calls[1].messages[0].role, Role::System);
}

#[tokio::test]
async fn without_hints_nothing_is_added() {
    let invoker = Arc::new(ScriptedInvoker::new().reply("ok"));
    let agent = agent(invoker.clone(), None);
    agent.open_with("main", &vars()).expect("open");
    agent.receive("hi").expect("receive");
    agent.respond("main").await.expect("answer");
    let call = &invoker.calls()[0];
    assert!(
        call.request.headers.is_empty(),
        "{:?}",
        call.request.headers
    );
    assert!(call.request.body.get("nvext").is_none());
}

#[tokio::test]
async fn a_failed_respond_leaves_the_dialog_as_it_was() {
    let invoker = Arc::new(
        ScriptedInvoker::new()
            .fail(http(503))
            .fail(http(502))
            .fail(http(500)),
    );
    let agent = agent(invoker.clone(), Some(InferenceHints::default()));
    agent.open_with("main", &vars()).expect("open");
    agent.receive("hi").expect("receive");
    let before = agent.dialog("main").expect("main");
    let err = agent.respond("main").await.expect_err("fails");
    match err.kind() {
        AgentErrorKind::Invoke {
            attempts, source, ..
        } => {
            assert_eq!(*attempts, 3);
            assert_eq!(
                source.status(),
                Some(http::StatusCode::INTERNAL_SERVER_ERROR)
            );
        }
        other => panic!("unexpected error {other}"),
    }
    assert_eq!(agent.dialog("main").expect("main"), before);
    assert_eq!(
        invoker.calls().len(),
        3,
        "1 try + max_llm_recall (2) retries"
    );
    let sessions: Vec<_> = invoker
        .calls()
        .iter()
        .map(|c| c.request.header("x-session-id").map(str::to_owned))
        .collect();
    assert!(sessions.iter().all(|s| s == &sessions[0] && s.is_some()));
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let invoker = Arc::new(ScriptedInvoker::new().fail(http(400)).reply("never"));
    let agent = agent(invoker.clone(), None);
    agent.open_with("main", &vars()).expect("open");
    agent.receive("hi").expect("receive");
    assert!(agent.respond("main").await.is_err());
    assert_eq!(invoker.calls().len(), 1);
}

#[tokio::test]
async fn dialog_operations_report_unknown_and_taken_aliases() {
    let agent = agent(Arc::new(ScriptedInvoker::new()), None);
    assert!(matches!(
        agent.receive("x").as_ref().map_err(AgentError::kind),
        Err(AgentErrorKind::NoActiveDialog)
    ));
    let err = agent.open("main").expect_err("prompt needs team");
    assert!(lllm_core::full_message(&err).contains("`team`"), "{err}");
    agent.open_with("main", &vars()).expect("open");
    assert!(matches!(
        agent
            .open_with("main", &vars())
            .as_ref()
            .map_err(AgentError::kind),
        Err(AgentErrorKind::AliasTaken)
    ));
    let err = agent.fork("nope", "child").expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "agent `planner` has no dialog `nope` (open dialogs: main)"
    );
    agent.fork("main", "child").expect("fork");
    agent.switch("main").expect("switch");
    assert_eq!(agent.active().as_deref(), Some("main"));
    let closed = agent.close("main").expect("close");
    assert_eq!(closed.len(), 1);
    assert_eq!(agent.active(), None);
    assert_eq!(agent.aliases(), ["child"]);
    assert!(agent.switch("main").is_err());
}

#[tokio::test]
async fn dialogs_round_trip_through_serde_and_restore() {
    let invoker = Arc::new(ScriptedInvoker::new().reply("a"));
    let agent = agent(invoker, None);
    agent.open_with("main", &vars()).expect("open");
    agent.receive("hi").expect("receive");
    agent.respond("main").await.expect("answer");
    agent.fork("main", "side").expect("fork");
    let tree = agent.dialogs();
    let json = serde_json::to_string(&tree).expect("serialise");

    let other = self::agent(Arc::new(ScriptedInvoker::new()), None);
    other
        .restore(serde_json::from_str(&json).expect("deserialise"))
        .expect("restore");
    assert_eq!(other.dialogs(), tree);
    assert_eq!(other.active().as_deref(), Some("side"));
    assert_eq!(
        other.dialog("side").expect("side").parent_id(),
        Some(agent.dialog_id("main").expect("main"))
    );
}

#[tokio::test]
async fn finish_sends_the_end_of_session_request_without_touching_the_dialog() {
    let invoker = Arc::new(ScriptedInvoker::new().reply("bye"));
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .session_prefix("run-1")
        .priority(3)
        .build()
        .expect("valid");
    let agent = agent(invoker.clone(), Some(hints));
    let id = agent.open_with("main", &vars()).expect("open");
    let before = agent.dialog("main").expect("main");
    agent.finish("main").await.expect("finish");
    assert_eq!(agent.dialog("main").expect("main"), before);
    let call = &invoker.calls()[0];
    assert_eq!(
        call.request.headers,
        vec![
            ("x-dynamo-session-id".to_owned(), format!("run-1:{id}")),
            ("x-dynamo-session-final".to_owned(), "true".to_owned()),
        ]
    );
    assert_eq!(call.request.body["max_tokens"], 1);
    assert!(call.request.body.get("nvext").is_none());

    let plain = self::agent(Arc::new(ScriptedInvoker::new()), None);
    plain.open_with("main", &vars()).expect("open");
    assert!(matches!(
        plain
            .finish("main")
            .await
            .as_ref()
            .map_err(AgentError::kind),
        Err(AgentErrorKind::NoHints)
    ));
}

#[tokio::test]
async fn finishing_a_fork_routes_like_its_turns_parent_and_salt_included() {
    let invoker = Arc::new(ScriptedInvoker::new().reply("ok").reply("bye"));
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .session_prefix("run-1")
        .cache_salt("tenant-a")
        .build()
        .expect("valid");
    let agent = agent(invoker.clone(), Some(hints));
    let main = agent.open_with("main", &vars()).expect("open");
    let side = agent.fork("main", "side").expect("fork");
    agent.receive_in("side", "Try again.").expect("receive");
    agent.respond("side").await.expect("turn");
    agent.finish("side").await.expect("finish");
    let [turn, last] = &invoker.calls()[..] else {
        panic!("two calls: {:?}", invoker.calls());
    };
    let session = ("x-dynamo-session-id".to_owned(), format!("run-1:{side}"));
    let parent = (
        "x-dynamo-parent-session-id".to_owned(),
        format!("run-1:{main}"),
    );
    assert_eq!(turn.request.headers, vec![session.clone(), parent.clone()]);
    assert_eq!(
        last.request.headers,
        vec![
            session,
            parent,
            ("x-dynamo-session-final".to_owned(), "true".to_owned())
        ]
    );
    assert_eq!(
        last.request.body["nvext"],
        json!({"cache_salt": "tenant-a"})
    );
    assert_eq!(
        turn.request.body["nvext"]["cache_salt"],
        last.request.body["nvext"]["cache_salt"]
    );
}

#[test]
fn builder_reports_what_is_missing_or_invalid() {
    let err = Agent::builder().build().expect_err("empty");
    assert_eq!(err.to_string(), "cannot build agent: a name is required");
    let err = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .build()
        .expect_err("no invoker");
    assert!(err.to_string().contains("an invoker is required"), "{err}");
    let err = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(ScriptedInvoker::new()))
        .model_args(ModelArgs::new().param("max_token", 3))
        .build()
        .expect_err("typo");
    assert!(
        lllm_core::full_message(&err).contains("did you mean `max_tokens`"),
        "{err}"
    );
}

/// Holds every call until the test lets it through, and tells the test when a call has arrived, so
/// tests act while a respond is in flight without relying on timing.
#[derive(Debug)]
struct Gate {
    arrived: tokio::sync::Semaphore,
    pass: tokio::sync::Semaphore,
}

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate {
            arrived: tokio::sync::Semaphore::new(0),
            pass: tokio::sync::Semaphore::new(0),
        })
    }

    /// Waits until one more call is waiting in the invoker.
    async fn arrival(&self) {
        self.arrived.acquire().await.expect("gate open").forget();
    }

    /// Lets the longest-waiting call answer.
    fn let_one_through(&self) {
        self.pass.add_permits(1);
    }
}

#[derive(Debug)]
struct GatedInvoker(Arc<Gate>);

#[async_trait::async_trait]
impl crate::Invoker for GatedInvoker {
    async fn invoke(
        &self,
        request: &crate::ChatRequest,
    ) -> Result<crate::ChatResponse, InvokeError> {
        self.0.arrived.add_permits(1);
        // tokio's semaphore is fair: calls go through in the order they arrived.
        self.0.pass.acquire().await.expect("gate open").forget();
        let last = request.messages.last().map(Message::text).unwrap_or("");
        Ok(crate::ChatResponse::new(Message::assistant(format!(
            "re: {last}"
        ))))
    }
}

fn gated_agent() -> (Agent, Arc<Gate>) {
    let gate = Gate::new();
    let agent = Agent::builder()
        .name("gated")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(GatedInvoker(gate.clone())))
        .build()
        .expect("valid");
    (agent, gate)
}

/// Answers only once 2 calls are waiting in it at the same time; alone, it fails after 30 s.
#[derive(Debug)]
struct MeetingInvoker(tokio::sync::Barrier);

#[async_trait::async_trait]
impl crate::Invoker for MeetingInvoker {
    async fn invoke(
        &self,
        request: &crate::ChatRequest,
    ) -> Result<crate::ChatResponse, InvokeError> {
        tokio::time::timeout(Duration::from_secs(30), self.0.wait())
            .await
            .map_err(|_| http(400))?;
        let last = request.messages.last().map(Message::text).unwrap_or("");
        Ok(crate::ChatResponse::new(Message::assistant(format!(
            "re: {last}"
        ))))
    }
}

#[tokio::test]
async fn one_agent_answers_several_dialogs_at_once() {
    let agent = Agent::builder()
        .name("meeting")
        .system_prompt("s")
        .model("m")
        .invoker(Arc::new(MeetingInvoker(tokio::sync::Barrier::new(2))))
        .build()
        .expect("valid");
    agent.open("a").expect("open");
    agent.receive_in("a", "one").expect("receive");
    agent.fork("a", "b").expect("fork");
    agent.receive_in("b", "two").expect("receive");
    // Each call waits for the other: both answers come only if both calls were in flight at once.
    let (a, b) = tokio::join!(agent.respond("a"), agent.respond("b"));
    assert_eq!(a.expect("a").text(), "re: one");
    assert_eq!(b.expect("b").text(), "re: two");
}

#[tokio::test]
async fn a_dialog_waiting_for_its_answer_refuses_a_second_respond_and_new_messages() {
    let (agent, gate) = gated_agent();
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    let first = agent.respond("main");
    let second = async {
        gate.arrival().await;
        let busy = agent.respond("main").await;
        let receive = agent.receive("too early");
        gate.let_one_through();
        (busy, receive)
    };
    let (first, (busy, receive)) = tokio::join!(first, second);
    assert_eq!(first.expect("first").text(), "re: hi");
    assert!(matches!(
        busy.as_ref().map_err(AgentError::kind),
        Err(AgentErrorKind::DialogBusy)
    ));
    assert!(matches!(
        receive.as_ref().map_err(AgentError::kind),
        Err(AgentErrorKind::DialogBusy)
    ));
    let texts = texts_of(&agent, "main");
    assert_eq!(texts, ["s", "hi", "re: hi"]);
    agent.receive("now").expect("free again");
}

#[tokio::test]
async fn closing_a_dialog_mid_call_drops_its_answer_and_spares_a_reopened_alias() {
    let (agent, gate) = gated_agent();
    let old_done = tokio::sync::Notify::new();
    agent.open("main").expect("open");
    agent.receive("old").expect("receive");
    let old = async {
        let answer = agent.respond("main").await;
        old_done.notify_one();
        answer
    };
    let reuse = async {
        gate.arrival().await;
        agent.close("main").expect("close");
        agent.open("main").expect("reopen");
        agent.receive("new").expect("receive");
        let new = agent.respond("main");
        let meddle = async {
            // The old call answers and ends while the new one still waits in the invoker: the old
            // respond's end must not free the new dialog.
            gate.arrival().await;
            gate.let_one_through();
            old_done.notified().await;
            let meddled = agent.receive("sneaky");
            gate.let_one_through();
            meddled
        };
        tokio::join!(new, meddle)
    };
    let (old, (new, meddle)) = tokio::join!(old, reuse);
    assert!(
        matches!(
            old.as_ref().map_err(AgentError::kind),
            Err(AgentErrorKind::DialogClosed)
        ),
        "{old:?}"
    );
    assert!(
        matches!(
            meddle.as_ref().map_err(AgentError::kind),
            Err(AgentErrorKind::DialogBusy)
        ),
        "{meddle:?}"
    );
    assert_eq!(new.expect("new").text(), "re: new");
    let texts = texts_of(&agent, "main");
    assert_eq!(texts, ["s", "new", "re: new"]);
}

fn texts_of(agent: &Agent, alias: &str) -> Vec<String> {
    agent
        .dialog(alias)
        .expect("dialog")
        .messages()
        .iter()
        .map(|m| m.text().to_owned())
        .collect()
}
