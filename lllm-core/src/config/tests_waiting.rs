//! `waiting_turns` on the tactic shapes `priority: auto` is for.

use std::collections::HashMap;
use std::path::Path;

use super::*;

const AGENTS: &str = "global: {model_name: m}\nagent_configs:\n  - {name: lead, system_prompt: p}\n  - {name: critic, system_prompt: c}\n";

fn waiting(steps: &str) -> HashMap<String, u32> {
    let text = format!("{AGENTS}steps:\n{steps}");
    let spec = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("tactic");
    let out = waiting_turns(spec.steps());
    let turns: usize = spec.steps().iter().map(|s| s.turns().len()).sum();
    assert_eq!(out.len(), turns, "one entry per turn: {out:?}");
    out
}

fn at(map: &HashMap<String, u32>, path: &str) -> u32 {
    *map.get(path)
        .unwrap_or_else(|| panic!("no turn at {path}: {map:?}"))
}

#[test]
fn a_chain_counts_down_to_its_last_turn() {
    let w = waiting(
        "  - {agent: lead, receive: Plan.}\n  - {agent: critic, receive: Critique.}\n  - {agent: lead, receive: Revise.}\n",
    );
    assert_eq!(
        (at(&w, "steps[0]"), at(&w, "steps[1]"), at(&w, "steps[2]")),
        (2, 1, 0)
    );
}

#[test]
fn a_fan_out_weighs_the_lead_by_its_forks_and_the_join() {
    let w = waiting(
        "  - {agent: lead, receive: Split the work.}
  - parallel:
      - {agent: lead, dialog: a, fork_from: main, receive: Part A.}
      - {agent: lead, dialog: b, fork_from: main, receive: Part B.}
      - {agent: lead, dialog: c, fork_from: main, receive: Part C.}
  - {agent: lead, receive: Merge.}
",
    );
    assert_eq!(
        at(&w, "steps[0]"),
        4,
        "three forks and the join start from its answer"
    );
    for branch in 0..3 {
        assert_eq!(
            at(&w, &format!("steps[1].parallel[{branch}]")),
            1,
            "the join waits"
        );
    }
    assert_eq!(at(&w, "steps[2]"), 0);
}

#[test]
fn nested_forks_count_every_turn_below_them() {
    let w = waiting(
        "  - {agent: lead, receive: Root.}
  - parallel:
      - steps:
          - {agent: lead, dialog: a, fork_from: main, receive: A.}
          - parallel:
              - {agent: lead, dialog: a1, fork_from: a, receive: A1.}
              - {agent: lead, dialog: a2, fork_from: a, receive: A2.}
          - {agent: lead, dialog: a, receive: Merge A.}
      - {agent: critic, receive: Review.}
  - {agent: lead, receive: Merge all.}
",
    );
    assert_eq!(at(&w, "steps[0]"), 6);
    // A: its two forks, its merge, and the final merge.
    assert_eq!(at(&w, "steps[1].parallel[0].steps[0]"), 4);
    assert_eq!(at(&w, "steps[1].parallel[0].steps[1].parallel[0]"), 2);
    assert_eq!(at(&w, "steps[1].parallel[0].steps[1].parallel[1]"), 2);
    assert_eq!(at(&w, "steps[1].parallel[0].steps[2]"), 1);
    // The critic's branch does not wait for the other branch; only the final merge waits for it.
    assert_eq!(at(&w, "steps[1].parallel[1]"), 1);
    assert_eq!(at(&w, "steps[2]"), 0);
}

#[test]
fn parallel_sequences_count_their_own_later_turns_and_what_follows_the_group() {
    let w = waiting(
        "  - parallel:
      - steps:
          - {agent: lead, receive: One.}
          - {agent: lead, receive: Two.}
          - {agent: lead, receive: Three.}
      - steps:
          - {agent: critic, receive: Uno.}
  - {agent: lead, dialog: end, receive: Done.}
  - {agent: lead, dialog: end, receive: Really done.}
",
    );
    assert_eq!(at(&w, "steps[0].parallel[0].steps[0]"), 4);
    assert_eq!(at(&w, "steps[0].parallel[0].steps[1]"), 3);
    assert_eq!(at(&w, "steps[0].parallel[0].steps[2]"), 2);
    assert_eq!(at(&w, "steps[0].parallel[1].steps[0]"), 2);
    assert_eq!((at(&w, "steps[1]"), at(&w, "steps[2]")), (1, 0));
}
