//! `subagents:` and `max_background_tasks` in tactic files: defaults, merging from `global`, and
//! every refusal naming the field, line and column.

use std::path::Path;

use super::*;
use crate::{SubagentMode, DEFAULT_MAX_BACKGROUND_TASKS};

fn load(text: &str) -> Result<crate::TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None)
}

#[test]
fn subagents_load_with_their_defaults() {
    let spec = load(
        "agent_configs:\n  - name: lead\n    model_name: m\n    system_prompt: hi\n    max_background_tasks: 2\n    subagents:\n      - {name: researcher, mode: fork, background: true, description: digs}\n      - {name: critic, agent: judge, mode: isolated, background: false}\n  - {name: judge, model_name: m, system_prompt: judge}\n",
    )
    .expect("loads");
    let lead = &spec.agents()[0];
    assert_eq!(lead.max_background_tasks(), 2);
    let subs = lead.subagents();
    assert_eq!(subs.len(), 2);
    assert_eq!(
        (
            subs[0].name(),
            subs[0].agent(),
            subs[0].mode(),
            subs[0].background()
        ),
        ("researcher", "lead", SubagentMode::Fork, true)
    );
    assert_eq!(subs[0].description(), Some("digs"));
    assert_eq!(
        (subs[1].agent(), subs[1].mode(), subs[1].background()),
        ("judge", SubagentMode::Isolated, false)
    );
    let judge = &spec.agents()[1];
    assert!(judge.subagents().is_empty());
    assert_eq!(judge.max_background_tasks(), DEFAULT_MAX_BACKGROUND_TASKS);
}

#[test]
fn global_subagents_reach_every_agent_as_itself() {
    let spec = load(
        "global:\n  model_name: m\n  system_prompt: hi\n  subagents: [{name: helper, mode: fork, background: true}]\nagent_configs:\n  - {name: a}\n  - {name: b, subagents: []}\n",
    )
    .expect("loads");
    assert_eq!(spec.agents()[0].subagents()[0].agent(), "a");
    assert!(spec.agents()[1].subagents().is_empty());
}

#[test]
fn bad_subagents_name_the_field_line_and_column() {
    let head = "agent_configs:\n  - name: lead\n    model_name: m\n    system_prompt: hi\n";
    for (tail, field, words, line) in [
        (
            "    subagents:\n      - {name: r, agent: nobody, mode: fork, background: true}\n",
            "subagents[0].agent",
            "unknown agent `nobody`, expected one of `lead`",
            6,
        ),
        (
            "    subagents:\n      - {name: r, mode: fork, background: true}\n      - {name: r, mode: isolated, background: true}\n",
            "subagents[1].name",
            "subagent names must be unique",
            7,
        ),
        (
            "    tools:\n      - {name: task_start, description: x, command: [echo]}\n    subagents:\n      - {name: r, mode: fork, background: true}\n",
            "tools[0].name",
            "name of a task tool",
            6,
        ),
        (
            "    subagents:\n      - {name: 'has space', mode: fork, background: true}\n",
            "subagents[0].name",
            "may only contain",
            6,
        ),
        (
            "    max_background_tasks: 0\n",
            "max_background_tasks",
            "from 1 to 64",
            5,
        ),
    ] {
        let error = load(&format!("{head}{tail}")).expect_err(field);
        let shown = error.to_string();
        assert!(shown.contains(field), "{shown}");
        assert!(shown.contains(words), "{shown}");
        assert_eq!(error.position().map(|p| p.line), Some(line), "{shown}");
        assert!(error.position().is_some_and(|p| p.column > 0), "{shown}");
    }
}

#[test]
fn unknown_keys_and_modes_of_a_subagent_are_refused() {
    let head = "agent_configs:\n  - name: lead\n    model_name: m\n    system_prompt: hi\n    subagents:\n";
    let typo = load(&format!(
        "{head}      - {{name: r, mode: fork, background: true, agnet: lead}}\n"
    ))
    .expect_err("unknown key");
    assert!(typo.to_string().contains("agnet"), "{typo}");
    assert_eq!(typo.position().map(|p| p.line), Some(6), "{typo}");
    let mode = load(&format!(
        "{head}      - {{name: r, mode: copy, background: true}}\n"
    ))
    .expect_err("unknown mode");
    assert!(mode.to_string().contains("copy"), "{mode}");
    let missing = load(&format!("{head}      - {{name: r, background: true}}\n"))
        .expect_err("mode is required");
    assert!(missing.to_string().contains("mode"), "{missing}");
}

#[test]
fn the_schema_describes_subagents() {
    let schema = tactic_schema().to_string();
    for words in [
        "max_background_tasks",
        "Subagent",
        "isolated",
        "an agent as a tool",
    ] {
        assert!(schema.contains(words), "{words}");
    }
}
