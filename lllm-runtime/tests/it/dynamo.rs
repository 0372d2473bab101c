//! Against the real NVIDIA Dynamo router (frontend + KV router + simulated engines), started by
//! `scripts/test.sh`, which sets `LLLM_DYNAMO_URL` (the API base) and `LLLM_DYNAMO_LOG` (the frontend
//! log, which says which worker served each request). Without them the tests say so and do nothing,
//! unless Dynamo is expected (`LLLM_REQUIRE_DYNAMO=1`, which the README's test command sets for this
//! suite, or `CI=true` with the URL set): then a missing or unreachable Dynamo fails them.
//!
//! They show that Dynamo accepts every request lllm sends with the dynamo profile (forks, parallel
//! subagents, strict_priority, osl, speculative_prefill, finish), that with session headers every dialog
//! stays on one worker, and that later turns are served partly from the prefix cache.
#![allow(clippy::print_stderr)]

mod continuation;
mod skills;
mod subagents;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lllm_runtime::config::parse_tactic;
use lllm_runtime::config::PromptVars;
use lllm_runtime::invoker::{Delta, ServerDefaults};
use lllm_runtime::tactic::Team;
use lllm_runtime::testing::{dynamo_workers_for, SharedBuffer};
use lllm_runtime::{
    ChatRequest, ChatResponse, InvokeError, Invoker, OpenAiInvoker, TacticRegistry,
};

/// The Dynamo under test, or `None` (with a note) when the suite runs without one. When Dynamo is
/// expected, that is with `LLLM_REQUIRE_DYNAMO=1` (which `scripts/test.sh` sets for the Dynamo run) or
/// with `CI=true` and `LLLM_DYNAMO_URL` set, a missing setting or an unreachable URL fails the test
/// instead of letting it pass without checking anything.
fn dynamo() -> Option<(String, String)> {
    let url = std::env::var("LLLM_DYNAMO_URL").ok();
    let required = std::env::var("LLLM_REQUIRE_DYNAMO").is_ok_and(|v| v == "1");
    let expected = required || (url.is_some() && std::env::var("CI").is_ok_and(|v| v == "true"));
    let (url, log) = match (url, std::env::var("LLLM_DYNAMO_LOG")) {
        (Some(url), Ok(log)) => (url, log),
        _ if expected => panic!(
            "Dynamo is expected (LLLM_REQUIRE_DYNAMO=1, or CI=true with LLLM_DYNAMO_URL) but \
             LLLM_DYNAMO_URL / LLLM_DYNAMO_LOG are not both set: start it with \
             scripts/servers/dynamo.sh up (scripts/test.sh does)"
        ),
        _ => {
            eprintln!("LLLM_DYNAMO_URL / LLLM_DYNAMO_LOG not set: run scripts/test.sh, which starts Dynamo");
            return None;
        }
    };
    if expected {
        // A TCP connection to the URL's host and port is enough to tell "not running" apart.
        let authority = url.split("://").nth(1).unwrap_or(&url);
        let authority = authority.split('/').next().unwrap_or(authority);
        let default_port = if url.starts_with("https://") { 443 } else { 80 };
        let address = if authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
        {
            authority.to_owned()
        } else {
            format!("{authority}:{default_port}")
        };
        let addrs: Vec<std::net::SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&address)
            .map(Iterator::collect)
            .unwrap_or_default();
        let timeout = std::time::Duration::from_secs(5);
        assert!(
            addrs
                .iter()
                .any(|addr| std::net::TcpStream::connect_timeout(addr, timeout).is_ok()),
            "Dynamo is expected at LLLM_DYNAMO_URL={url} but nothing answers at {address}: is it \
             running? (scripts/servers/dynamo.sh up starts it; scripts/test.sh does)"
        );
    }
    Some((url, log))
}

/// A word of this run's own (the time in nanoseconds), for the start of its prompts: nothing an
/// earlier run left in the engines' caches counts for this one.
fn nonce() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// One call as the test saw it: the session it carried and the server's id for the answer.
#[derive(Debug, Clone)]
struct Seen {
    session: String,
    parent: String,
    response_id: String,
    prompt_tokens: u64,
    cached_tokens: u64,
    /// `nvext.agent_hints` as sent.
    agent_hints: serde_json::Value,
    /// The last user message: which step sent it.
    asked: String,
    /// The worker that served it, when asked for (`nvext.extra_fields: ["worker_id"]`).
    worker: Option<String>,
}

/// `next` went to the worker that served `previous` (Dynamo named it), which had at least 0.9 of
/// `previous`'s prompt cached for it: `next` extends `previous`'s prefix and rode it.
fn assert_rides(previous: &Seen, next: &Seen, what: &str) {
    assert!(
        next.cached_tokens as f64 >= 0.9 * previous.prompt_tokens as f64,
        "{what}: {} cached of the previous request's {} prompt tokens",
        next.cached_tokens,
        previous.prompt_tokens
    );
    assert!(previous.worker.is_some(), "Dynamo names the worker");
    assert_eq!(
        next.worker, previous.worker,
        "{what} goes to the worker holding its prefix"
    );
}

/// Sends through the real invoker and remembers each call's session and response id.
#[derive(Debug)]
struct Watching {
    inner: OpenAiInvoker,
    seen: Mutex<Vec<Seen>>,
}

impl Watching {
    /// A watcher over the real invoker, with no server defaults.
    fn new() -> Arc<Watching> {
        Arc::new(Watching {
            inner: OpenAiInvoker::with_defaults(ServerDefaults::none()),
            seen: Mutex::new(Vec::new()),
        })
    }

    /// The calls seen so far, in the order they were answered.
    fn calls(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    fn record(&self, request: &ChatRequest, response: &ChatResponse) {
        let usage = response.message.usage.unwrap_or_default();
        self.seen.lock().expect("lock").push(Seen {
            session: request
                .hint_fields
                .header("x-dynamo-session-id")
                .unwrap_or("")
                .to_owned(),
            parent: request
                .hint_fields
                .header("x-dynamo-parent-session-id")
                .unwrap_or("")
                .to_owned(),
            response_id: response.id.clone().unwrap_or_default(),
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens.unwrap_or(0),
            agent_hints: request
                .hint_fields
                .body
                .get("nvext")
                .and_then(|n| n.get("agent_hints"))
                .cloned()
                .unwrap_or_default(),
            asked: request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == lllm_runtime::agent::Role::User)
                .and_then(|m| m.content.clone())
                .unwrap_or_default(),
            worker: response.worker.clone(),
        });
    }
}

#[async_trait]
impl Invoker for Watching {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let response = self.inner.invoke(request).await?;
        self.record(request, &response);
        Ok(response)
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let response = self.inner.invoke_stream(request, on_delta).await?;
        self.record(request, &response);
        Ok(response)
    }
}

const TACTIC: &str = "
global:
  model_name: dynamo/tiny
  model_args: {api_base: \"${LLLM_DYNAMO_URL}\", max_tokens: 16}
  inference_hints: {profile: dynamo, session_prefix: suite, cache_salt: suite-salt, priority: 5, strict_priority: 1, speculative_prefill: true}
agent_configs:
  - name: lead
    system_prompt: >-
      You lead a team that plans the week. You split the work into parts, you hand each part to a
      subagent, and you merge what they answer into one plan. Keep every answer short and concrete.
  - name: critic
    system_prompt: You review plans and point at their weakest step.
    inference_hints: {osl: 12}
steps:
  - {agent: lead, receive: \"Plan the week for: {{ input }}\", save: plan}
  - {agent: lead, receive: Now list the three parts of that plan., save: parts}
  - parallel:
      - steps:
          - {agent: lead, dialog: part_1, fork_from: main, receive: Do part one., save: one}
          - {agent: lead, dialog: part_1, receive: Make part one shorter., save: one_short}
      - steps:
          - {agent: lead, dialog: part_2, fork_from: main, receive: Do part two., save: two}
          - {agent: lead, dialog: part_2, receive: Make part two shorter.}
      - {agent: critic, receive: \"Review: {{ plan }}\", save: review}
  - {agent: lead, receive: \"Merge: {{ one_short }} {{ two }} {{ review }}\", save: merged}
output: \"{{ merged }}\"
";

/// Runs a steps tactic (its `${LLLM_DYNAMO_URL}` set to `url`) once on Dynamo through a
/// [`Watching`] invoker; every request must be accepted.
async fn run_on_dynamo(tactic: &str, url: &str, input: &str) -> (Team, Arc<Watching>) {
    let env = |name: &str| (name == "LLLM_DYNAMO_URL").then(|| url.to_owned());
    let spec = parse_tactic(tactic.as_bytes(), Path::new("dynamo.yaml"), &env).expect("tactic");
    let invoker = Watching::new();
    let team = Team::from_spec(&spec, invoker.clone()).expect("team");
    let vars: PromptVars = [("input".to_owned(), input.into())].into_iter().collect();
    TacticRegistry::new()
        .create(&spec)
        .expect("steps")
        .run(&team, &vars)
        .await
        .expect("Dynamo accepts every request");
    (team, invoker)
}

#[tokio::test]
async fn a_multi_agent_tactic_is_accepted_and_every_dialog_stays_on_one_worker() {
    let Some((url, log)) = dynamo() else {
        return;
    };
    let (team, invoker) = run_on_dynamo(TACTIC, &url, "a family of four").await;
    // part_1 is a fork: its end-of-session request must follow it to its worker too.
    for (agent, alias) in [("lead", "main"), ("lead", "part_1"), ("critic", "main")] {
        team.agent(agent)
            .expect("agent")
            .finish(alias)
            .await
            .expect("the end-of-session request is accepted");
    }
    let seen = invoker.calls();
    assert_eq!(seen.len(), 11, "8 turns and 3 finishes");

    let ids: Vec<&str> = seen.iter().map(|c| c.response_id.as_str()).collect();
    let served_by = dynamo_workers_for(&log, &ids, LOG_WAIT).await;
    let mut per_session: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut calls = Vec::new();
    for call in &seen {
        let id = call.response_id.trim_start_matches("chatcmpl-");
        let worker = served_by
            .get(id)
            .unwrap_or_else(|| panic!("request {id} is not in the frontend log {log}"));
        per_session.entry(&call.session).or_default().insert(worker);
        calls.push(format!(
            "{} (parent {:?}) on worker {worker}",
            call.session, call.parent
        ));
    }
    assert_eq!(per_session.len(), 4, "four dialogs: {per_session:?}");
    for (session, workers) in &per_session {
        assert_eq!(
            workers.len(),
            1,
            "dialog {session} moved between workers; the calls in completion order:\n{}",
            calls.join("\n")
        );
    }

    // A dialog's later turns resend its earlier messages: the engine serves them from its cache.
    let lead_main = &seen
        .iter()
        .filter(|c| c.session == seen[0].session)
        .collect::<Vec<_>>();
    assert!(lead_main.len() >= 3);
    for later in &lead_main[1..] {
        assert!(
            later.cached_tokens > 0,
            "a later turn of the lead's dialog had no cached tokens: {later:?}"
        );
    }
    let cached: u64 = seen.iter().map(|c| c.cached_tokens).sum();
    let prompt: u64 = seen.iter().map(|c| c.prompt_tokens).sum();
    eprintln!(
        "dynamo suite: {} requests, {cached} of {prompt} prompt tokens cached",
        seen.len()
    );
}

#[tokio::test]
async fn streaming_structured_answers_and_null_content_work_against_dynamo() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let agent = lllm_runtime::Agent::builder()
        .name("streamer")
        .system_prompt("You answer briefly.")
        .model("tiny")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(lllm_runtime::ModelArgs::new().api_base(url).max_tokens(8))
        .inference_hints(
            lllm_runtime::InferenceHints::builder()
                .profile(lllm_runtime::Profile::Dynamo)
                .fork_session(lllm_runtime::hints::ForkSession::Family)
                .build()
                .expect("hints"),
        )
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("hello").expect("receive");
    let mut pieces = 0;
    let answer = agent
        .respond_to("main")
        .stream(&mut |_| pieces += 1)
        .await
        .expect("a streamed answer is accepted");
    // The simulated engine answers without text; lllm keeps that as it is.
    assert_eq!(answer.content.as_deref().unwrap_or(""), "");
    assert_eq!(answer.usage.map(|u| u.completion_tokens), Some(8));
    agent.fork("main", "child").expect("fork");
    agent.receive("more").expect("receive");
    agent
        .respond("child")
        .await
        .expect("a family fork is accepted");
}

#[tokio::test]
async fn dynamo_names_the_serving_worker_when_asked_and_the_answer_carries_it() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let extra = serde_json::json!({"nvext": {"extra_fields": ["worker_id"]}});
    let agent = lllm_runtime::Agent::builder()
        .name("worker")
        .system_prompt("You answer briefly.")
        .model("tiny")
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .model_args(
            lllm_runtime::ModelArgs::new()
                .api_base(url)
                .max_tokens(4)
                .extra_body(extra.as_object().cloned().unwrap_or_default()),
        )
        .inference_hints(
            lllm_runtime::InferenceHints::builder()
                .profile(lllm_runtime::Profile::Dynamo)
                .priority(3)
                .build()
                .expect("hints"),
        )
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    let request = agent
        .chat_request(&agent.dialog("main").expect("dialog"))
        .expect("request");
    // The hints' nvext and the user's merge: Dynamo, which rejects unknown fields, takes both.
    let invoker = OpenAiInvoker::with_defaults(ServerDefaults::none());
    let mut request = request;
    request.messages.push(lllm_runtime::Message::user("hello"));
    let plain = invoker.invoke(&request).await.expect("accepted");
    let worker = plain.worker.expect("Dynamo reports the worker when asked");
    assert!(worker.parse::<u64>().is_ok(), "{worker}");
    assert_eq!(plain.model.as_deref(), Some("tiny"));
    let streamed = invoker
        .invoke_stream(&request, &mut |_| {})
        .await
        .expect("accepted");
    if let Some(worker) = streamed.worker {
        assert!(worker.parse::<u64>().is_ok(), "{worker}");
    }
}

/// Sessions that stayed on one worker, and cached ÷ prompt tokens, of a replay.
/// How long the frontend may take to log the requests it answered.
const LOG_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

async fn replay_figures(
    report: &lllm_runtime::replay::ReplayReport,
    log: &str,
) -> (usize, usize, f64) {
    let ids: Vec<&str> = report
        .requests
        .iter()
        .filter_map(|r| r.response_id.as_deref())
        .collect();
    let served_by = dynamo_workers_for(log, &ids, LOG_WAIT).await;
    let mut per_session: HashMap<&str, HashSet<&str>> = HashMap::new();
    for r in &report.requests {
        let id = r
            .response_id
            .as_deref()
            .unwrap_or("")
            .trim_start_matches("chatcmpl-");
        if let Some(worker) = served_by.get(id) {
            per_session.entry(&r.session_id).or_default().insert(worker);
        }
    }
    let pinned = per_session.values().filter(|w| w.len() == 1).count();
    let prompt: u64 = report.requests.iter().map(|r| r.prompt_tokens).sum();
    let cached: u64 = report.requests.iter().map(|r| r.cached_tokens).sum();
    (
        pinned,
        per_session.len(),
        cached as f64 / prompt.max(1) as f64,
    )
}

#[tokio::test]
async fn a_recorded_trace_replays_with_its_sessions_pinned_and_cached() {
    let Some((url, log)) = dynamo() else {
        return;
    };
    let env = |name: &str| (name == "LLLM_DYNAMO_URL").then(|| url.clone());
    let spec = parse_tactic(TACTIC.as_bytes(), Path::new("dynamo.yaml"), &env).expect("tactic");
    let out = SharedBuffer::default();
    let recorder = Arc::new(
        lllm_runtime::trace::TraceRecorder::new(Box::new(out.clone()), 16).expect("recorder"),
    );
    let invoker = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    let team = Team::traced(&spec, invoker, Some(recorder.clone())).expect("team");
    let vars: PromptVars = [("input".to_owned(), "a trip".into())]
        .into_iter()
        .collect();
    TacticRegistry::new()
        .create(&spec)
        .expect("steps")
        .run(&team, &vars)
        .await
        .expect("runs");
    recorder.flush().expect("flush");
    let trace = out.text();

    let mut options = lllm_runtime::replay::ReplayOptions::new(url.clone(), "tiny");
    options.speed = 4.0;
    options.block_size = 16;
    let hinted = lllm_runtime::replay::replay(&trace, &options)
        .await
        .expect("replays");
    let (pinned, sessions, cached) = replay_figures(&hinted, &log).await;
    eprintln!("replay with the dynamo profile:\n{}", hinted.summary());
    assert!(hinted.requests.iter().all(|r| r.error.is_none()));
    assert_eq!(
        pinned, sessions,
        "every replayed session stayed on one worker"
    );
    assert!(
        cached > 0.3,
        "replayed prefixes are served from cache: {cached:.2}"
    );

    options.profile = lllm_runtime::Profile::OpenAi;
    options.session = false;
    let plain = lllm_runtime::replay::replay(&trace, &options)
        .await
        .expect("replays");
    let (plain_pinned, plain_sessions, plain_cached) = replay_figures(&plain, &log).await;
    eprintln!(
        "replay figures: dynamo profile {pinned}/{sessions} sessions on one worker, {:.1} % cached; \
         openai profile without sessions {plain_pinned}/{plain_sessions}, {:.1} % cached",
        100.0 * cached,
        100.0 * plain_cached
    );
}

const AUTO_TACTIC: &str = "
global:
  model_name: dynamo/tiny
  model_args: {api_base: \"${LLLM_DYNAMO_URL}\", max_tokens: 12}
  inference_hints: {profile: dynamo, session_prefix: auto-suite, priority: auto}
agent_configs:
  - {name: lead, system_prompt: You split work into parts and merge the answers. Be brief.}
  - {name: critic, system_prompt: You review plans. Be brief.}
steps:
  - {agent: lead, receive: \"Split into parts: {{ input }}\", save: plan}
  - parallel:
      - {agent: lead, dialog: a, fork_from: main, receive: Do part A., save: a}
      - steps:
          - {agent: lead, dialog: b, fork_from: main, receive: Do part B.}
          - {agent: lead, dialog: b, receive: Shorten part B., save: b}
      - {agent: critic, receive: \"Review: {{ plan }}\", save: review}
  - {agent: lead, receive: \"Merge: {{ a }} {{ b }} {{ review }}\"}
";

#[tokio::test]
async fn a_tactic_with_auto_priority_is_accepted_and_each_request_carries_its_computed_priority() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let (_, invoker) = run_on_dynamo(AUTO_TACTIC, &url, "a garden party").await;
    let seen = invoker.calls();
    assert_eq!(seen.len(), 6, "six turns");
    // Weight = 1 + turns waiting + finished sibling branches (which depend on timing: a range).
    let expected: [(&str, u64, u64); 6] = [
        ("Split into parts", 6, 6),
        ("Do part A.", 2, 4),
        ("Do part B.", 3, 5),
        ("Shorten part B.", 2, 4),
        ("Review:", 2, 4),
        ("Merge:", 1, 1),
    ];
    for (asked, low, high) in expected {
        let call = seen
            .iter()
            .find(|c| c.asked.starts_with(asked))
            .unwrap_or_else(|| panic!("no request asked {asked:?}: {seen:?}"));
        let priority = call.agent_hints["priority"].as_u64().unwrap_or(0);
        assert!(
            (low..=high).contains(&priority),
            "{asked}: priority {priority}, expected {low}..={high}: {:?}",
            call.agent_hints
        );
        assert_eq!(
            call.agent_hints["strict_priority"], 1,
            "{asked}: interactive tier"
        );
        assert_eq!(call.agent_hints["osl"], 12, "{asked}");
    }
}

/// Dynamo's mocker answers without text (`content: null`): this gives each answer a few words,
/// so that a summary has text and the dialog goes on.
#[derive(Debug)]
struct Wording(Arc<Watching>);

#[async_trait]
impl Invoker for Wording {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let mut response = self.0.invoke(request).await?;
        response
            .message
            .content
            .get_or_insert_with(|| "the mocker's words".to_owned());
        Ok(response)
    }
}

/// A long system prompt, so that its cached share is measurable.
fn long_system_prompt() -> String {
    let sentence = "You are a careful engineer who reads the whole log before answering, names the failing component, and proposes the smallest change that fixes it. ";
    sentence.repeat(24)
}

#[tokio::test]
async fn a_compaction_summary_rides_the_cached_prefix_on_the_same_worker() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let invoker = Watching::new();
    let extra = serde_json::json!({"nvext": {"extra_fields": ["worker_id"]}});
    let policy = lllm_core::ContextPolicy::with(
        lllm_core::Window::Tokens(10_000),
        0.5,
        2,
        lllm_core::SessionOnCompaction::Keep,
    )
    .expect("policy");
    let agent = lllm_runtime::Agent::builder()
        .name("engineer")
        .system_prompt(long_system_prompt())
        .model("tiny")
        .invoker(Arc::new(Wording(invoker.clone())))
        .model_args(
            lllm_runtime::ModelArgs::new()
                .api_base(url)
                .max_tokens(16)
                .extra_body(extra.as_object().cloned().unwrap_or_default()),
        )
        .inference_hints(
            lllm_runtime::InferenceHints::builder()
                .profile(lllm_runtime::Profile::Dynamo)
                .build()
                .expect("hints"),
        )
        .context(policy)
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    let log_line = "2026-12-04T10:00:00Z worker-3 ERROR disk quota exceeded while writing shard 17 of the index; retrying with backoff. ";
    for turn in 0..30 {
        agent
            .receive(format!(
                "Turn {turn}. Here is more of the log: {}",
                log_line.repeat(6)
            ))
            .expect("receive");
        agent.respond("main").await.expect("Dynamo answers");
        if agent.context_stats().compactions > 0 {
            break;
        }
    }
    let seen = invoker.calls();
    let prompts: Vec<(u64, u64)> = seen
        .iter()
        .map(|s| (s.prompt_tokens, s.cached_tokens))
        .collect();
    assert_eq!(
        agent.context_stats().compactions,
        1,
        "the dialog grew past 5,000 tokens: {prompts:?}"
    );
    let at = seen
        .iter()
        .position(|s| s.asked == lllm_runtime::agent::SUMMARY_INSTRUCTION)
        .expect("a summary request");
    let (previous, summary, next) = (&seen[at - 1], &seen[at], &seen[at + 1]);
    eprintln!(
        "compaction on Dynamo: previous request {} prompt tokens; summary {} prompt, {} cached; new window {} prompt, {} cached",
        previous.prompt_tokens, summary.prompt_tokens, summary.cached_tokens, next.prompt_tokens, next.cached_tokens
    );
    // The summary request is the previous request plus the answer and one instruction: nearly all of
    // it is the previous request's prefix, cached on the worker that served it.
    assert_rides(previous, summary, "the summary request");
    assert_eq!(summary.session, previous.session);
    assert_eq!(
        next.session, previous.session,
        "the new window keeps the session"
    );
    // The first request of the new window starts with the same system prompt: all of its full
    // blocks (16 tokens) are cached. Its share of the first request: the first two requests differ
    // by one user message as long as the first one's (and a short answer), so the system prompt is
    // about twice the first request less the second.
    let system_share = (2 * seen[0].prompt_tokens).saturating_sub(seen[1].prompt_tokens);
    assert!(
        next.cached_tokens + 16 >= system_share,
        "new window: {} cached, the system prompt is about {system_share} tokens (first requests: {} and {})",
        next.cached_tokens,
        seen[0].prompt_tokens,
        seen[1].prompt_tokens
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_shows_each_requests_worker_cache_and_priority_as_dynamo_reported_them() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let dir = crate::support::TempDir::new("console-dynamo");
    let tactic = dir.write(
        "team.yaml",
        &format!(
            "global:
  model_name: dynamo/tiny
  model_args: {{api_base: \"{url}\", max_tokens: 16, extra_body: {{nvext: {{extra_fields: [worker_id]}}}}}}
  inference_hints: {{profile: dynamo, priority: 5, strict_priority: 1}}
agent_configs:
  - name: engineer
    system_prompt: \"{prompt}\"
steps:
  - {{agent: engineer, receive: \"{{{{ input }}}}\", save: first}}
  - {{agent: engineer, receive: Say it again in fewer words., save: second}}
  - {{agent: engineer, fork_from: main, dialog: check, receive: Check it.}}
",
            prompt = long_system_prompt().trim()
        ),
    );
    let running = crate::serve::serve(&[("team", &tactic)]).await;
    let created = crate::serve::post(
        &format!("{}/v1/runs", running.base),
        &[("x-session-id", "console-dyn-1")],
        &serde_json::json!({"model": "team", "input": "The index build failed at shard 17."})
            .to_string(),
    )
    .await;
    let id = created.json()["id"].as_str().expect("id").to_owned();
    crate::serve::wait_status(&running.base, &id, "completed").await;
    let log = crate::serve::get(&format!("{}/v1/runs/{id}/dialogs", running.base), &[])
        .await
        .json();
    let dialogs = log["dialogs"].as_array().expect("dialogs");
    assert_eq!(dialogs.len(), 2, "{log}");
    let main = &dialogs[0];
    assert_eq!(main["session_id"], "console-dyn-1");
    assert_eq!(dialogs[1]["parent"], main["id"]);
    let calls = main["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2, "{main}");
    for call in dialogs
        .iter()
        .flat_map(|d| d["calls"].as_array().into_iter().flatten())
    {
        let worker = call["worker"].as_str().expect("Dynamo names the worker");
        assert!(worker.parse::<u64>().is_ok(), "{call}");
        assert_eq!(
            (&call["priority"], &call["tier"]),
            (&serde_json::json!(5), &serde_json::json!(1))
        );
        assert!(
            call["prompt_tokens"].as_u64().is_some_and(|n| n > 0),
            "{call}"
        );
    }
    assert_eq!(
        calls[0]["worker"], calls[1]["worker"],
        "the dialog stayed on its worker"
    );
    let cached = calls[1]["cached_tokens"].as_u64().unwrap_or(0);
    assert!(
        cached > 0,
        "the second turn was served partly from the cache: {}",
        calls[1]
    );
    eprintln!(
        "console on Dynamo: second turn {cached} of {} prompt tokens cached on worker {}",
        calls[1]["prompt_tokens"], calls[1]["worker"]
    );
}
