//! One run of a prepared tactic: its team built from the plan, the tactic run inside its workflow
//! span, the journal finished.

use std::sync::Arc;

use tracing::Instrument as _;

use super::{Engine, JournalPlan, PreparedTactic, RunError, RunOutput, RunPlan};
use crate::budget::RunBudget;
use crate::journal::{content_hash, Journal, RunStart};
use crate::tactic::{preflight, Team};
use crate::telemetry;

impl Engine {
    /// Runs `plan` on `tactic` to its end: checks what can be checked before any request (the
    /// limits, every template with the run's variables), starts or resumes the journal, builds the
    /// run's team and runs the tactic inside an `invoke_workflow` span. A run that answered records
    /// its answer in its journal.
    pub async fn run(&self, tactic: &PreparedTactic, plan: RunPlan) -> Result<RunOutput, RunError> {
        let span = telemetry::workflow_span(tactic.name());
        if let Some(item) = &plan.item {
            span.record("lllm.batch.item", item.as_str());
        }
        if let Some((parent, state)) = &plan.traceparent {
            telemetry::join_outer_trace(&span, parent, state.as_deref());
        }
        let outcome = self
            .run_unspanned(tactic, plan)
            .instrument(span.clone())
            .await;
        if let Err(error) = &outcome {
            let text = tactic.secrets().redact(&lllm_core::full_message(error));
            telemetry::record_failure(&span, error.error_type(), &text);
        }
        outcome
    }

    async fn run_unspanned(
        &self,
        tactic: &PreparedTactic,
        plan: RunPlan,
    ) -> Result<RunOutput, RunError> {
        let vars = plan.template_vars();
        if !tactic.is_chat() {
            preflight(tactic.spec(), &vars)?;
        }
        let team = self.team(tactic, &plan)?;
        let answer = tactic
            .tactic()
            .run(&team, &vars)
            .await
            .map_err(|e| RunError::from(e).paused_in(team.journal().map(|j| j.as_ref())))?;
        if let Some(journal) = team.journal() {
            journal.finish(&answer).map_err(RunError::Journal)?;
        }
        Ok(RunOutput::of(&team, answer))
    }

    /// The team of one run: every agent of the tactic with the run's invoker, MCP tools, budget,
    /// journal, trace, confirmations and observer.
    pub(crate) fn team(&self, tactic: &PreparedTactic, plan: &RunPlan) -> Result<Team, RunError> {
        let spec = tactic.spec();
        let limits = plan.limits_over(*spec.limits())?;
        let journal = open_journal(tactic, plan)?;
        let invoker = plan.invoker.clone().unwrap_or_else(|| self.invoker.clone());
        let mut team = Team::builder(spec)
            .invoker(invoker)
            .mcp(tactic.servers())
            .budget(Arc::new(RunBudget::new(limits)))
            .run_class(plan.class)
            .stream(plan.stream);
        if let Some(confirm) = &plan.confirm {
            team = team.confirm(confirm.clone());
        }
        if let Some(journal) = journal {
            team = team.journal(journal);
        }
        if let Some(trace) = &plan.trace {
            team = team.trace(trace.clone());
        }
        if let Some(item) = &plan.item {
            team = team.item(item.clone());
        }
        if let Some(observer) = &plan.observer {
            team = team.observer(observer.clone());
        }
        Ok(team.build()?)
    }
}

/// The run's journal: a new one (its start recording the tactic file's hash, the input, the
/// variables and the limit settings, for a resume), or the resumed one.
fn open_journal(tactic: &PreparedTactic, plan: &RunPlan) -> Result<Option<Arc<Journal>>, RunError> {
    let path = match &plan.journal {
        JournalPlan::None => return Ok(None),
        JournalPlan::Resume(journal) => return Ok(Some(journal.clone())),
        JournalPlan::Create(path) => path,
    };
    let file = tactic.spec().path();
    let unreadable = |source| RunError::TacticFile {
        path: file.to_owned(),
        source,
    };
    let file = file.canonicalize().map_err(unreadable)?;
    let bytes = std::fs::read(&file).map_err(unreadable)?;
    let start = RunStart {
        tactic: file,
        tactic_sha256: content_hash(&bytes),
        input: plan.input.clone(),
        vars: plan.vars.clone().into_iter().collect(),
        limits: plan.limits.clone(),
    };
    Journal::create(path, start)
        .map(|journal| Some(Arc::new(journal)))
        .map_err(RunError::JournalOpen)
}
