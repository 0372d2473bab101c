//! Who approves the calls of tools that need confirmation: `--yes` approves all, a person at a
//! terminal is asked, and without a terminal every such call is declined (the model is told so).
//! The same person answers a tool's questions (MCP elicitation) on the terminal; without one, or
//! with `--reject`, they are declined.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lllm_runtime::tools::{
    ApproveAll, Confirm, ConfirmRequest, Decision, DeclineAll, ElicitRequest, Elicited,
};

/// Most characters of a call's arguments shown in the question.
const MAX_SHOWN_CHARS: usize = 4000;
/// Unclear answers tolerated before the call is declined.
const MAX_ASKS: usize = 3;

/// The confirmation callback of a run: `--yes` approves, `--reject` (on resume) declines, a terminal
/// asks; without one, a journaled run pauses and any other run declines.
pub(crate) fn confirmer(yes: bool, reject: bool, journaled: bool) -> Arc<dyn Confirm> {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if yes && terminal {
        // Calls are approved; a tool's questions still go to the person at the terminal.
        Arc::new(AskTheTerminal {
            all: AtomicBool::new(true),
            ..AskTheTerminal::default()
        })
    } else if yes {
        Arc::new(ApproveAll)
    } else if reject {
        Arc::new(DeclineAll)
    } else if terminal {
        Arc::new(AskTheTerminal::default())
    } else if journaled {
        Arc::new(WaitForResume)
    } else {
        Arc::new(NoOneToAsk::default())
    }
}

/// No terminal, but a journal: the run pauses, and `lllm resume` decides.
#[derive(Debug)]
struct WaitForResume;

#[async_trait]
impl Confirm for WaitForResume {
    async fn confirm(&self, _: ConfirmRequest<'_>) -> Decision {
        Decision::Pause
    }
}

/// Asks on the terminal, one question at a time.
#[derive(Debug, Default)]
struct AskTheTerminal {
    /// One question at a time: calls of a turn run concurrently.
    asking: tokio::sync::Mutex<()>,
    /// "all" was answered: approve the rest of the run.
    all: AtomicBool,
}

#[async_trait]
impl Confirm for AskTheTerminal {
    async fn confirm(&self, request: ConfirmRequest<'_>) -> Decision {
        let _turn = self.asking.lock().await;
        if self.all.load(Ordering::SeqCst) {
            return Decision::Approve;
        }
        let question = question(&request);
        let answer = tokio::task::spawn_blocking(move || ask(&question))
            .await
            .unwrap_or(Answer::No);
        match answer {
            Answer::Yes => Decision::Approve,
            Answer::All => {
                self.all.store(true, Ordering::SeqCst);
                Decision::Approve
            }
            Answer::No => Decision::Decline,
        }
    }

    async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        let _turn = self.asking.lock().await;
        let question = crate::form::Question::of(&request);
        tokio::task::spawn_blocking(move || question.ask())
            .await
            .unwrap_or(Elicited::Cancel)
    }
}

enum Answer {
    Yes,
    No,
    All,
}

fn question(request: &ConfirmRequest<'_>) -> String {
    let arguments = serde_json::to_string_pretty(request.arguments).unwrap_or_default();
    let mut shown: String = arguments.chars().take(MAX_SHOWN_CHARS).collect();
    if shown.len() < arguments.len() {
        shown.push_str("\n  … (cut)");
    }
    let shown = crate::screen::visible(&crate::redact::redact(&shown)).replace('\n', "\n  ");
    format!(
        "\nlllm: agent `{}` wants to call `{}` ({}) with:\n  {shown}\n",
        request.agent, request.tool, request.source
    )
}

/// Shows the question and reads the answer; end of input or a read error declines.
fn ask(question: &str) -> Answer {
    let mut stderr = std::io::stderr().lock();
    if write!(stderr, "{question}").is_err() {
        return Answer::No;
    }
    for _ in 0..MAX_ASKS {
        if write!(
            stderr,
            "Allow it? [y]es / [n]o / [a]ll calls for this run: "
        )
        .and_then(|()| stderr.flush())
        .is_err()
        {
            return Answer::No;
        }
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => {
                writeln!(stderr).ok();
                return Answer::No;
            }
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Answer::Yes,
            "n" | "no" => return Answer::No,
            "a" | "all" => return Answer::All,
            _ => {}
        }
    }
    Answer::No
}

/// No terminal and no `--yes`: declines, and says so once per tool.
#[derive(Debug, Default)]
struct NoOneToAsk {
    told: Mutex<HashSet<String>>,
}

#[async_trait]
impl Confirm for NoOneToAsk {
    #[allow(clippy::print_stderr)]
    async fn confirm(&self, request: ConfirmRequest<'_>) -> Decision {
        let first = self
            .told
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request.tool.to_owned());
        if first {
            eprintln!(
                "lllm: declined a call of `{}` ({}) by agent `{}`: it needs confirmation and there is no terminal to ask; pass --yes to approve such calls",
                request.tool, request.source, request.agent
            );
        }
        Decision::Decline
    }

    #[allow(clippy::print_stderr)]
    async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        let first = self
            .told
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("question of {}", request.source));
        if first {
            eprintln!(
                "lllm: declined a question of {} (for agent `{}`): there is no terminal to ask",
                request.source, request.agent
            );
        }
        Elicited::Decline
    }
}
