//! `lllm`: run and check YAML tactics against any OpenAI-compatible server.

mod check;
mod cli;
mod exit;
mod run;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let outcome = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::check(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// Diagnostics go to stderr; `LLLM_LOG` (for example `LLLM_LOG=debug`) sets the level, `warn` by default.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LLLM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
