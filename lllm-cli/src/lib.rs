//! The `lllm` command as a library, so that a program of your own can run YAML tactics whose
//! `tactic_type:` names a tactic written in Rust:
//!
//! ```no_run
//! use lllm_cli::main_with;
//! use lllm_runtime::TacticRegistry;
//!
//! fn main() -> std::process::ExitCode {
//!     let mut registry = TacticRegistry::new();
//!     // registry.register("debate", |spec| Ok(Box::new(MyDebate::from(spec))));
//!     main_with(registry)
//! }
//! ```
#![doc = include_str!("../../docs/cli.md")]

mod batch;
mod chat;
mod check;
mod cli;
mod confirm;
mod eval;
mod execute;
mod exit;
mod form;
mod mcp_login;
mod otel;
mod parse;
mod private_dir;
mod queue;
mod redact;
mod replay;
mod resume;
mod run;
mod screen;
mod serve;
mod show;
mod signals;
mod tools;
mod vars;
mod words;

use std::process::ExitCode;

use cli::Command;
pub use lllm_runtime::TacticRegistry;

/// Runs the `lllm` command line with these tactic types (see [`TacticRegistry::new`] for the built-in
/// ones) and returns the exit code: 0 success, 1 the run failed, 2 bad usage or an invalid tactic file,
/// 3 paused for a confirmation.
/// A signal ends the process from a thread of its own, with 129 (SIGHUP), 130 (SIGINT) or 143
/// (SIGTERM).
pub fn main_with(registry: TacticRegistry) -> ExitCode {
    let cli = match parse::parse(colour_on_stderr()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    redact::remember_environment();
    let export = init_logging();
    if let Some(export) = export.clone() {
        signals::on_stop(move || export.finish());
    }
    if let Err(e) = signals::install() {
        tracing::warn!("cannot handle signals: {e}; an interrupted run may leave tool processes");
    }
    let outcome = match cli.command {
        Command::Run(args) => contained(|| run::run(args, &registry)),
        Command::Resume(args) => contained(|| resume::resume(args, &registry)),
        Command::Batch(args) if args.queue.is_some() => contained(|| queue::batch(args)),
        Command::Batch(args) => contained(|| batch::batch(args, &registry)),
        Command::Worker(args) => contained(|| queue::worker(args, &registry)),
        Command::Check(args) => check::check(&args, &registry),
        // MCP servers started to list their tools: their orphans are adopted and killed too.
        Command::Tools(args) => contained(|| tools::tools(&args, &registry)),
        Command::Schema(args) => check::schema(&args),
        Command::Eval(args) => contained(|| eval::eval(&args, &registry)),
        Command::Replay(args) => replay::replay(&args),
        Command::Serve(args) => contained(|| serve::serve(args, &registry)),
        Command::Mcp(cli::McpCommand::Login(args)) => mcp_login::login(&args),
    };
    signals::yield_to_a_stop();
    if let Some(export) = export {
        export.finish();
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// Runs a command that starts tool programs or MCP servers: orphans of their processes are
/// re-parented to lllm, and whatever of them is left is killed when the command ends.
fn contained(command: impl FnOnce() -> Result<(), exit::Failure>) -> Result<(), exit::Failure> {
    if let Err(e) = lllm_runtime::tools::contain_tool_processes() {
        tracing::debug!("cannot adopt orphaned tool processes: {e}");
    }
    let outcome = command();
    lllm_runtime::tools::kill_tool_processes();
    outcome
}

/// Colour only for a person at a terminal, and never when `NO_COLOR` is set (<https://no-color.org>).
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// rmcp's OAuth module, held at info: at debug it logs the authorization code.
const OAUTH_LOG: &str = "rmcp::transport::auth=info";

/// What is logged without `LLLM_LOG`: warnings, nothing of the MCP SDK.
const DEFAULT_LOG: &str = "warn,rmcp=off";

/// Diagnostics go to stderr; `LLLM_LOG` (for example `LLLM_LOG=debug`) sets the level, `warn` by default.
/// The MCP SDK's own log is off by default: lllm reports what its failures mean (`LLLM_LOG=rmcp=debug`
/// shows it). When the `OTEL_*` variables ask for it, the run's GenAI spans are exported too (see
/// [`otel`]); a setup that fails is reported and the run goes on without export.
fn init_logging() -> Option<otel::Export> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;

    let log = tracing_subscriber::fmt::layer()
        .with_ansi(colour_on_stderr())
        .with_writer(|| redact::RedactedStderr)
        .with_target(false);
    // Without LLLM_LOG, the default `warn,rmcp=off` as a plain table of targets: the same events,
    // without EnvFilter's machinery (directives parsed at run time, span-field matchers), which
    // is 0.7 MiB of code touched in every run.
    let log = match std::env::var_os("LLLM_LOG") {
        Some(_) => log
            .with_filter(
                tracing_subscriber::EnvFilter::try_from_env("LLLM_LOG")
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG))
                    // rmcp's OAuth logs the authorization code at debug: never below info there,
                    // whatever LLLM_LOG asks.
                    .add_directive(OAUTH_LOG.parse().expect("a constant directive")),
            )
            .boxed(),
        None => log
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_default(tracing::Level::WARN)
                    .with_target("rmcp", tracing_subscriber::filter::LevelFilter::OFF),
            )
            .boxed(),
    };
    let mut problem = None;
    let (export, spans) = if otel::requested() {
        match otel::Export::start() {
            Ok((export, tracer)) => {
                let spans = tracing_opentelemetry::layer()
                    .with_tracer(tracer)
                    .with_location(false)
                    .with_threads(false)
                    .with_tracked_inactivity(false)
                    .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                        meta.is_span() && meta.target() == lllm_runtime::telemetry::TARGET
                    }));
                (Some(export), Some(spans))
            }
            Err(e) => {
                problem = Some(e);
                (None, None)
            }
        }
    } else {
        (None, None)
    };
    tracing_subscriber::registry()
        .with(log)
        .with(spans)
        .try_init()
        .ok();
    if let Some(e) = problem {
        tracing::warn!("{e}; the run goes on without OpenTelemetry export");
    }
    export
}
