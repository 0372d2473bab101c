//! `priority: auto` on the wire: what each request of a steps tactic carries, against a local server
//! that records every request.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lllm_runtime::config::{parse_tactic, PromptVars};
use lllm_runtime::hints::RunClass;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::tactic::{StepsTactic, Team};
use lllm_runtime::testing::{StubReply, StubServer};
use lllm_runtime::{OpenAiInvoker, Tactic, TacticSpec};
use serde_json::{json, Value};

use crate::support::last_user;

const STEPS: &str = "steps:
  - {agent: lead, receive: Split the work.}
  - parallel:
      - {agent: lead, dialog: a, fork_from: main, receive: Part A.}
      - steps:
          - {agent: lead, dialog: b, fork_from: main, receive: Part B.}
          - {agent: lead, dialog: b, receive: Part B again.}
      - {agent: critic, receive: Review the split.}
  - {agent: lead, receive: Merge.}
";

fn spec(server: &StubServer, profile: &str) -> TacticSpec {
    let text = format!(
        "global:
  model_name: m
  model_args: {{api_base: \"{}\", max_tokens: 8}}
  inference_hints: {{profile: {profile}, priority: auto}}
agent_configs:
  - {{name: lead, system_prompt: You lead.}}
  - {{name: critic, system_prompt: You critique.}}
{STEPS}",
        server.base_url()
    );
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("valid tactic")
}

/// Runs the tactic once; answers the requests whose messages contain one of `slow` after 400 ms
/// (so the other branches finish first). Returns each request's priority fields by its message.
async fn run(profile: &str, class: RunClass, slow: &[&str]) -> HashMap<String, Value> {
    let server = StubServer::start().await.expect("server");
    for message in slow {
        server.push(
            StubReply::text("slow answer")
                .for_message(message)
                .delay(Duration::from_millis(400)),
        );
    }
    let spec = spec(&server, profile);
    let team = Team::builder(&spec)
        .invoker(Arc::new(OpenAiInvoker::with_defaults(
            ServerDefaults::none(),
        )))
        .run_class(class)
        .build()
        .expect("team");
    StepsTactic::new(spec.steps().to_vec(), None)
        .run(&team, &PromptVars::new())
        .await
        .expect("the run ends");
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "six turns, one request each");
    requests
        .iter()
        .map(|r| {
            let fields = match profile {
                "dynamo" => r.body["nvext"]["agent_hints"].clone(),
                _ => json!({"priority": r.body["priority"]}),
            };
            (last_user(r), fields)
        })
        .collect()
}

fn dynamo(priority: u32, tier: Option<u32>) -> Value {
    match tier {
        Some(tier) => json!({"priority": priority, "strict_priority": tier, "osl": 8}),
        None => json!({"priority": priority, "osl": 8}),
    }
}

#[tokio::test]
async fn each_request_carries_what_waits_for_it_and_the_last_branch_is_raised() {
    // Part B's first turn is slow: Part A and the review finish first, so Part B's second turn is
    // the last branch still running, and both finished branches wait for it.
    let sent = run("dynamo", RunClass::Interactive, &["Part B."]).await;
    let expected = [
        // 1 + three branches' four turns + the merge.
        ("Split the work.", 6),
        ("Part A.", 2),
        ("Part B.", 3),
        // 1 + the merge + the two finished branches.
        ("Part B again.", 4),
        ("Review the split.", 2),
        ("Merge.", 1),
    ];
    for (message, weight) in expected {
        assert_eq!(
            sent[message],
            dynamo(weight, Some(1)),
            "{message}: {sent:?}"
        );
    }
}

#[tokio::test]
async fn a_branch_that_is_not_last_is_not_raised() {
    // Now Part A and the review are slow: when Part B's second turn starts, no branch has finished,
    // so it carries only itself and the merge.
    let sent = run(
        "dynamo",
        RunClass::Interactive,
        &["Part A.", "Review the split."],
    )
    .await;
    assert_eq!(sent["Part B again."], dynamo(2, Some(1)), "{sent:?}");
    assert_eq!(sent["Part A."], dynamo(2, Some(1)));
}

#[tokio::test]
async fn a_batch_run_sends_no_tier_and_vllm_and_sglang_get_one_ranked_number() {
    let batch = run("dynamo", RunClass::Batch, &["Part B."]).await;
    assert_eq!(batch["Split the work."], dynamo(6, None), "{batch:?}");
    assert_eq!(batch["Merge."], dynamo(1, None));

    let vllm = run("vllm", RunClass::Interactive, &["Part B."]).await;
    assert_eq!(
        vllm["Split the work."],
        json!({"priority": -1006}),
        "lower runs first"
    );
    assert_eq!(vllm["Part B again."], json!({"priority": -1004}));
    let vllm_batch = run("vllm", RunClass::Batch, &["Part B."]).await;
    assert_eq!(vllm_batch["Split the work."], json!({"priority": -6}));

    let sglang = run("sglang", RunClass::Interactive, &["Part B."]).await;
    assert_eq!(sglang["Split the work."], json!({"priority": 1006}));
    assert_eq!(sglang["Merge."], json!({"priority": 1001}));
}
