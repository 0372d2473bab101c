//! `lllm run` on a terminal with the built-in chat and no input: a conversation, each line typed a
//! turn, until `/exit` or the end of input.

use std::io::{BufRead, Write};

use anyhow::{anyhow, Context};
use lllm_runtime::config::full_message;
use lllm_runtime::engine::PreparedTactic;
use lllm_runtime::{Engine, RunPlan};

use crate::exit::{failed, stdout_failed, Failure};
use crate::screen::{first_agent_structured, note, Screen, Shown, Stopped};

/// An interactive chat with `tactic`'s first agent: one dialog, a turn per line.
#[allow(clippy::print_stderr)]
pub(crate) async fn chat(
    engine: &Engine,
    tactic: &PreparedTactic,
    plan: RunPlan,
    shown: Shown,
) -> Result<(), Failure> {
    let structured = first_agent_structured(tactic);
    let shown = Shown {
        stream: shown.stream && !structured,
        progress: false,
        ..shown
    };
    let screen = Screen::new(shown);
    let plan = plan.observer(screen.observer()).stream(shown.stream);
    let session = engine
        .chat(tactic, plan)
        .map_err(crate::exit::run_failure)?;
    let agent = &tactic.spec().agents()[0];
    eprintln!(
        "lllm: chatting with `{}` ({}); /exit or Ctrl-D to leave",
        agent.name(),
        agent.model()
    );
    let mut failures = 0usize;
    let mut last_answer = None;
    // The line is read off the runtime's thread: the MCP servers' connections go on meanwhile.
    while let Some(text) = tokio::task::spawn_blocking(read_turn)
        .await
        .map_err(|e| failed(anyhow!("cannot read standard input: {e}")))??
    {
        match screen.watch(session.turn(&text)).await {
            Ok(answer) => {
                show_answer(&answer, shown)?;
                last_answer = Some(answer);
            }
            Err(Stopped::Run(error)) => {
                failures += 1;
                eprintln!("error: {}", crate::redact::redact(&full_message(&error)));
            }
            Err(closed) => return Err(closed.into_failure()),
        }
    }
    if shown.json {
        let output = session.output(last_answer.unwrap_or_default());
        let summary = crate::show::summary(&output, Some((agent.name(), structured)));
        let mut out = std::io::stdout().lock();
        writeln!(out, "{summary}")
            .and_then(|()| out.flush())
            .map_err(stdout_failed)?;
    }
    if failures > 0 {
        return Err(failed(anyhow!("{failures} turn(s) failed")));
    }
    Ok(())
}

/// The next line typed, trimmed; `None` at the end of input or on `/exit` (`/quit`).
#[allow(clippy::print_stderr)]
fn read_turn() -> Result<Option<String>, Failure> {
    let stdin = std::io::stdin();
    loop {
        eprint!("you> ");
        let mut line = String::new();
        let read = stdin
            .lock()
            .read_line(&mut line)
            .context("cannot read standard input")
            .map_err(failed)?;
        let text = line.trim();
        if read == 0 || text == "/exit" || text == "/quit" {
            return Ok(None);
        }
        if !text.is_empty() {
            return Ok(Some(text.to_owned()));
        }
    }
}

/// A turn's answer: already streamed (the line ends), or printed whole; in a dry run, on stderr.
fn show_answer(answer: &str, shown: Shown) -> Result<(), Failure> {
    if shown.dry_run {
        note(answer);
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    let shown_text = if shown.stream { "" } else { answer };
    writeln!(out, "{shown_text}")
        .and_then(|()| out.flush())
        .map_err(stdout_failed)
}
