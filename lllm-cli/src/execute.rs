//! Running a plan on the engine and showing its outcome: what `lllm run` and `lllm resume` share.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use anyhow::anyhow;
use lllm_runtime::{
    Engine, Host, PreparedTactic, PromptError, RunError, RunEvent, RunObserver, RunPlan,
    TacticError, TacticRegistry, TacticSpec,
};
use tokio::sync::Notify;

use crate::exit::{failed, stdout_failed, usage, usage_if, Failure};

/// How a run is shown.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shown {
    /// One JSON object at the end instead of the answer.
    pub(crate) json: bool,
    /// stdout carries request lines (a dry run): answers are diagnostics.
    pub(crate) dry_run: bool,
    /// The answer is printed as it arrives (the built-in chat).
    pub(crate) stream: bool,
    /// Tool calls are shown on stderr as they happen (a person watches a streamed answer).
    pub(crate) show_tools: bool,
    /// Each step's progress is shown on stderr.
    pub(crate) progress: bool,
}

impl Shown {
    /// What a person at a terminal sees by default: progress and tool calls on stderr, a chat's
    /// answer streamed when asked or when stdout is a terminal.
    pub(crate) fn at_terminal(json: bool, dry_run: bool, stream_asked: bool) -> Shown {
        let stderr = std::io::stderr().is_terminal();
        let streamable = !json && !dry_run;
        Shown {
            json,
            dry_run,
            stream: streamable && (stream_asked || std::io::stdout().is_terminal()),
            show_tools: stderr,
            progress: stderr,
        }
    }
}

/// Prepares `spec` (its MCP servers started), runs `plan` on it with `shown` (an interactive chat
/// when `plan` has no input and the tactic is the built-in chat), prints the outcome, and stops the
/// servers however the run ended.
pub(crate) fn execute(
    registry: &TacticRegistry,
    spec: TacticSpec,
    plan: RunPlan,
    shown: Shown,
) -> Result<(), Failure> {
    let host = Host::new()
        .map_err(|e| failed(anyhow::Error::new(e).context("cannot start the async runtime")))?;
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

/// Whether the chat's agent answers JSON matching a schema (shown once valid, never streamed).
pub(crate) fn first_agent_structured(tactic: &PreparedTactic) -> bool {
    tactic
        .spec()
        .agents()
        .first()
        .is_some_and(|a| a.output_schema().is_some())
}

/// The exit of a run that failed: paused (3), the caller's fault (2) or the run's (1).
pub(crate) fn run_failure(error: RunError) -> Failure {
    if let RunError::Paused { journal, .. } = &error {
        let file = journal.display();
        return Failure::Paused(anyhow!(
            "{error}; continue with `lllm resume {file} --yes` to approve, `--reject` to decline, or in a terminal to be asked"
        ));
    }
    match &error {
        RunError::TacticChanged { .. } => usage(anyhow!(
            "{error}; restore the file, or pass --force to resume anyway"
        )),
        RunError::Limit { item, problem } => usage(anyhow!("--limit {item}: {problem}")),
        _ if wants_input(&error) => usage(anyhow!(
            "this tactic uses `{{{{ input }}}}`: pass --input TEXT or pipe the input on standard input"
        )),
        _ => usage_if(error.is_usage(), error),
    }
}

/// Whether a template misses the variable `input` (which only a run without an input lacks).
fn wants_input(error: &RunError) -> bool {
    matches!(
        error,
        RunError::Tactic(TacticError::Template {
            problem: PromptError::MissingVariable { variables, .. },
            ..
        }) if variables.iter().any(|v| v == "input")
    )
}

#[allow(clippy::print_stderr)]
pub(crate) fn note(text: &str) {
    eprintln!("{text}");
}

/// The terminal while a run goes: its streamed text on stdout, tool calls and steps on stderr. The
/// first failed write on stdout stops the run: nobody reads the rest.
pub(crate) struct Screen {
    shown: Shown,
    closed: Arc<Mutex<Option<std::io::Error>>>,
    stop: Arc<Notify>,
    line_open: Arc<Mutex<bool>>,
    started: std::time::Instant,
}

impl Screen {
    pub(crate) fn new(shown: Shown) -> Screen {
        Screen {
            shown,
            closed: Arc::default(),
            stop: Arc::new(Notify::new()),
            line_open: Arc::default(),
            started: std::time::Instant::now(),
        }
    }

    /// The observer that shows the run.
    pub(crate) fn observer(&self) -> RunObserver {
        let (shown, closed, stop, line_open, started) = (
            self.shown,
            self.closed.clone(),
            self.stop.clone(),
            self.line_open.clone(),
            self.started,
        );
        let progress = crate::show::progress_lines_since(started);
        RunObserver::new(move |event| {
            if shown.progress {
                progress.notify(event);
            }
            if shown.stream {
                show_streamed(event, shown, &closed, &stop, &line_open);
            }
        })
    }

    /// Runs `run` until it ends or stdout closes.
    pub(crate) async fn watch<T>(
        &self,
        run: impl std::future::Future<Output = Result<T, RunError>>,
    ) -> Result<T, Stopped> {
        let result = tokio::select! {
            result = run => result.map_err(Stopped::Run),
            () = self.stop.notified() => Err(Stopped::Stdout(std::io::Error::from(std::io::ErrorKind::BrokenPipe))),
        };
        match self.closed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(error) => Err(Stopped::Stdout(error)),
            None => result,
        }
    }
}

/// Why a watched run has no answer.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The run failed (or paused).
    Run(RunError),
    /// Standard output closed while the answer was streamed: the rest would go nowhere.
    Stdout(std::io::Error),
}

impl Stopped {
    pub(crate) fn into_failure(self) -> Failure {
        match self {
            Stopped::Run(error) => run_failure(error),
            Stopped::Stdout(error) => stdout_failed(error),
        }
    }
}

/// One event of a streamed answer: text on stdout, tool calls on stderr.
#[allow(clippy::print_stderr)]
fn show_streamed(
    event: &RunEvent,
    shown: Shown,
    closed: &Mutex<Option<std::io::Error>>,
    stop: &Notify,
    line_open: &Mutex<bool>,
) {
    let write = |bytes: &[u8]| {
        let mut stdout = std::io::stdout();
        if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
            closed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            stop.notify_one();
        }
    };
    let mut open = line_open.lock().unwrap_or_else(|p| p.into_inner());
    match event {
        RunEvent::Text { text, .. } => {
            write(text.as_bytes());
            *open = !text.ends_with('\n');
        }
        RunEvent::ToolCall { call, .. } => {
            // Text before a tool call (the model thinking aloud) ends its line before the answer.
            if *open {
                write(b"\n");
                *open = false;
            }
            if shown.show_tools {
                eprintln!("· {}({})", call.name, call.arguments);
            }
        }
        RunEvent::ToolResult {
            is_error: true,
            content,
            ..
        } if shown.show_tools => eprintln!("  {content}"),
        _ => {}
    }
}
