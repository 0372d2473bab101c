//! `lllm resume JOURNAL`: the run of a journal, started again with the journal as its memory.

use std::io::Write;

use lllm_runtime::engine::{plan_resume, Resumable};
use lllm_runtime::TacticRegistry;

use crate::cli::ResumeArgs;
use crate::execute::execute;
use crate::exit::run_failure;
use crate::exit::{stdout_failed, Failure};
use crate::screen::Shown;

pub(crate) fn resume(args: ResumeArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let resumable = plan_resume(&args.journal, args.force, args.limits).map_err(run_failure)?;
    let (spec, plan) = match resumable {
        Resumable::Finished { output } => {
            // A finished run: its output, as the run printed it.
            let mut out = std::io::stdout().lock();
            let written = if args.json {
                writeln!(out, "{}", serde_json::json!({ "answer": output }))
            } else {
                writeln!(out, "{output}")
            };
            return written.and_then(|()| out.flush()).map_err(stdout_failed);
        }
        Resumable::Unfinished { spec, plan } => (spec, plan),
    };
    crate::redact::remember_tactic(&spec);
    let plan = plan.confirm(crate::confirm::confirmer(args.yes, args.reject, true));
    let plan = crate::otel::with_outer_trace(plan);
    execute(
        registry,
        spec,
        plan,
        Shown::at_terminal(args.json, false, false),
    )
}
