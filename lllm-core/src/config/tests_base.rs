//! Every class of error found after merging points at the file, line and column that hold the
//! mistake, through a two-level `base:` chain (leaf → mid → root).

use std::path::{Path, PathBuf};

use super::*;

struct Chain(PathBuf);

impl Chain {
    /// Writes root.yaml, mid.yaml (base: root.yaml) and leaf.yaml (base: mid.yaml).
    fn new(name: &str, root: &str, mid: &str, leaf: &str) -> Chain {
        let dir = std::env::temp_dir().join(format!("lllm-chain-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("root.yaml"), root).expect("write");
        std::fs::write(dir.join("mid.yaml"), format!("base: root.yaml\n{mid}")).expect("write");
        std::fs::write(dir.join("leaf.yaml"), format!("base: mid.yaml\n{leaf}")).expect("write");
        Chain(dir)
    }

    fn error(&self) -> ConfigError {
        let leaf = self.0.join("leaf.yaml");
        let bytes = std::fs::read(&leaf).expect("read");
        match parse_tactic(&bytes, &leaf, &|_| None) {
            Ok(spec) => panic!("expected an error, got {spec:?}"),
            Err(e) => e,
        }
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

const ROOT: &str = "global:\n  model_name: m\n  system_prompt: s\n";
const MID: &str = "agent_configs:\n  - name: a\n";

fn assert_at(error: &ConfigError, file: &str, line: usize, column: usize) {
    assert!(
        error.file().ends_with(file),
        "expected the error in {file}, got {error}"
    );
    assert_eq!(error.position(), Some(Position { line, column }), "{error}");
}

#[test]
fn an_unknown_key_in_the_root_file_points_into_it() {
    let chain = Chain::new(
        "key",
        "global:\n  model_name: m\n  modle_args: {}\n",
        MID,
        "",
    );
    let error = chain.error();
    assert_at(&error, "root.yaml", 3, 3);
    assert!(
        matches!(
            error.kind(),
            ConfigErrorKind::UnknownKey {
                suggestion: Some("model_args"),
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn a_wrong_type_in_the_middle_file_points_into_it() {
    let mid = "agent_configs:\n  - name: a\n    max_tool_rounds: many\n";
    let error = Chain::new("type", ROOT, mid, "").error();
    assert_at(&error, "mid.yaml", 4, 22);
    assert!(
        error.to_string().contains("expected a whole number"),
        "{error}"
    );
}

#[test]
fn a_hint_the_base_profile_cannot_send_points_at_the_hint() {
    // The profile comes from the root file; the priority it cannot send is written in the leaf.
    let root =
        "global:\n  model_name: m\n  system_prompt: s\n  inference_hints: {profile: openai}\n";
    let leaf = "global:\n  inference_hints:\n    priority: 3\n";
    let error = Chain::new("hint", root, MID, leaf).error();
    assert_at(&error, "leaf.yaml", 4, 15);
    assert!(matches!(error.kind(), ConfigErrorKind::Hints(_)), "{error}");
}

#[test]
fn an_unknown_agent_in_a_step_points_at_the_step() {
    let mid = "agent_configs:\n  - name: a\nsteps:\n  - agent: b\n";
    let error = Chain::new("agent", ROOT, mid, "output: done\n").error();
    assert_at(&error, "mid.yaml", 5, 12);
    assert_eq!(error.field(), Some("steps[0].agent"));
}

#[test]
fn a_fork_from_a_dialog_that_does_not_exist_yet_points_at_fork_from() {
    let leaf = "steps:\n  - agent: a\n  - {agent: a, dialog: x, fork_from: y}\n";
    let error = Chain::new("fork", ROOT, MID, leaf).error();
    assert_at(&error, "leaf.yaml", 4, 38);
    assert!(
        matches!(
            error.kind(),
            ConfigErrorKind::Steps(StepsError::ForkFromMissing { .. })
        ),
        "{error}"
    );
}

#[test]
fn a_duplicate_tool_name_points_at_the_second_and_names_the_first() {
    let root = "global:\n  model_name: m\n  system_prompt: s\n  tools:\n    - {name: w, description: d, command: [wc]}\n    - {name: w, description: e, command: [wc]}\n";
    let error = Chain::new("tool", root, MID, "").error();
    assert_at(&error, "root.yaml", 6, 14);
    let ConfigErrorKind::Duplicate { first, .. } = error.kind() else {
        panic!("{error}");
    };
    assert!(first.file().ends_with("root.yaml"), "{error}");
    assert_eq!(
        first.position(),
        Some(Position {
            line: 5,
            column: 14
        })
    );
}

#[test]
fn priority_as_a_parameter_and_as_a_hint_is_refused_naming_both_places() {
    let root = "global:\n  model_name: m\n  system_prompt: s\n  model_args: {priority: 1}\n";
    let leaf = "agent_configs:\n  - name: a\n    inference_hints: {profile: vllm, priority: 5}\n";
    let error = Chain::new("priority", root, MID, leaf).error();
    assert_at(&error, "root.yaml", 4, 16);
    let ConfigErrorKind::Conflict {
        other, other_field, ..
    } = error.kind()
    else {
        panic!("{error}");
    };
    assert_eq!(other_field, "inference_hints.priority");
    assert!(other.file().ends_with("leaf.yaml"), "{error}");
    assert_eq!(
        other.position(),
        Some(Position {
            line: 4,
            column: 48
        })
    );
    let message = error.to_string();
    assert!(message.contains("leaf.yaml:4:48"), "{message}");
}

#[test]
fn cache_salt_as_a_parameter_and_as_a_hint_is_refused() {
    let leaf = "agent_configs:\n  - name: a\n    model_args: {cache_salt: x}\n    inference_hints: {profile: dynamo, cache_salt: y}\n";
    let error = Chain::new("salt", ROOT, MID, leaf).error();
    assert_at(&error, "leaf.yaml", 4, 18);
    assert!(
        matches!(error.kind(), ConfigErrorKind::Conflict { .. }),
        "{error}"
    );
}

#[test]
fn one_meaning_only_applies_when_both_are_set() {
    let leaf = "agent_configs:\n  - name: a\n    model_args: {priority: 1}\n";
    let chain = Chain::new("one", ROOT, MID, leaf);
    let leaf = chain.0.join("leaf.yaml");
    let bytes = std::fs::read(&leaf).expect("read");
    let spec = parse_tactic(&bytes, &leaf, &|_| None).expect("a parameter alone is fine");
    assert_eq!(
        spec.agents()[0]
            .model_args()
            .endpoint
            .params
            .get("priority"),
        Some(&serde_json::json!(1))
    );
}

#[test]
fn a_byte_order_mark_is_accepted_and_positions_stay_right() {
    let text = "\u{feff}agent_configs: [{name: a, model_name: m, system_prompt: s}]\n";
    let spec = parse_tactic(text.as_bytes(), Path::new("bom.yaml"), &|_| None).expect("BOM");
    assert_eq!(spec.agents()[0].name(), "a");
    let text = "\u{feff}agent_configs: [{name: a}]\nglobl: {}\n";
    let error = parse_tactic(text.as_bytes(), Path::new("bom.yaml"), &|_| None).expect_err("typo");
    assert_eq!(error.position(), Some(Position { line: 2, column: 1 }));
}

#[test]
fn the_python_names_of_the_retry_knobs_are_accepted_and_both_spellings_refused() {
    let text = "agent_configs: [{name: a, model_name: m, system_prompt: s, max_exception_retry: 1, max_interrupt_steps: 2, max_llm_recall: 4}]\n";
    let spec = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect("aliases");
    let agent = &spec.agents()[0];
    assert_eq!(
        (
            agent.max_answer_retries(),
            agent.max_tool_rounds(),
            agent.max_call_retries()
        ),
        (1, 2, 4)
    );
    let text = "agent_configs: [{name: a, model_name: m, system_prompt: s, max_llm_recall: 1, max_call_retries: 2}]\n";
    let error = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None).expect_err("both");
    assert!(error.to_string().contains("max_call_retries"), "{error}");
}

#[test]
fn a_section_that_is_not_a_mapping_in_a_base_is_not_hidden_by_a_merge() {
    // The root writes `limits:` (then `global.context`) as a list; the leaf writes it as a mapping.
    let root = "global:\n  model_name: m\n  system_prompt: s\nlimits: [2]\n";
    let leaf = "limits: {max_requests: 3}\n";
    let error = Chain::new("limits-list", root, MID, leaf).error();
    assert_at(&error, "root.yaml", 4, 9);
    assert!(
        matches!(
            error.kind(),
            ConfigErrorKind::NotAMapping {
                found: "a list",
                ..
            }
        ),
        "{error}"
    );
    let leaf = "agent_configs:\n  - {name: a, context: {window: 9}}\n";
    let root = "global:\n  model_name: m\n  system_prompt: s\n  context: [1]\n";
    let error = Chain::new("context-list", root, "", leaf).error();
    assert_at(&error, "root.yaml", 4, 12);
    assert_eq!(
        error.field(),
        Some("agent_configs[0] (a).context"),
        "{error}"
    );
}
