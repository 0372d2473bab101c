//! Exit codes: 0 success, 1 the run failed (server, tool, timeout, a limit), 2 bad usage or invalid
//! tactic file, 3 paused (a tool call waits for a confirmation; `lllm resume` continues).

use std::process::ExitCode;

use anyhow::anyhow;
use lllm_runtime::config::PromptError;
use lllm_runtime::tactic::TacticError;
use lllm_runtime::RunError;

use crate::words::in_command_words;

/// Why the command failed, and so which exit code it ends with.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad usage or an invalid tactic file: exit 2.
    Usage(anyhow::Error),
    /// The run itself failed: exit 1.
    Run(anyhow::Error),
    /// The run paused, waiting for a confirmation: exit 3.
    Paused(anyhow::Error),
}

impl Failure {
    /// Prints the error and its causes on stderr, in the command's words, and returns the exit code.
    #[allow(clippy::print_stderr)]
    pub(crate) fn report(self) -> ExitCode {
        let (error, code) = match self {
            Failure::Usage(e) => (e, 2),
            Failure::Run(e) => (e, 1),
            Failure::Paused(e) => {
                eprintln!("lllm: {}", crate::redact::redact(&in_command_words(&e)));
                return ExitCode::from(3);
            }
        };
        eprintln!(
            "error: {}",
            crate::redact::redact(&in_command_words(&error))
        );
        ExitCode::from(code)
    }
}

/// Shorthand for a usage failure.
pub(crate) fn usage(error: impl Into<anyhow::Error>) -> Failure {
    Failure::Usage(error.into())
}

/// Shorthand for a run failure.
pub(crate) fn failed(error: impl Into<anyhow::Error>) -> Failure {
    Failure::Run(error.into())
}

/// A usage failure when the caller's settings are at fault (`is_config`), else a run failure.
pub(crate) fn usage_if(is_config: bool, error: impl Into<anyhow::Error>) -> Failure {
    if is_config {
        usage(error)
    } else {
        failed(error)
    }
}

/// A failed write on standard output (closed by the reader, a full disk): exit 1, and say so.
pub(crate) fn stdout_failed(error: std::io::Error) -> Failure {
    Failure::Run(anyhow::Error::new(error).context("cannot write to standard output"))
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
