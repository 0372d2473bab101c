//! What waits for each turn of a `steps:` tactic: the static half of `priority: auto`.

use std::collections::HashMap;

use super::steps::{Branch, Step};

/// For every turn of `steps` (keyed by its field path, `steps[1].parallel[0]`), the number of turns
/// that cannot start until its answer arrives: the later turns of its own branch and every turn
/// after its parallel groups, forks included (a fork starts from its parent's answer).
///
/// Branches of one parallel group do not wait for each other. The dynamic half of the rule (finished
/// sibling branches that wait for the last one) is the runtime's, which knows which have finished.
pub fn waiting_turns(steps: &[Step]) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    sequence(steps, 0, &mut out);
    out
}

/// Turns in `step`, however deep.
fn count(step: &Step) -> u32 {
    u32::try_from(step.turns().len()).unwrap_or(u32::MAX)
}

/// Fills `out` for a sequence whose end `after` turns wait for.
fn sequence(steps: &[Step], after: u32, out: &mut HashMap<String, u32>) {
    let mut later = after;
    let mut waiting = Vec::with_capacity(steps.len());
    for step in steps.iter().rev() {
        waiting.push(later);
        later = later.saturating_add(count(step));
    }
    for (step, after) in steps.iter().zip(waiting.into_iter().rev()) {
        single(step, after, out);
    }
}

fn single(step: &Step, after: u32, out: &mut HashMap<String, u32>) {
    match step {
        Step::Turn(turn) => {
            out.insert(turn.at.clone(), after);
        }
        Step::Parallel { branches, .. } => {
            for branch in branches {
                match branch {
                    Branch::Step(step) => single(step, after, out),
                    Branch::Sequence { steps, .. } => sequence(steps, after, out),
                }
            }
        }
    }
}
