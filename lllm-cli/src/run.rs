//! `lllm run`: a chat with the tactic's first agent (one answer, or an interactive session).

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use lllm_core::full_message;
use lllm_core::{is_variable_name, CHAT_TACTIC};
use lllm_runtime::{
    load_tactic, preflight, Agent, AgentBuilder, AgentError, DialogTree, DryRunInvoker, Invoker,
    Message, OpenAiInvoker, PreparedRequest, Progress, ProgressEvent, PromptVars, StreamEvent,
    TacticError, TacticRegistry, TacticSpec, Team, TraceRecorder, Usage,
};
use serde_json::{json, Value};

use crate::cli::RunArgs;
use crate::exit::{failed, usage, Failure};

/// The alias of the chat's dialog.
const MAIN: &str = "main";

/// How answers are shown.
#[derive(Debug, Clone, Copy)]
struct Output {
    /// Print text as it arrives.
    stream: bool,
    /// stdout carries request lines (dry run): answers are diagnostics.
    dry_run: bool,
    /// Report tool calls on stderr (a person is watching).
    show_tools: bool,
}

pub(crate) fn run(args: RunArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    let mut vars = parse_vars(&args.vars).map_err(usage)?;
    // The terminal chat (streaming, interactive) runs the built-in `chat`; a registered replacement
    // runs like any other tactic.
    let is_chat = spec.tactic_type() == CHAT_TACTIC && registry.is_builtin(CHAT_TACTIC);
    let mut input = match args.input.clone() {
        Some(text) => Some(text),
        None if !std::io::stdin().is_terminal() => Some(read_stdin().map_err(usage)?),
        None => None,
    };
    if input.as_deref().is_some_and(|text| text.trim().is_empty()) {
        // A chat answers its input, so it needs one; steps may not use `input` at all.
        if is_chat {
            return Err(usage(anyhow!(
                "the input is empty: pass --input TEXT or pipe text on standard input"
            )));
        }
        input = None;
    }
    if let Some(text) = &input {
        vars.insert("input".into(), Value::from(text.as_str()));
    }
    if !is_chat {
        preflight(&spec, &vars).map_err(|e| usage(explain_missing_input(e, input.is_none())))?;
    }
    let tokenizer = match &args.tokenizer {
        Some(path) => Some(TraceRecorder::load_tokenizer(path).map_err(usage)?),
        None => None,
    };
    let trace = match &args.trace {
        Some(path) => Some(Arc::new(
            TraceRecorder::to_file(
                path,
                args.trace_block_size as usize,
                tokenizer,
                !args.trace_rows_only,
            )
            .with_context(|| format!("cannot write the trace to {}", path.display()))
            .map_err(usage)?,
        )),
        None => None,
    };
    if let Some(trace) = trace.clone() {
        // The requests answered before an interruption are worth keeping.
        crate::signals::on_stop(move || {
            trace.flush().ok();
        });
    }
    let outcome = run_with(&spec, registry, vars, input, &args, trace.clone(), is_chat);
    if let Some(trace) = trace {
        trace
            .flush()
            .context("cannot write the trace")
            .map_err(failed)?;
    }
    outcome
}

fn run_with(
    spec: &TacticSpec,
    registry: &TacticRegistry,
    vars: PromptVars,
    input: Option<String>,
    args: &RunArgs,
    trace: Option<Arc<TraceRecorder>>,
    is_chat: bool,
) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(failed)?;
    if !is_chat {
        return runtime.block_on(run_tactic(spec, registry, &vars, args, trace));
    }
    let agent_spec = &spec.agents()[0];
    let mut builder = AgentBuilder::from_spec(agent_spec).invoker(invoker(args.dry_run));
    if let Some(trace) = trace {
        builder = builder.trace(trace);
    }
    let agent = builder.build().map_err(usage)?;
    agent
        .open_with(MAIN, &vars)
        .map_err(|e| if e.is_config() { usage(e) } else { failed(e) })?;
    // A structured answer is shown once it is valid: rejected attempts must not appear on screen.
    let streamable = !args.json && !args.dry_run && !agent.has_output_schema();
    let output = Output {
        stream: streamable && (args.stream || std::io::stdout().is_terminal()),
        dry_run: args.dry_run,
        show_tools: std::io::stderr().is_terminal(),
    };
    match input {
        Some(text) => runtime.block_on(answer_once(&agent, &text, args, output)),
        None => runtime.block_on(chat(&agent, args, output)),
    }
}

/// Runs a tactic of steps or one written in Rust: progress on stderr (on a terminal), the answer on
/// stdout.
#[allow(clippy::print_stderr)]
async fn run_tactic(
    spec: &TacticSpec,
    registry: &TacticRegistry,
    vars: &PromptVars,
    args: &RunArgs,
    trace: Option<Arc<TraceRecorder>>,
) -> Result<(), Failure> {
    let tactic = registry.create(spec).map_err(usage)?;
    let mut team = Team::traced(spec, invoker(args.dry_run), trace).map_err(usage)?;
    if std::io::stderr().is_terminal() {
        let started = std::time::Instant::now();
        team = team.on_progress(move |p: Progress<'_>| show_progress(started, p));
    }
    let answer =
        tactic.run(&team, vars).await.map_err(
            |e| {
                if e.is_usage() {
                    usage(e)
                } else {
                    failed(e)
                }
            },
        )?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{}", team_summary(&team, &answer))
    } else if args.dry_run {
        note(&answer);
        Ok(())
    } else {
        writeln!(out, "{answer}")
    };
    written
        .context("cannot write to standard output")
        .map_err(failed)
}

/// One line on stderr per step event, timed from the start of the run.
#[allow(clippy::print_stderr)]
fn show_progress(started: std::time::Instant, p: Progress<'_>) {
    let at = started.elapsed().as_secs_f64();
    let (mark, took, suffix) = match p.event {
        ProgressEvent::Started => ("▸", None, ""),
        ProgressEvent::Finished(took) => ("✓", Some(took), ""),
        ProgressEvent::Failed(took) => ("✗", Some(took), ""),
        ProgressEvent::Cancelled(took) => ("–", Some(took), " stopped"),
    };
    match took {
        None => eprintln!("{at:6.1}s {mark} {} {}/{}", p.step, p.agent, p.dialog),
        Some(took) => eprintln!(
            "{at:6.1}s {mark} {} {}/{}{suffix} ({:.1}s)",
            p.step,
            p.agent,
            p.dialog,
            took.as_secs_f64()
        ),
    }
}

/// `{"answer", "usage", "dialogs", "dialog_usage"}` of a team run.
fn team_summary(team: &Team, answer: &str) -> Value {
    let mut ids = serde_json::Map::new();
    let mut usage = serde_json::Map::new();
    for agent in team.agents() {
        let tree = agent.dialogs();
        ids.insert(agent.name().to_owned(), dialog_ids(&tree));
        usage.insert(agent.name().to_owned(), dialog_usage(&tree));
    }
    json!({
        "answer": answer,
        "usage": usage_json(&team.usage()),
        "dialogs": ids,
        "dialog_usage": usage,
    })
}

fn dialog_ids(tree: &DialogTree) -> Value {
    tree.dialogs
        .iter()
        .map(|d| (d.alias.clone(), Value::from(d.dialog.id().to_string())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn dialog_usage(tree: &DialogTree) -> Value {
    tree.dialogs
        .iter()
        .map(|d| (d.alias.clone(), usage_json(&d.dialog.usage())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// A tactic that uses `{{ input }}` run without one gets a hint about `--input`, not about `--var`.
fn explain_missing_input(error: TacticError, no_input: bool) -> anyhow::Error {
    let wants_input = matches!(
        &error,
        TacticError::Template {
            problem: lllm_runtime::PromptError::MissingVariable { variables, .. },
            ..
        } if variables.iter().any(|v| v == "input")
    );
    if wants_input && no_input {
        anyhow!("this tactic uses `{{{{ input }}}}`: pass --input TEXT or pipe the input on standard input")
    } else {
        error.into()
    }
}

/// Builds the invoker: the real one, or a dry run printing each request as a JSON line on stdout.
fn invoker(dry_run: bool) -> Arc<dyn Invoker> {
    let real = OpenAiInvoker::new();
    if !dry_run {
        return Arc::new(real);
    }
    let stdout = Mutex::new(std::io::stdout());
    Arc::new(DryRunInvoker::new(
        real,
        move |request: &PreparedRequest| {
            let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
            // A closed stdout must not abort the run; the exit code reports the final write.
            writeln!(out, "{}", request.to_redacted_json()).ok();
        },
    ))
}

fn parse_vars(raw: &[String]) -> anyhow::Result<PromptVars> {
    let mut vars = PromptVars::new();
    for item in raw {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| anyhow!("--var `{item}` must be KEY=VALUE"))?;
        if !is_variable_name(key) {
            return Err(anyhow!(
                "--var `{item}`: `{key}` is not a variable name (letters, digits and _, not starting with a digit)"
            ));
        }
        vars.insert(key.to_owned(), Value::from(value));
    }
    Ok(vars)
}

fn read_stdin() -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "standard input is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// One turn: the answer is streamed or printed whole (or, in a dry run, reported on stderr).
#[allow(clippy::print_stderr)]
async fn turn(agent: &Agent, text: &str, output: Output) -> Result<Message, AgentError> {
    agent.receive_in(MAIN, text)?;
    if !output.stream {
        let answer = agent.respond(MAIN).await?;
        if output.dry_run {
            eprintln!("{}", answer.text());
        }
        return Ok(answer);
    }
    let mut stdout = std::io::stdout();
    let mut line_open = false;
    let mut sink = |event: StreamEvent<'_>| match event {
        StreamEvent::Text(piece) => {
            // Shown as it comes; a failed write shows up at the final newline.
            stdout.write_all(piece.as_bytes()).ok();
            stdout.flush().ok();
            line_open = !piece.ends_with('\n');
        }
        StreamEvent::ToolCall(call) => {
            // Text before a tool call (the model thinking aloud) ends its line before the answer.
            if line_open {
                stdout.write_all(b"\n").ok();
                line_open = false;
            }
            if output.show_tools {
                eprintln!("· {}({})", call.name, call.arguments);
            }
        }
        StreamEvent::ToolResult {
            is_error: true,
            content,
            ..
        } if output.show_tools => {
            eprintln!("  {content}");
        }
        _ => {}
    };
    agent.respond_to(MAIN).stream(&mut sink).await
}

async fn answer_once(
    agent: &Agent,
    input: &str,
    args: &RunArgs,
    output: Output,
) -> Result<(), Failure> {
    let answer = turn(agent, input, output).await.map_err(failed)?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{}", summary(agent, Some(&answer)))
    } else if output.dry_run {
        Ok(())
    } else if output.stream {
        writeln!(out)
    } else {
        writeln!(out, "{}", answer.text())
    };
    if answer.content.is_none() {
        note("the model returned no text");
    }
    written
        .context("cannot write to standard output")
        .map_err(failed)
}

/// `{"agent", "answer", "usage", "dialogs", "dialog_usage"}` for `--json`. The answer is JSON when the
/// agent has an output schema, text otherwise.
fn summary(agent: &Agent, answer: Option<&Message>) -> Value {
    let tree = agent.dialogs();
    let answer = answer.and_then(|m| m.content.as_deref()).map(|text| {
        if agent.has_output_schema() {
            serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
        } else {
            Value::from(text)
        }
    });
    json!({
        "agent": agent.name(),
        "answer": answer,
        "usage": usage_json(&agent.usage()),
        "dialogs": {agent.name(): dialog_ids(&tree)},
        "dialog_usage": {agent.name(): dialog_usage(&tree)},
    })
}

fn usage_json(usage: &Usage) -> Value {
    let mut value = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens(),
    });
    if let Some(cached) = usage.cached_tokens {
        value["cached_tokens"] = Value::from(cached);
    }
    value
}

#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}

/// An interactive chat on one dialog: each line typed is a turn; `/exit` or end of input ends it.
#[allow(clippy::print_stderr)]
async fn chat(agent: &Agent, args: &RunArgs, output: Output) -> Result<(), Failure> {
    eprintln!(
        "lllm: chatting with `{}` ({}); /exit or Ctrl-D to leave",
        agent.name(),
        agent.model()
    );
    let stdin = std::io::stdin();
    let mut line = String::new();
    let mut failures = 0usize;
    let mut last_answer: Option<Message> = None;
    loop {
        eprint!("you> ");
        line.clear();
        let read = stdin
            .lock()
            .read_line(&mut line)
            .context("cannot read standard input")
            .map_err(failed)?;
        let text = line.trim();
        if read == 0 || text == "/exit" || text == "/quit" {
            break;
        }
        if text.is_empty() {
            continue;
        }
        match turn(agent, text, output).await {
            Ok(answer) => {
                if !output.dry_run {
                    let mut out = std::io::stdout().lock();
                    let shown = if output.stream { "" } else { answer.text() };
                    writeln!(out, "{shown}")
                        .and_then(|()| out.flush())
                        .context("cannot write to standard output")
                        .map_err(failed)?;
                }
                last_answer = Some(answer);
            }
            Err(error) => {
                failures += 1;
                eprintln!("error: {}", full_message(&error));
            }
        }
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", summary(agent, last_answer.as_ref()))
            .context("cannot write to standard output")
            .map_err(failed)?;
    }
    if failures > 0 {
        return Err(failed(anyhow!("{failures} turn(s) failed")));
    }
    Ok(())
}
