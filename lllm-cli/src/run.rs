//! `lllm run`: a chat with the tactic's first agent (one answer, or an interactive session).

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use lllm_core::full_message;
use lllm_core::{is_variable_name, CHAT_TACTIC};
use lllm_runtime::{
    content_hash, load_tactic, preflight, Agent, AgentBuilder, AgentError, DialogTree,
    DryRunInvoker, Invoker, Journal, McpServers, Message, OpenAiInvoker, PreparedRequest, Progress,
    ProgressEvent, PromptVars, RunBudget, RunStart, StreamEvent, TacticError, TacticRegistry,
    TacticSpec, Team, TraceFormat, TraceRecorder, Usage,
};
use serde_json::{json, Value};

use crate::cli::{RunArgs, TraceFormatArg};
use crate::exit::{failed, stdout_failed, usage, usage_if, Failure};

/// The alias of the chat's dialog.
const MAIN: &str = "main";
/// Largest input read from standard input: far more than any context window holds.
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

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
    crate::redact::remember_tactic(&spec);
    // The `--var`s as given, for a journal; `vars` gains the input below.
    let given_vars = parse_vars(&args.vars).map_err(usage)?;
    let mut vars = given_vars.clone();
    // The terminal chat (streaming, interactive) runs the built-in `chat`; a registered replacement
    // runs like any other tactic.
    let is_chat = spec.tactic_type() == CHAT_TACTIC && registry.is_builtin(CHAT_TACTIC);
    let mut input = match args.input.clone() {
        Some(text) => Some(text),
        // A resumed run has the input its journal recorded, or none.
        None if args.resume.is_some() => None,
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
    if args.dry_run && args.journal.is_some() {
        return Err(usage(anyhow!(
            "a dry run sends nothing, so there is nothing to journal: leave out --journal or --dry-run"
        )));
    }
    if is_chat && input.is_none() && args.journal.is_some() {
        return Err(usage(anyhow!(
            "an interactive chat cannot be journaled: pass --input TEXT (or pipe it) with --journal"
        )));
    }
    let journal = match (&args.resume, &args.journal) {
        (Some(resuming), _) => Some(resuming.journal.clone()),
        (None, Some(path)) => Some(Arc::new(start_journal(
            path,
            &args,
            input.as_deref(),
            &given_vars,
        )?)),
        (None, None) => None,
    };
    let mut limits = *spec.limits();
    for item in &args.limits {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| usage(anyhow!("--limit `{item}` must be KEY=VALUE")))?;
        limits
            .set(key.trim(), value)
            .map_err(|e| usage(anyhow!("--limit {item}: {e}")))?;
    }
    let budget = Arc::new(RunBudget::new(limits));
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
                match (args.trace_format, args.trace_rows_only) {
                    (TraceFormatArg::AgenticMooncake, _) => TraceFormat::AgenticMooncake,
                    (TraceFormatArg::Lllm, true) => TraceFormat::RowsOnly,
                    (TraceFormatArg::Lllm, false) => TraceFormat::Lllm,
                },
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
    let plan = Plan {
        spec: &spec,
        registry,
        vars,
        input,
        args: &args,
        trace: trace.clone(),
        is_chat,
        journal,
        budget,
    };
    let outcome = run_with(plan);
    if let Some(trace) = trace {
        trace
            .flush()
            .context("cannot write the trace")
            .map_err(failed)?;
    }
    outcome
}

/// What a run needs, checked and loaded.
struct Plan<'a> {
    spec: &'a TacticSpec,
    registry: &'a TacticRegistry,
    vars: PromptVars,
    input: Option<String>,
    args: &'a RunArgs,
    trace: Option<Arc<TraceRecorder>>,
    /// The built-in chat (streaming, interactive) rather than a tactic.
    is_chat: bool,
    journal: Option<Arc<Journal>>,
    budget: Arc<RunBudget>,
}

fn run_with(plan: Plan<'_>) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(failed)?;
    let servers = runtime.block_on(start_servers(plan.spec))?;
    // However the run ends, the servers are shut down (a signal kills their process groups).
    // Every span of the run is a child of its workflow span: the run's futures are polled on this
    // thread, inside it.
    let span = crate::otel::workflow_span(&crate::otel::tactic_name(&plan.args.tactic));
    let outcome = span.in_scope(|| run_started(&runtime, plan, &servers));
    if let Err(failure) = &outcome {
        crate::otel::record_failure(&span, failure);
    }
    drop(span);
    runtime.block_on(servers.shutdown());
    outcome
}

/// Starts the MCP servers the tactic's agents use, all at once.
#[allow(clippy::print_stderr)]
pub(crate) async fn start_servers(spec: &TacticSpec) -> Result<McpServers, Failure> {
    let names: Vec<&str> = spec.used_mcp_servers().map(|s| s.name.as_str()).collect();
    if names.is_empty() {
        return Ok(McpServers::new());
    }
    if std::io::stderr().is_terminal() {
        eprintln!("lllm: starting MCP server(s): {}", names.join(", "));
    }
    McpServers::start(spec)
        .await
        .map_err(|e| usage_if(e.is_config(), e))
}

fn run_started(
    runtime: &tokio::runtime::Runtime,
    plan: Plan<'_>,
    servers: &McpServers,
) -> Result<(), Failure> {
    let Plan {
        spec,
        registry,
        vars,
        input,
        args,
        trace,
        is_chat,
        journal,
        budget,
    } = plan;
    let printed = DryRunLines::default();
    let reject = args.resume.as_ref().is_some_and(|r| r.reject);
    let confirm = crate::confirm::confirmer(args.yes, reject, journal.is_some());
    if !is_chat {
        let mut team = Team::builder(spec)
            .invoker(invoker(args.dry_run, &printed))
            .mcp(servers)
            .confirm(confirm)
            .budget(budget)
            .run_class(args.priority_class.into());
        if let Some(journal) = journal {
            team = team.journal(journal);
        }
        let team = match trace {
            Some(trace) => team.trace(trace),
            None => team,
        };
        let team = team.build().map_err(|e| usage_if(e.is_config(), e))?;
        runtime.block_on(run_tactic(spec, registry, &vars, args, team))?;
        return printed.result();
    }
    let agent_spec = &spec.agents()[0];
    let mcp_tools = servers
        .tools_for(agent_spec)
        .map_err(|e| usage_if(e.is_config(), e))?;
    let mut builder = AgentBuilder::from_spec(agent_spec)
        .invoker(invoker(args.dry_run, &printed))
        .tools(mcp_tools)
        .confirm(confirm)
        .budget(budget);
    if let Some(trace) = trace {
        builder = builder.trace(trace);
    }
    if let Some(journal) = &journal {
        builder = builder.journal(journal.clone());
    }
    let agent = builder.build().map_err(usage)?;
    agent
        .open_with(MAIN, &vars)
        .map_err(|e| usage_if(e.is_config(), e))?;
    // A structured answer is shown once it is valid: rejected attempts must not appear on screen.
    let streamable = !args.json && !args.dry_run && !agent.has_output_schema();
    let output = Output {
        stream: streamable && (args.stream || std::io::stdout().is_terminal()),
        dry_run: args.dry_run,
        show_tools: std::io::stderr().is_terminal(),
    };
    match input {
        Some(text) => {
            runtime.block_on(answer_once(&agent, &text, args, output, journal.as_deref()))
        }
        None => runtime.block_on(chat(&agent, args, output)),
    }?;
    printed.result()
}

/// Runs a tactic of steps or one written in Rust: progress on stderr (on a terminal), the answer on
/// stdout.
#[allow(clippy::print_stderr)]
async fn run_tactic(
    spec: &TacticSpec,
    registry: &TacticRegistry,
    vars: &PromptVars,
    args: &RunArgs,
    mut team: Team,
) -> Result<(), Failure> {
    let tactic = registry.create(spec).map_err(usage)?;
    if std::io::stderr().is_terminal() {
        let started = std::time::Instant::now();
        team = team.on_progress(move |p: Progress<'_>| show_progress(started, p));
    }
    let answer = tactic
        .run(&team, vars)
        .await
        .map_err(|e| tactic_failure(e, team.journal().map(|j| j.path())))?;
    if let Some(journal) = team.journal() {
        journal.finish(&answer).map_err(failed)?;
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{}", team_summary(&team, &answer))
    } else if args.dry_run {
        note(&answer);
        Ok(())
    } else {
        writeln!(out, "{answer}")
    };
    written.and_then(|()| out.flush()).map_err(stdout_failed)
}

/// The exit of a tactic that failed: paused (3), the caller's fault (2) or the run's (1).
fn tactic_failure(error: TacticError, journal: Option<&std::path::Path>) -> Failure {
    match &error {
        TacticError::Agent(e) if e.is_paused() => paused(e, journal),
        _ => usage_if(error.is_usage(), error),
    }
}

/// A run paused for a confirmation: how to continue.
fn paused(error: &AgentError, journal: Option<&std::path::Path>) -> Failure {
    let file = journal.map_or("JOURNAL".to_owned(), |p| p.display().to_string());
    let what = match error.kind() {
        lllm_runtime::AgentErrorKind::Paused { tool } => {
            format!("a call of `{tool}` by agent `{}`", error.agent())
        }
        _ => "a tool call".to_owned(),
    };
    Failure::Paused(anyhow!(
        "paused: {what} waits for confirmation (journaled in {file}); continue with `lllm resume {file} --yes` to approve, `--reject` to decline, or in a terminal to be asked"
    ))
}

/// Starts the journal of a new run.
fn start_journal(
    path: &std::path::Path,
    args: &RunArgs,
    input: Option<&str>,
    vars: &PromptVars,
) -> Result<Journal, Failure> {
    let tactic = args
        .tactic
        .canonicalize()
        .with_context(|| format!("cannot find {}", args.tactic.display()))
        .map_err(usage)?;
    let bytes = std::fs::read(&tactic)
        .with_context(|| format!("cannot read {}", tactic.display()))
        .map_err(usage)?;
    let start = RunStart {
        tactic,
        tactic_sha256: content_hash(&bytes),
        input: input.map(str::to_owned),
        vars: vars.clone().into_iter().collect(),
        limits: args.limits.clone(),
    };
    Journal::create(path, start).map_err(usage)
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
fn invoker(dry_run: bool, printed: &DryRunLines) -> Arc<dyn Invoker> {
    let real = OpenAiInvoker::new();
    if !dry_run {
        return Arc::new(real);
    }
    let failure = printed.0.clone();
    Arc::new(DryRunInvoker::new(
        real,
        move |request: &PreparedRequest| {
            let mut failure = failure.lock().unwrap_or_else(|p| p.into_inner());
            if failure.is_none() {
                let mut out = std::io::stdout().lock();
                if let Err(e) =
                    writeln!(out, "{}", request.to_redacted_json()).and_then(|()| out.flush())
                {
                    *failure = Some(e);
                }
            }
        },
    ))
}

/// Whether every request line of a dry run reached standard output.
#[derive(Debug, Default, Clone)]
struct DryRunLines(Arc<Mutex<Option<std::io::Error>>>);

impl DryRunLines {
    /// The first failed write, as the run's failure.
    fn result(&self) -> Result<(), Failure> {
        match self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(error) => Err(stdout_failed(error)),
            None => Ok(()),
        }
    }
}

pub(crate) fn parse_vars(raw: &[String]) -> anyhow::Result<PromptVars> {
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
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(anyhow!(
            "standard input is longer than {} MiB: pass a shorter input",
            MAX_INPUT_BYTES / (1024 * 1024)
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "standard input is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Why a turn ended without an answer.
#[derive(Debug)]
enum TurnError {
    /// The agent failed (the server, a tool, a limit).
    Agent(AgentError),
    /// Standard output closed while the answer was streamed: the rest would go nowhere.
    Stdout(std::io::Error),
}

impl TurnError {
    fn into_failure(self) -> Failure {
        match self {
            TurnError::Agent(e) => failed(e),
            TurnError::Stdout(e) => stdout_failed(e),
        }
    }
}

/// One turn: the answer is streamed or printed whole (or, in a dry run, reported on stderr).
#[allow(clippy::print_stderr)]
async fn turn(agent: &Agent, text: &str, output: Output) -> Result<Message, TurnError> {
    agent.receive_in(MAIN, text).map_err(TurnError::Agent)?;
    if !output.stream {
        let answer = agent.respond(MAIN).await.map_err(TurnError::Agent)?;
        if output.dry_run {
            eprintln!("{}", answer.text());
        }
        return Ok(answer);
    }
    let mut stdout = std::io::stdout();
    let mut line_open = false;
    // The first failed write stops the answer: nobody reads the rest.
    let closed: Mutex<Option<std::io::Error>> = Mutex::new(None);
    let stop = tokio::sync::Notify::new();
    let mut write = |bytes: &[u8]| {
        if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
            closed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            stop.notify_one();
        }
    };
    let mut sink = |event: StreamEvent<'_>| match event {
        StreamEvent::Text(piece) => {
            write(piece.as_bytes());
            line_open = !piece.ends_with('\n');
        }
        StreamEvent::ToolCall(call) => {
            // Text before a tool call (the model thinking aloud) ends its line before the answer.
            if line_open {
                write(b"\n");
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
    let answer = tokio::select! {
        answer = agent.respond_to(MAIN).stream(&mut sink) => answer.map_err(TurnError::Agent),
        () = stop.notified() => Err(TurnError::Stdout(std::io::Error::from(std::io::ErrorKind::BrokenPipe))),
    };
    match closed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(error) => Err(TurnError::Stdout(error)),
        None => answer,
    }
}

async fn answer_once(
    agent: &Agent,
    input: &str,
    args: &RunArgs,
    output: Output,
    journal: Option<&Journal>,
) -> Result<(), Failure> {
    let answer = match turn(agent, input, output).await {
        Ok(answer) => answer,
        Err(TurnError::Agent(e)) if e.is_paused() => {
            return Err(paused(&e, journal.map(Journal::path)))
        }
        Err(e) => return Err(e.into_failure()),
    };
    if let Some(journal) = journal {
        journal.finish(answer.text()).map_err(failed)?;
    }
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
    written.and_then(|()| out.flush()).map_err(stdout_failed)
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
                        .map_err(stdout_failed)?;
                }
                last_answer = Some(answer);
            }
            Err(TurnError::Agent(error)) => {
                failures += 1;
                eprintln!("error: {}", crate::redact::redact(&full_message(&error)));
            }
            Err(closed) => return Err(closed.into_failure()),
        }
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", summary(agent, last_answer.as_ref()))
            .and_then(|()| out.flush())
            .map_err(stdout_failed)?;
    }
    if failures > 0 {
        return Err(failed(anyhow!("{failures} turn(s) failed")));
    }
    Ok(())
}
