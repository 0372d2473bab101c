//! Static checks of a tactic's steps: what would go wrong at run time, found before anything runs.

use std::collections::{HashMap, HashSet};

use super::steps::{Branch, Step, StepsError, Turn};
use crate::suggest::closest;

/// A problem at a field path (`steps[2].agent`).
pub(crate) type PathError = (String, StepsError);

/// A dialog of an agent.
type DialogKey = (String, String);

/// What exists at a point of the run.
#[derive(Debug, Clone, Default)]
struct Scope {
    dialogs: HashSet<DialogKey>,
    saved: HashSet<String>,
}

/// What a branch of a `parallel` step does: the dialogs it writes and the ones it forks from.
#[derive(Debug, Default)]
struct Footprint {
    writes: Vec<(DialogKey, String)>,
    reads: Vec<(DialogKey, String)>,
}

struct Checker<'a> {
    agents: &'a [String],
    /// Every variable some step saves, and where.
    saves: HashMap<String, String>,
}

/// Checks `steps` against the agents' names: unknown agents, forks from dialogs that do not exist yet,
/// parallel branches sharing a dialog, variables used before they are saved, a name saved twice, and
/// templates that do not parse. `output` is checked last.
pub(crate) fn check_steps(
    steps: &[Step],
    agents: &[String],
    output: Option<&str>,
) -> Result<(), PathError> {
    let mut checker = Checker {
        agents,
        saves: HashMap::new(),
    };
    for turn in steps.iter().flat_map(Step::turns) {
        if let Some(name) = &turn.save {
            if let Some(first) = checker.saves.get(name) {
                return Err((
                    format!("{}.save", turn.at),
                    StepsError::SavedTwice {
                        name: name.clone(),
                        first: first.clone(),
                    },
                ));
            }
            checker.saves.insert(name.clone(), turn.at.clone());
        }
    }
    let mut scope = Scope::default();
    checker.sequence(steps, &mut scope, &mut Footprint::default())?;
    if let Some(template) = output {
        checker.template(template, "output", &scope)?;
    }
    Ok(())
}

impl Checker<'_> {
    fn sequence(
        &self,
        steps: &[Step],
        scope: &mut Scope,
        footprint: &mut Footprint,
    ) -> Result<(), PathError> {
        steps
            .iter()
            .try_for_each(|step| self.step(step, scope, footprint))
    }

    fn step(
        &self,
        step: &Step,
        scope: &mut Scope,
        footprint: &mut Footprint,
    ) -> Result<(), PathError> {
        match step {
            Step::Turn(turn) => self.turn(turn, scope, footprint),
            Step::Parallel { branches, .. } => {
                let mut done: Vec<(Scope, Footprint)> = Vec::with_capacity(branches.len());
                for branch in branches {
                    let mut branch_scope = scope.clone();
                    let mut branch_print = Footprint::default();
                    match branch {
                        Branch::Step(step) => {
                            self.step(step, &mut branch_scope, &mut branch_print)?
                        }
                        Branch::Sequence { steps, .. } => {
                            self.sequence(steps, &mut branch_scope, &mut branch_print)?
                        }
                    }
                    for (_, earlier_print) in &done {
                        conflict(earlier_print, &branch_print)?;
                    }
                    done.push((branch_scope, branch_print));
                }
                for (branch_scope, branch_print) in done {
                    scope.dialogs.extend(branch_scope.dialogs);
                    scope.saved.extend(branch_scope.saved);
                    footprint.writes.extend(branch_print.writes);
                    footprint.reads.extend(branch_print.reads);
                }
                Ok(())
            }
        }
    }

    fn turn(
        &self,
        turn: &Turn,
        scope: &mut Scope,
        footprint: &mut Footprint,
    ) -> Result<(), PathError> {
        if !self.agents.contains(&turn.agent) {
            let suggestion =
                closest(&turn.agent, self.agents.iter().map(String::as_str)).map(str::to_owned);
            return Err((
                format!("{}.agent", turn.at),
                StepsError::UnknownAgent {
                    agent: turn.agent.clone(),
                    suggestion,
                    agents: self.agents.to_vec(),
                },
            ));
        }
        let key = (turn.agent.clone(), turn.dialog.clone());
        if let Some(parent) = &turn.fork_from {
            let parent_key = (turn.agent.clone(), parent.clone());
            if parent == &turn.dialog {
                return Err((format!("{}.fork_from", turn.at), StepsError::ForkFromItself));
            }
            if !scope.dialogs.contains(&parent_key) {
                return Err((
                    format!("{}.fork_from", turn.at),
                    StepsError::ForkFromMissing {
                        parent: parent.clone(),
                        agent: turn.agent.clone(),
                    },
                ));
            }
            if scope.dialogs.contains(&key) {
                return Err((
                    format!("{}.dialog", turn.at),
                    StepsError::ForkExists {
                        dialog: turn.dialog.clone(),
                        parent: parent.clone(),
                    },
                ));
            }
            footprint.reads.push((parent_key, turn.at.clone()));
        }
        if let Some(template) = &turn.receive {
            self.template(template, &format!("{}.receive", turn.at), scope)?;
        }
        footprint.writes.push((key.clone(), turn.at.clone()));
        scope.dialogs.insert(key);
        if let Some(name) = &turn.save {
            scope.saved.insert(name.clone());
        }
        Ok(())
    }

    /// A template must parse, and may not use a saved variable before the step that saves it.
    fn template(&self, template: &str, at: &str, scope: &Scope) -> Result<(), PathError> {
        let env = minijinja::Environment::new();
        let parsed = env
            .template_from_str(template)
            .map_err(|e| (at.to_owned(), StepsError::Template(e.to_string())))?;
        let mut used: Vec<String> = parsed.undeclared_variables(false).into_iter().collect();
        used.sort();
        for name in used {
            if let Some(saver) = self.saves.get(&name) {
                if !scope.saved.contains(&name) {
                    return Err((
                        at.to_owned(),
                        StepsError::UsedBeforeSaved {
                            name,
                            saver: saver.clone(),
                        },
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Two parallel branches may not both use a dialog when either writes it.
fn conflict(earlier: &Footprint, later: &Footprint) -> Result<(), PathError> {
    let clash = |(key, at): &(DialogKey, String), others: &[(DialogKey, String)]| {
        others.iter().find(|(k, _)| k == key).map(|(_, other_at)| {
            (
                at.clone(),
                StepsError::SharedDialog {
                    dialog: key.1.clone(),
                    agent: key.0.clone(),
                    other: other_at.clone(),
                },
            )
        })
    };
    for write in &later.writes {
        if let Some(error) = clash(write, &earlier.writes).or_else(|| clash(write, &earlier.reads))
        {
            return Err(error);
        }
    }
    for read in &later.reads {
        if let Some(error) = clash(read, &earlier.writes) {
            return Err(error);
        }
    }
    Ok(())
}
