//! The `steps` tactic: turns, forks and parallel branches, run as the file describes them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use lllm_core::{waiting_turns, Branch, Demand, Step, Turn};
use lllm_core::{DialogId, PromptVars};

use crate::agent::DemandSource;

use super::{render, Progress, ProgressEvent, Tactic, TacticError, Team};

/// Reports how a step ended, also when it never got to: a branch dropped because a sibling failed
/// reports `Cancelled`.
struct StepWatch<'a> {
    team: &'a Team,
    turn: &'a Turn,
    started: Instant,
    outcome: Option<ProgressEvent>,
}

impl StepWatch<'_> {
    fn progress(&self, event: ProgressEvent) -> Progress<'_> {
        Progress {
            step: &self.turn.at,
            agent: &self.turn.agent,
            dialog: &self.turn.dialog,
            event,
        }
    }
}

impl Drop for StepWatch<'_> {
    fn drop(&mut self) {
        let event = self
            .outcome
            .unwrap_or(ProgressEvent::Cancelled(self.started.elapsed()));
        self.team.report(self.progress(event));
    }
}

/// The branches of a `parallel` step, all at once, their results in branch order. A branch that
/// fails stops its siblings at once (dropping them leaves their dialogs as they were). A branch that
/// pauses for a confirmation does not: the run's pause lets the others finish what they are doing
/// (a running tool call, whose result is journaled) and stop at their next request, so that a resume
/// neither loses nor repeats their work; the pause is the step's outcome.
async fn join_branches<F>(branches: impl IntoIterator<Item = F>) -> Result<Vec<Done>, TacticError>
where
    F: std::future::Future<Output = Result<Done, TacticError>>,
{
    let mut running: FuturesUnordered<_> = branches
        .into_iter()
        .enumerate()
        .map(|(i, branch)| branch.map(move |done| (i, done)))
        .collect();
    let mut done: Vec<Option<Done>> = (0..running.len()).map(|_| None).collect();
    let mut paused = None;
    while let Some((i, result)) = running.next().await {
        match result {
            Ok(branch) => done[i] = Some(branch),
            Err(error) if is_pause(&error) => {
                paused.get_or_insert(error);
            }
            Err(error) => return Err(error),
        }
    }
    match paused {
        Some(pause) => Err(pause),
        None => Ok(done.into_iter().flatten().collect()),
    }
}

fn is_pause(error: &TacticError) -> bool {
    matches!(error, TacticError::Agent(e) if e.is_paused())
}

/// `t.yaml:12:5: steps[1].receive`: where the step's message is written.
pub(crate) fn receive_at(turn: &Turn) -> String {
    format!("{}: {}.receive", turn.origin, turn.at)
}

/// Runs steps in order; a `parallel` step runs its branches at once (as futures on the caller's task,
/// not a thread each, so hundreds of dialogs can be in flight). When a branch fails, its siblings are
/// stopped; a stopped step leaves its dialog as it was.
///
/// The answer is the `output` template rendered with every variable, or else the last step's answer
/// (for a final `parallel` step, the last branch's in file order).
///
/// A run opens and forks the dialogs it names, so a [`Team`] serves one run of a steps tactic.
///
/// Each turn tells its requests what waits for its answer ([`Demand`], used by `priority: auto`):
/// the turns after it ([`waiting_turns`]) and the branches of its parallel groups that have
/// already finished.
#[derive(Debug, Clone)]
pub struct StepsTactic {
    steps: Vec<Step>,
    output: Option<String>,
    /// Turns waiting for each turn's answer, by the turn's field path.
    waiting: HashMap<String, u32>,
}

/// Finished branches of the parallel groups around a step, innermost last: each waits for the
/// branches still running.
type Groups = Vec<Arc<AtomicU32>>;

/// What a step ends with: its answer, and the dialogs whose work the next step waits for.
struct Done {
    answer: String,
    dialogs: Vec<DialogId>,
}

/// The variables of one run: `input`, `--var`s, and every saved answer.
struct Run<'a> {
    team: &'a Team,
    vars: Mutex<PromptVars>,
}

impl Run<'_> {
    fn vars(&self) -> PromptVars {
        self.vars.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl StepsTactic {
    /// A tactic running `steps`, answering with `output` (a template) or else the last step's answer.
    pub fn new(steps: Vec<Step>, output: Option<String>) -> Self {
        let waiting = waiting_turns(&steps);
        StepsTactic {
            steps,
            output,
            waiting,
        }
    }

    /// Runs `steps` in order, the first waiting for the dialogs `after`; answers with the last
    /// step's answer and the dialogs whose work ended the sequence.
    fn sequence<'a>(
        &'a self,
        steps: &'a [Step],
        run: &'a Run<'a>,
        after: Vec<DialogId>,
        groups: Groups,
    ) -> BoxFuture<'a, Result<Done, TacticError>> {
        async move {
            let mut done = Done {
                answer: String::new(),
                dialogs: after,
            };
            for step in steps {
                done = self.step(step, run, done.dialogs, groups.clone()).await?;
            }
            Ok(done)
        }
        .boxed()
    }

    fn step<'a>(
        &'a self,
        step: &'a Step,
        run: &'a Run<'a>,
        after: Vec<DialogId>,
        groups: Groups,
    ) -> BoxFuture<'a, Result<Done, TacticError>> {
        async move {
            match step {
                Step::Turn(turn) => self.turn(turn, run, &after, &groups).await,
                Step::Parallel { branches, .. } => {
                    let finished = Arc::new(AtomicU32::new(0));
                    let mut inner = groups.clone();
                    inner.push(finished.clone());
                    let branches = join_branches(branches.iter().map(|branch| {
                        let branch = match branch {
                            Branch::Step(step) => {
                                self.step(step, run, after.clone(), inner.clone())
                            }
                            Branch::Sequence { steps, .. } => {
                                self.sequence(steps, run, after.clone(), inner.clone())
                            }
                        };
                        let finished = finished.clone();
                        async move {
                            let done = branch.await?;
                            finished.fetch_add(1, Ordering::Relaxed);
                            Ok::<_, TacticError>(done)
                        }
                    }))
                    .await?;
                    // The next step waits for every branch.
                    let dialogs = branches.iter().flat_map(|b| b.dialogs.clone()).collect();
                    let answer = branches.into_iter().last().map(|b| b.answer);
                    Ok(Done {
                        answer: answer.unwrap_or_default(),
                        dialogs,
                    })
                }
            }
        }
        .boxed()
    }

    async fn turn(
        &self,
        turn: &Turn,
        run: &Run<'_>,
        after: &[DialogId],
        groups: &Groups,
    ) -> Result<Done, TacticError> {
        let agent = run
            .team
            .agent(&turn.agent)
            .ok_or_else(|| TacticError::UnknownAgent {
                step: turn.at.clone(),
                agent: turn.agent.clone(),
            })?;
        let vars = run.vars();
        let mut respond = agent
            .respond_to(&turn.dialog)
            .demand(self.demand(turn, run.team, groups));
        if let Some(template) = &turn.receive {
            respond = respond.message(render(template, || receive_at(turn), &vars)?);
        }
        if let Some(parent) = &turn.fork_from {
            // A run that continues an earlier one's dialogs (a served conversation) forks again
            // from the parent as it is now: the earlier fork is replaced.
            if agent.has_dialog(&turn.dialog) {
                agent.close(&turn.dialog)?;
            }
            agent.fork(parent, &turn.dialog)?;
        } else if !agent.has_dialog(&turn.dialog) {
            agent.open_with(&turn.dialog, &vars)?;
        }
        let dialog = agent.dialog_id(&turn.dialog)?;
        if let Some(trace) = run.team.trace() {
            trace.waits(dialog, after);
        }
        let mut watch = StepWatch {
            team: run.team,
            turn,
            started: Instant::now(),
            outcome: None,
        };
        run.team.report(watch.progress(ProgressEvent::Started));
        let answer = respond.await;
        let took = watch.started.elapsed();
        watch.outcome = Some(match &answer {
            Ok(_) => ProgressEvent::Finished(took),
            Err(_) => ProgressEvent::Failed(took),
        });
        drop(watch);
        let answer = answer?;
        let text = answer.content.unwrap_or_default();
        if let Some(name) = &turn.save {
            if let Some(journal) = run.team.journal() {
                journal.saved(name, &text).map_err(TacticError::failed)?;
            }
            run.vars
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(name.clone(), serde_json::Value::from(text.as_str()));
        }
        Ok(Done {
            answer: text,
            dialogs: vec![dialog],
        })
    }

    /// What waits for `turn`'s answer: the turns after it, and (read before each request) the
    /// branches of its groups that have finished since.
    fn demand(&self, turn: &Turn, team: &Team, groups: &Groups) -> DemandSource {
        let waiting_turns = self.waiting.get(&turn.at).copied().unwrap_or(0);
        let class = team.run_class();
        let groups = groups.clone();
        DemandSource::new(move || Demand {
            waiting_turns,
            waiting_branches: groups
                .iter()
                .map(|g| g.load(Ordering::Relaxed))
                .fold(0u32, u32::saturating_add),
            class,
        })
    }

    /// The variables after a run, for callers that report them (`--json`).
    pub async fn run_with_vars(
        &self,
        team: &Team,
        vars: &PromptVars,
    ) -> Result<(String, PromptVars), TacticError> {
        let run = Run {
            team,
            vars: Mutex::new(vars.clone()),
        };
        let last = self
            .sequence(&self.steps, &run, Vec::new(), Vec::new())
            .await?
            .answer;
        let vars = run.vars();
        let answer = match &self.output {
            Some(template) => render(template, || "output".to_owned(), &vars)?,
            None => last,
        };
        Ok((answer, vars))
    }
}

#[async_trait]
impl Tactic for StepsTactic {
    async fn run(&self, team: &Team, vars: &PromptVars) -> Result<String, TacticError> {
        self.run_with_vars(team, vars)
            .await
            .map(|(answer, _)| answer)
    }
}
