//! `lllm`: run and check YAML tactics against any OpenAI-compatible server.

use std::process::ExitCode;

fn main() -> ExitCode {
    lllm_cli::main_with(lllm_cli::TacticRegistry::new())
}
