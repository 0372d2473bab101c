//! Issue 34 on Dynamo: a lead whose dialog holds a long shared prefix (a system prompt and some
//! 6,800 tokens of sources) starts four background researchers with the same instructions,
//! once in `fork` mode and once in `isolated` mode. A fork child's first request is the lead's last
//! request plus its instructions and names the lead's session as its parent: the KV-aware router
//! puts it on the lead's worker, which computes only the instructions. An isolated child is a new
//! root of an agent that is given the same sources in its system prompt (what a child that does not
//! fork must be handed to work on them): its family computes those sources again at least once.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use lllm_core::ToolCall;
use lllm_runtime::agent::Role;
use lllm_runtime::tactic::Team;
use lllm_runtime::{ChatRequest, ChatResponse, InvokeError, Invoker};

use super::{dynamo, nonce, Seen, Watching};

/// Marks the lead's question; its answer starts the four researchers.
const QUESTION: &str = "Which modules parse YAML? Start your researchers.";

/// Dynamo serves every request (workers and cache counts are real); the mocker's answer, which has
/// no text, is replaced: the lead's question gets four `task_start` calls, a researcher's
/// instructions get its finding, anything else (the lead's later turns) gets its merge.
#[derive(Debug)]
struct Scripted(Arc<Watching>);

#[async_trait]
impl Invoker for Scripted {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let mut response = self.0.invoke(request).await?;
        let last = request.messages.last();
        let asked = last
            .filter(|m| m.role == Role::User)
            .and_then(|m| m.content.clone())
            .unwrap_or_default();
        let message = &mut response.message;
        if asked.ends_with(QUESTION) {
            message.content = None;
            message.tool_calls = (1..=4)
                .map(|n| ToolCall {
                    id: format!("call-{n}"),
                    name: "task_start".to_owned(),
                    arguments: serde_json::json!({
                        "subagent": "researcher",
                        "instructions": format!("Research part {n} of the sources."),
                    })
                    .to_string(),
                })
                .collect();
            message.finish_reason = Some("tool_calls".to_owned());
        } else if asked.starts_with("Research part") {
            message.content = Some(format!("finding for: {asked}"));
        } else {
            message.content = Some("Merged.".to_owned());
        }
        Ok(response)
    }
}

/// Some 6,800 tokens of sources (with the mocker's tokenizer): the long prefix the researchers
/// share with the lead.
fn sources() -> String {
    (1..=120)
        .map(|i| {
            format!(
                "Source {i}: module m{i} reads its settings from file s{i}.yaml and hands \
                 them to parser p{}.\n",
                i % 7
            )
        })
        .collect()
}

/// The tactic for one mode; its system prompts start with a word of this run's own, so that
/// nothing an earlier run (or the other mode) left in the engines' caches counts for this one.
fn tactic(url: &str, mode: &str, nonce: u128) -> lllm_runtime::TacticSpec {
    let lead = format!("Run {nonce} {mode}. You lead four researchers. Be brief.");
    let (subagent, reader) = match mode {
        "fork" => (
            "{name: researcher, mode: fork, background: true}".to_owned(),
            String::new(),
        ),
        _ => (
            "{name: researcher, agent: reader, mode: isolated, background: true}".to_owned(),
            format!(
                "  - name: reader\n    system_prompt: |\n      {lead}\n{}",
                sources()
                    .lines()
                    .map(|l| format!("      {l}\n"))
                    .collect::<String>()
            ),
        ),
    };
    let text = format!(
        r#"global:
  model_name: dynamo/tiny
  model_args: {{api_base: "{url}", max_tokens: 16, extra_body: {{nvext: {{extra_fields: [worker_id]}}}}}}
  inference_hints: {{profile: dynamo}}
  max_call_retries: 0
agent_configs:
  - name: lead
    system_prompt: "{lead}"
    max_background_tasks: 4
    subagents:
      - {subagent}
{reader}"#
    );
    lllm_runtime::config::parse_tactic(
        text.as_bytes(),
        std::path::Path::new("subagents.yaml"),
        &|_| None,
    )
    .expect("tactic")
}

/// One mode's figures: the lead's first request, the researchers' requests, and the makespan.
struct Figures {
    lead: Seen,
    children: Vec<Seen>,
    seconds: f64,
}

async fn run_mode(url: &str, mode: &str, nonce: u128) -> Figures {
    let watching = Watching::new();
    let spec = tactic(url, mode, nonce);
    let team = Team::builder(&spec)
        .invoker(Arc::new(Scripted(watching.clone())))
        .build()
        .expect("team");
    let lead = team.agent("lead").expect("lead");
    lead.open("main").expect("open");
    lead.receive(format!("{}\n{QUESTION}", sources()))
        .expect("receive");
    let since = Instant::now();
    lead.respond("main").await.expect("Dynamo answers the run");
    let seconds = since.elapsed().as_secs_f64();
    let seen = watching.calls();
    let children: Vec<Seen> = seen
        .iter()
        .filter(|c| c.asked.starts_with("Research part"))
        .cloned()
        .collect();
    assert_eq!(
        children.len(),
        4,
        "{mode}: four researchers asked: {seen:#?}"
    );
    Figures {
        lead: seen[0].clone(),
        children,
        seconds,
    }
}

fn computed(calls: &[Seen]) -> u64 {
    calls
        .iter()
        .map(|c| c.prompt_tokens.saturating_sub(c.cached_tokens))
        .sum()
}

fn report(mode: &str, figures: &Figures) {
    let workers: Vec<String> = figures
        .children
        .iter()
        .map(|c| c.worker.clone().unwrap_or_default())
        .collect();
    eprintln!(
        "{mode}: lead on worker {:?} ({} prompt tokens); researchers on workers {workers:?}, {} of {} \
         prompt tokens computed (not cached); the lead's run took {:.2} s",
        figures.lead.worker,
        figures.lead.prompt_tokens,
        computed(&figures.children),
        figures.children.iter().map(|c| c.prompt_tokens).sum::<u64>(),
        figures.seconds
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_researchers_land_on_the_leads_worker_and_compute_less_than_isolated_ones() {
    let Some((url, _)) = dynamo() else {
        return;
    };
    let nonce = nonce();
    let fork = run_mode(&url, "fork", nonce).await;
    let isolated = run_mode(&url, "isolated", nonce).await;
    report("fork", &fork);
    report("isolated", &isolated);
    let lead_session = &fork.lead.session;
    for child in &fork.children {
        assert_eq!(
            &child.parent, lead_session,
            "a fork names the lead's session"
        );
        assert!(child.worker.is_some(), "Dynamo names the worker: {child:?}");
        assert_eq!(
            child.worker, fork.lead.worker,
            "a fork researcher runs on the lead's worker: {child:?}"
        );
    }
    for child in &isolated.children {
        assert_eq!(child.parent, "", "an isolated child names no parent");
    }
    assert!(
        computed(&fork.children) < computed(&isolated.children),
        "fork researchers compute less prefill than isolated ones: {} against {}",
        computed(&fork.children),
        computed(&isolated.children)
    );
}
