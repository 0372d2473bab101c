//! `lllm check`: load and validate a tactic.

use std::io::Write;

use lllm_runtime::load_tactic;

use crate::cli::CheckArgs;
use crate::exit::{failed, usage, Failure};

pub(crate) fn check(args: &CheckArgs) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    let agents: Vec<String> = spec
        .agents
        .iter()
        .map(|a| {
            let profile = a
                .inference_hints
                .as_ref()
                .map_or("hints off".to_owned(), |h| {
                    format!("profile {}", h.profile())
                });
            format!("{} ({}, {profile})", a.name, a.model)
        })
        .collect();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ok: {}: {} agent(s): {}",
        args.tactic.display(),
        agents.len(),
        agents.join(", ")
    )
    .map_err(failed)
}
