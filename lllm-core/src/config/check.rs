//! Static checks of a tactic's steps: what would go wrong at run time, found before anything runs.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use super::steps::{Branch, Step, Turn};
use super::steps_error::StepsError;
use crate::prompt::is_literal;
use crate::suggest::closest;

/// A problem at a field path (`steps[2].agent`).
pub(crate) type PathError = (String, StepsError);

/// A dialog of an agent.
type DialogKey = (String, String);

/// What exists at a point of the run. Parallel branches each start from the scope before the
/// `parallel` step: what a branch adds is logged and taken out again before the next branch (instead
/// of copying the scope for each branch, which costs the scope's size times the branches).
#[derive(Debug, Default)]
struct Scope {
    dialogs: HashSet<DialogKey>,
    saved: HashSet<String>,
    added: Vec<Added>,
}

/// Something a step added to the scope.
#[derive(Debug)]
enum Added {
    Dialog(DialogKey),
    Saved(String),
}

impl Scope {
    fn add(&mut self, added: Added) {
        let new = match &added {
            Added::Dialog(key) => self.dialogs.insert(key.clone()),
            Added::Saved(name) => self.saved.insert(name.clone()),
        };
        if new {
            self.added.push(added);
        }
    }

    /// Takes out what was added since `mark`, and returns it.
    fn undo_to(&mut self, mark: usize) -> Vec<Added> {
        let added: Vec<Added> = self.added.drain(mark..).collect();
        for item in &added {
            match item {
                Added::Dialog(key) => self.dialogs.remove(key),
                Added::Saved(name) => self.saved.remove(name),
            };
        }
        added
    }
}

/// Every dialog the earlier branches of a `parallel` step write or read, with the first step that
/// does.
#[derive(Debug, Default)]
struct Earlier {
    writes: HashMap<DialogKey, String>,
    reads: HashMap<DialogKey, String>,
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
    /// The environment templates are parsed in, made for the first template that is not plain text
    /// (a run of plain steps never builds one: minijinja's built-in filters and tests are a map of
    /// closures built anew for each environment).
    templates: OnceCell<minijinja::Environment<'static>>,
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
        templates: OnceCell::new(),
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
                let mut earlier = Earlier::default();
                let mut added: Vec<Added> = Vec::new();
                for branch in branches {
                    let mark = scope.added.len();
                    let mut branch_print = Footprint::default();
                    match branch {
                        Branch::Step(step) => self.step(step, scope, &mut branch_print)?,
                        Branch::Sequence { steps, .. } => {
                            self.sequence(steps, scope, &mut branch_print)?
                        }
                    }
                    added.extend(scope.undo_to(mark));
                    conflict(&earlier, &branch_print)?;
                    for (key, at) in &branch_print.writes {
                        earlier
                            .writes
                            .entry(key.clone())
                            .or_insert_with(|| at.clone());
                    }
                    for (key, at) in &branch_print.reads {
                        earlier
                            .reads
                            .entry(key.clone())
                            .or_insert_with(|| at.clone());
                    }
                    footprint.writes.extend(branch_print.writes);
                    footprint.reads.extend(branch_print.reads);
                }
                for item in added {
                    scope.add(item);
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
        scope.add(Added::Dialog(key));
        if let Some(name) = &turn.save {
            scope.add(Added::Saved(name.clone()));
        }
        Ok(())
    }

    /// A template must parse, and may not use a saved variable before the step that saves it.
    fn template(&self, template: &str, at: &str, scope: &Scope) -> Result<(), PathError> {
        if is_literal(template) {
            return Ok(());
        }
        let parsed = self
            .templates
            .get_or_init(minijinja::Environment::new)
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
fn conflict(earlier: &Earlier, later: &Footprint) -> Result<(), PathError> {
    let clash = |(key, at): &(DialogKey, String), others: &HashMap<DialogKey, String>| {
        others.get(key).map(|other_at| {
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
