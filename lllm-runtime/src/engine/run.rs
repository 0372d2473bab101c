//! One run of a prepared tactic: its team built from the plan, the tactic run inside its workflow
//! span, the journal finished.

use std::sync::Arc;

use tracing::Instrument as _;

use super::{Engine, JournalPlan, PreparedTactic, RunError, RunOutput, RunPlan};
use lllm_core::ReadProblem;

use crate::budget::RunBudget;
use crate::journal::{content_hash, Journal, RunStart};
use crate::run_context::RunContext;
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
        for (name, tree) in &plan.dialogs {
            let agent = team.agent(name).ok_or_else(|| RunError::UnknownAgent {
                agent: name.clone(),
            })?;
            agent.restore(tree.clone())?;
        }
        if !plan.dialogs.is_empty() {
            if let Some(conversation) = &plan.conversation {
                // Its first dialog was opened by the run continued.
                conversation.mark_claimed();
            }
        }
        let answer = tactic.tactic().run(&team, &vars).await.map_err(|e| {
            RunError::from(e).paused_in(team.journal().map(|j| j.as_ref()), team.usage())
        })?;
        if let Some(journal) = team.journal() {
            journal.finish(&answer).map_err(RunError::Journal)?;
        }
        Ok(RunOutput::of(&team, answer))
    }

    /// The team of one run: every agent of the tactic with the run's invoker, MCP tools and
    /// context.
    pub(crate) fn team(&self, tactic: &PreparedTactic, plan: &RunPlan) -> Result<Team, RunError> {
        let invoker = plan.invoker.clone().unwrap_or_else(|| self.invoker.clone());
        let team = Team::builder(tactic.spec())
            .invoker(invoker)
            .mcp(tactic.servers())
            .run_context(run_context(self, tactic, plan)?)
            .build()?;
        Ok(team)
    }
}

/// What the run's agents share, built once from `plan`: the budget of the tactic's limits under the
/// plan's, the journal started or resumed, the plan's trace, confirmations, observer,
/// conversation, class, item and streaming, and the engine's endpoint state.
fn run_context(
    engine: &Engine,
    tactic: &PreparedTactic,
    plan: &RunPlan,
) -> Result<RunContext, RunError> {
    let limits = plan.limits_over(*tactic.spec().limits());
    Ok(RunContext {
        budget: Some(Arc::new(RunBudget::new(limits))),
        journal: open_journal(tactic, plan)?,
        trace: plan.trace.clone(),
        confirm: plan.confirm.clone(),
        observer: plan.observer.clone(),
        conversation: plan.conversation.clone(),
        class: plan.class,
        item: plan.item.clone(),
        stream: plan.stream,
        pause: Arc::default(),
        endpoints: engine.endpoints.clone(),
        caller_tools: plan.caller_tools.clone(),
        tasks: Arc::default(),
    })
}

/// The bytes of the tactic file in `path`, read within the loader's limit (a journal records their
/// hash): a regular file only, never a device read without end.
pub(crate) fn read_tactic(path: &std::path::Path) -> Result<Vec<u8>, RunError> {
    lllm_core::read_regular(path, lllm_core::DEFAULT_MAX_FILE_BYTES).map_err(|source| {
        RunError::TacticFile {
            path: path.to_owned(),
            source,
        }
    })
}

/// The run's journal: a new one (its start recording the tactic file's hash, the input, the
/// variables and the limit settings, for a resume), or the resumed one.
fn open_journal(tactic: &PreparedTactic, plan: &RunPlan) -> Result<Option<Arc<Journal>>, RunError> {
    let path = match &plan.journal {
        JournalPlan::None => return Ok(None),
        JournalPlan::Resume(journal) => {
            journal.redact(tactic.secrets());
            if let Some(tap) = &plan.journal_tap {
                journal.tap(tap.clone());
            }
            return Ok(Some(journal.clone()));
        }
        JournalPlan::Create(path) => path,
    };
    let file = tactic.spec().path();
    let file = file.canonicalize().map_err(|source| RunError::TacticFile {
        path: file.to_owned(),
        source: ReadProblem::Io(source),
    })?;
    let bytes = read_tactic(&file)?;
    // Not even the start line holds a credential of the tactic (a key pasted into the input).
    let secrets = tactic.secrets();
    let mut vars = serde_json::Value::Object(plan.vars.clone().into_iter().collect());
    secrets.redact_json(&mut vars);
    let start = RunStart {
        tactic: file,
        tactic_sha256: content_hash(&bytes),
        input: plan.input.as_deref().map(|text| secrets.redact(text)),
        vars: match vars {
            serde_json::Value::Object(vars) => vars,
            _ => serde_json::Map::new(),
        },
        limits: plan.limits.clone(),
        session: plan.conversation.as_ref().map(|c| c.id().to_owned()),
        parent_session: plan
            .conversation
            .as_ref()
            .and_then(|c| c.parent_id().map(str::to_owned)),
        seed: plan
            .conversation
            .as_ref()
            .map(|c| c.seed_messages().to_vec())
            .unwrap_or_default(),
        dialogs: plan.dialogs.clone(),
        caller_tools: plan.caller_tools.clone(),
    };
    let journal = Journal::create(path, start).map_err(RunError::JournalOpen)?;
    journal.redact(secrets);
    if let Some(tap) = &plan.journal_tap {
        // The start line is written: the tap gets it from the file, then every line after it.
        let written = std::fs::read(journal.path()).map_err(|source| {
            RunError::JournalOpen(crate::journal::JournalError::Io {
                path: journal.path().to_owned(),
                source,
            })
        })?;
        (tap.0)(&written);
        journal.tap(tap.clone());
    }
    Ok(Some(Arc::new(journal)))
}
