//! Running a plan on the engine and showing its outcome: what `lllm run` and `lllm resume` share.

use std::io::{IsTerminal, Write};

use lllm_runtime::engine::PreparedTactic;
use lllm_runtime::{Engine, Host, RunPlan, TacticRegistry, TacticSpec};

use crate::exit::{failed, run_failure, stdout_failed, Failure};
use crate::screen::{first_agent_structured, note, Screen, Shown, Stopped};

/// Prepares `spec` (its MCP servers started), runs `plan` on it with `shown` (an interactive chat
/// when `plan` has no input and the tactic is the built-in chat), prints the outcome, and stops the
/// servers however the run ended.
pub(crate) fn execute(
    registry: &TacticRegistry,
    spec: TacticSpec,
    plan: RunPlan,
    shown: Shown,
) -> Result<(), Failure> {
    let host = host()?;
    let engine = Engine::new(registry.clone());
    announce_servers(&spec);
    host.block_on(async {
        let tactic = engine.prepare(spec).await.map_err(run_failure)?;
        let outcome = if tactic.is_chat() && plan.input_text().is_none() {
            crate::chat::chat(&engine, &tactic, plan, shown).await
        } else {
            run_once(&engine, &tactic, plan, shown).await
        };
        tactic.shutdown().await;
        outcome
    })
}

/// The Tokio runtime of a command that runs something.
pub(crate) fn host() -> Result<Host, Failure> {
    Host::new().map_err(|e| failed(anyhow::Error::new(e).context("cannot start the async runtime")))
}

/// Says on a terminal which MCP servers start (it may take a while).
#[allow(clippy::print_stderr)]
pub(crate) fn announce_servers(spec: &TacticSpec) {
    let names: Vec<&str> = spec.used_mcp_servers().map(|s| s.name.as_str()).collect();
    if !names.is_empty() && std::io::stderr().is_terminal() {
        eprintln!("lllm: starting MCP server(s): {}", names.join(", "));
    }
}

/// One run to its end, its answer printed.
async fn run_once(
    engine: &Engine,
    tactic: &PreparedTactic,
    plan: RunPlan,
    shown: Shown,
) -> Result<(), Failure> {
    let chat = tactic.is_chat();
    let structured = chat && first_agent_structured(tactic);
    let shown = Shown {
        stream: shown.stream && chat && !structured,
        progress: shown.progress && !chat,
        ..shown
    };
    let screen = Screen::new(shown);
    let plan = plan.observer(screen.observer()).stream(shown.stream);
    let output = screen
        .watch(engine.run(tactic, plan))
        .await
        .map_err(Stopped::into_failure)?;
    let mut out = std::io::stdout().lock();
    let agent = chat.then(|| (tactic.spec().agents()[0].name(), structured));
    let written = if shown.json {
        writeln!(out, "{}", crate::show::summary(&output, agent))
    } else if shown.dry_run {
        note(&output.answer);
        Ok(())
    } else if shown.stream {
        writeln!(out)
    } else {
        writeln!(out, "{}", output.answer)
    };
    if chat && output.answer.is_empty() {
        note("the model returned no text");
    }
    written.and_then(|()| out.flush()).map_err(stdout_failed)
}
