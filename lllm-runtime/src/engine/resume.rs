//! A run started again from its journal.

use std::path::Path;
use std::sync::Arc;

use lllm_core::{load_tactic, LimitSetting, TacticSpec};

use super::{JournalPlan, RunError, RunPlan};
use crate::conversation::Conversation;
use crate::journal::{content_hash, Journal};

/// What a journal holds for a resume.
// Made once per resume and taken apart at once: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Resumable {
    /// The run finished: its output, as it answered.
    Finished {
        /// The answer.
        output: String,
    },
    /// The run did not finish: its tactic, and the plan that continues it (its input, variables and
    /// limit settings as journaled, then `limits`; the journal as memory). Add who confirms and who
    /// watches, and run it.
    Unfinished {
        /// The tactic file, loaded again.
        spec: TacticSpec,
        /// The plan.
        plan: RunPlan,
    },
}

/// Opens the journal in `path` to resume its run. The tactic file it names must not have changed
/// since the run started (its content hash is journaled), unless `force`; `limits` apply over the
/// run's own.
pub fn plan_resume(
    path: &Path,
    force: bool,
    limits: Vec<LimitSetting>,
) -> Result<Resumable, RunError> {
    let journal = Journal::resume(path).map_err(RunError::JournalOpen)?;
    if let Some(output) = journal.finished() {
        return Ok(Resumable::Finished { output });
    }
    let start = journal.start().clone();
    let bytes = super::run::read_tactic(&start.tactic)?;
    if content_hash(&bytes) != start.tactic_sha256 && !force {
        return Err(RunError::TacticChanged { path: start.tactic });
    }
    let spec = load_tactic(&start.tactic)?;
    let mut plan = RunPlan::new()
        .maybe_input(start.input.clone())
        .vars(start.vars.clone().into_iter().collect())
        .dialogs(start.dialogs.clone())
        .caller_tools(start.caller_tools.clone())
        .journal(JournalPlan::Resume(Arc::new(journal)));
    if let Some(session) = start.session {
        plan = plan.conversation(
            Conversation::new(session)
                .parent(start.parent_session)
                .seed(start.seed),
        );
    }
    // The run's own settings first, then the resume's (which win).
    for setting in start.limits.into_iter().chain(limits) {
        plan = plan.limit(setting);
    }
    Ok(Resumable::Unfinished { spec, plan })
}
