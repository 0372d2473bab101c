//! Memory of background forks: `subagent_forks [FORKS] [MESSAGES]` (default 1,000 forks of a
//! 200-message dialog) starts that many background `fork` subagents of one dialog in one process,
//! through `Agent::spawn` (what `task_start` does), and holds every child's request in an
//! in-process model until all have arrived, so that every child is running, its dialog alive and
//! its request in flight, when the resident set is read. Then it makes the same number of deep
//! copies of the dialog's messages, as a framework that copies a history into each child would,
//! and reads the resident set again. Prints the figures as one JSON object (the report's
//! `subagents` section reads it), a summary in words on stderr; no timing.
//!
//! `max_background_tasks` is at most 64 per agent, so the forks are spread over agents of one
//! team (one run) that each hold an O(1) share of the same dialog (a snapshot, not a copy).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{ensure, Context};
use async_trait::async_trait;
use lllm_runtime::agent::tasks::TaskState;
use lllm_runtime::agent::{DialogTree, NamedDialog};
use lllm_runtime::config::parse_tactic;
use lllm_runtime::invoker::{ChatRequest, ChatResponse, InvokeError, Invoker};
use lllm_runtime::tactic::Team;
use lllm_runtime::{Dialog, Message};
use tokio::sync::watch;

/// Children per agent: `max_background_tasks`' bound.
const PER_AGENT: usize = 64;

/// Counts the requests that arrived and answers none until released.
#[derive(Debug)]
struct Holding {
    arrived: AtomicUsize,
    release: watch::Receiver<bool>,
}

#[async_trait]
impl Invoker for Holding {
    async fn invoke(&self, _request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let mut release = self.release.clone();
        let _ = release.wait_for(|go| *go).await;
        Ok(ChatResponse::new(Message::assistant("done")))
    }
}

/// The resident set of this process, bytes.
fn rss() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("/proc/self/status")?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/self/status")?;
    Ok(kib * 1024)
}

/// A dialog of `messages` messages alternating user and assistant, each about 500 bytes, as a
/// long working session's history would be.
fn dialog(messages: usize) -> Dialog {
    let mut dialog = Dialog::with_system("You lead research. Start tasks for the slow parts.");
    for i in 0..messages {
        let text = format!(
            "Turn {i}: {}",
            "the module reads its settings and logs them. ".repeat(11)
        );
        dialog.push(if i % 2 == 0 {
            Message::user(text)
        } else {
            Message::assistant(text)
        });
    }
    dialog
}

/// The team: `agents` agents, each with a background fork subagent and room for 64 children.
fn team(agents: usize, invoker: Arc<Holding>) -> anyhow::Result<Team> {
    let mut text = String::from(
        "global:\n  model_name: m\n  max_background_tasks: 64\n  subagents: [{name: researcher, mode: fork, background: true}]\nagent_configs:\n",
    );
    for a in 0..agents {
        text.push_str(&format!(
            "  - {{name: lead{a}, system_prompt: You lead.}}\n"
        ));
    }
    let spec = parse_tactic(text.as_bytes(), Path::new("forks.yaml"), &|_| None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Team::builder(&spec).invoker(invoker).build()?)
}

fn mib(bytes: f64) -> String {
    format!("{:.2} MiB", bytes / (1024.0 * 1024.0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let forks: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let messages: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    ensure!(
        (1..=1000).contains(&forks),
        "FORKS: 1 to 1000 (a run starts at most 1,024 tasks)"
    );
    let (release, held) = watch::channel(false);
    let invoker = Arc::new(Holding {
        arrived: AtomicUsize::new(0),
        release: held,
    });
    let agents = forks.div_ceil(PER_AGENT);
    let team = team(agents, invoker.clone())?;
    let mut history = dialog(messages);
    let history_bytes: usize = history
        .messages()
        .iter()
        .map(|m| m.content.as_deref().map_or(0, str::len))
        .sum();
    let before = rss()?;
    let mut handles = Vec::with_capacity(forks);
    for a in 0..agents {
        let lead = team.agent(&format!("lead{a}")).context("agent")?;
        lead.restore(DialogTree {
            dialogs: vec![NamedDialog {
                alias: "main".to_owned(),
                dialog: history.snapshot(),
            }],
            active: Some("main".to_owned()),
        })?;
        for f in (a * PER_AGENT)..forks.min((a + 1) * PER_AGENT) {
            handles.push(lead.spawn("main", "researcher", format!("Look into part {f}."))?);
        }
    }
    while invoker.arrived.load(Ordering::SeqCst) < forks {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let with_forks = rss()?;
    // What a framework that copies the history into each child holds: the same messages, again.
    let copies: Vec<Vec<Message>> = (0..forks)
        .map(|_| history.messages().iter().cloned().collect())
        .collect();
    let with_copies = rss()?;
    let _ = release.send(true);
    for handle in &handles {
        let state = handle.wait().await;
        ensure!(
            matches!(state, TaskState::Finished(_)),
            "a child did not finish: {state:?}"
        );
    }
    let figures = serde_json::json!({
        "forks": forks,
        "messages": messages,
        "history_bytes": history_bytes,
        "rss_before_bytes": before,
        "rss_with_forks_bytes": with_forks,
        "rss_with_copies_bytes": with_copies,
        "per_fork_bytes": with_forks.saturating_sub(before) as f64 / forks as f64,
        "per_copy_bytes": with_copies.saturating_sub(with_forks) as f64 / forks as f64,
    });
    say(&figures);
    println!("{figures}");
    drop(copies);
    Ok(())
}

/// The figures in words, on stderr.
fn say(figures: &serde_json::Value) {
    let get = |name: &str| figures[name].as_f64().unwrap_or(0.0);
    let (per_fork, per_copy) = (get("per_fork_bytes"), get("per_copy_bytes"));
    eprintln!(
        "{} background forks of a {}-message dialog ({} of text), all running at once: RSS {} \
         before, +{} with the forks ({:.1} KiB per fork), +{} with as many deep copies ({:.1} KiB \
         each): a fork costs {:.3} of a copy",
        get("forks"),
        get("messages"),
        mib(get("history_bytes")),
        mib(get("rss_before_bytes")),
        mib(get("rss_with_forks_bytes") - get("rss_before_bytes")),
        per_fork / 1024.0,
        mib(get("rss_with_copies_bytes") - get("rss_with_forks_bytes")),
        per_copy / 1024.0,
        per_fork / per_copy.max(1.0)
    );
}
