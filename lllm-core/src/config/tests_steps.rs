use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

const AGENTS: &str = "global: {model_name: m}\nagent_configs:\n  - {name: planner, system_prompt: p}\n  - {name: critic, system_prompt: c}\n";

fn env(_: &str) -> Option<String> {
    None
}

fn parse(text: &str) -> Result<TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &env)
}

fn err(steps: &str) -> String {
    match parse(&format!("{AGENTS}{steps}")) {
        Ok(spec) => panic!("expected an error for {steps:?}, got {:?}", spec.steps()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_issue_example_loads_with_nested_branches() {
    let text = format!(
        "{AGENTS}steps:
  - agent: planner
    receive: \"Plan: {{{{ input }}}}\"
    save: plan
  - agent: planner
    dialog: retry
    fork_from: main
    receive: Find the weakest point of that plan.
    save: critique
  - parallel:
      - {{agent: planner, dialog: a, fork_from: main, receive: Do part A of the plan., save: a}}
      - {{agent: planner, dialog: b, fork_from: main, receive: Do part B of the plan., save: b}}
      - {{agent: critic, receive: \"Rate this plan: {{{{ plan }}}}\", save: rating}}
      - steps:
          - {{agent: planner, dialog: c, fork_from: main, receive: Draft part C., save: c_draft}}
          - {{agent: planner, dialog: c, receive: Now polish part C., save: c}}
output: \"{{{{ plan }}}}\\n{{{{ critique }}}}\"
"
    );
    let spec = parse(&text).expect("valid");
    assert_eq!(spec.tactic_type(), STEPS_TACTIC);
    assert_eq!(spec.steps().len(), 3);
    let Step::Parallel { branches, .. } = &spec.steps()[2] else {
        panic!("third step is parallel");
    };
    assert_eq!(branches.len(), 4);
    assert!(matches!(&branches[3], Branch::Sequence { steps, .. } if steps.len() == 2));
    let Step::Turn(first) = &spec.steps()[0] else {
        panic!("first step is a turn");
    };
    assert_eq!(
        (first.dialog.as_str(), first.save.as_deref()),
        ("main", Some("plan"))
    );
    assert_eq!(spec.steps().iter().flat_map(Step::turns).count(), 7);
}

#[test]
fn each_invalid_step_is_reported_at_its_line() {
    let cases = [
        (
            "steps:\n  - agent: planer\n",
            "t.yaml:6:12: steps[0].agent: unknown agent `planer` (did you mean `planner`?)",
        ),
        (
            "steps:\n  - {agent: planner, receive: hi}\n  - {agent: planner, dialog: b, fork_from: draft}\n",
            "t.yaml:7:44: steps[1].fork_from: dialog `draft` of agent `planner` does not exist yet",
        ),
        (
            "steps:\n  - agent: planner\n  - parallel:\n      - {agent: planner, receive: x}\n      - {agent: planner, receive: y}\n",
            "t.yaml:9:9: steps[1].parallel[1]: dialog `main` of agent `planner` is also used by the parallel branch step at steps[1].parallel[0]",
        ),
        (
            "steps:\n  - {agent: planner, receive: \"{{ plan }}\"}\n  - {agent: planner, save: plan}\n",
            "t.yaml:6:31: steps[0].receive: uses `plan` before it is saved",
        ),
        (
            "steps:\n  - {agent: planner, save: plan}\n  - {agent: critic, save: plan}\n",
            "t.yaml:7:27: steps[1].save: `plan` is already saved by the step at steps[0]",
        ),
        (
            "steps:\n  - parallel:\n      - {agent: planner, save: plan}\n      - {agent: critic, receive: \"{{ plan }}\"}\n",
            "t.yaml:8:34: steps[0].parallel[1].receive: uses `plan` before it is saved",
        ),
        (
            "steps:\n  - {agent: planner, recieve: hi}\n",
            "t.yaml:6:22: unknown key `recieve`",
        ),
        (
            "steps:\n  - agent: planner\n  - parallel:\n      - {agent: planner, dialog: a, fork_from: main}\n      - {agent: planner, receive: more}\n",
            "t.yaml:9:9: steps[1].parallel[1]: dialog `main` of agent `planner` is also used",
        ),
        (
            "steps:\n  - {agent: planner}\noutput: \"{{ later }}\"\nsteps_extra: 1\n",
            "t.yaml:8:1: unknown key `steps_extra`",
        ),
        (
            "steps:\n  - {agent: planner, receive: \"{{ x\"}\n",
            "t.yaml:6:31: steps[0].receive: not a valid template",
        ),
        (
            "tactic_type: chat\nsteps:\n  - {agent: planner}\n",
            "t.yaml:5:14: tactic_type: a `chat` tactic has no steps",
        ),
    ];
    let mut wrong = Vec::new();
    for (steps, expected) in cases {
        let error = err(steps);
        if !error.starts_with(expected) {
            wrong.push(format!("for {steps:?}\n got: {error}\nwant: {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn did_you_mean_for_step_keys_and_agents() {
    assert!(err("steps:\n  - {agent: planner, fork_form: main}\n")
        .contains("did you mean `fork_from`?"));
    assert!(err("steps:\n  - {agent: critc}\n").contains("did you mean `critic`?"));
}

#[test]
fn rust_tactics_keep_their_config() {
    let spec = parse(&format!(
        "{AGENTS}tactic_type: debate\nconfig: {{rounds: 3}}\n"
    ))
    .expect("valid");
    assert_eq!(spec.tactic_type(), "debate");
    assert_eq!(spec.config(), &serde_json::json!({"rounds": 3}));
    assert!(spec.steps().is_empty());
}

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("lllm-base-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("shared")).expect("dir");
        Dir(dir)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn load(path: &Path) -> Result<TacticSpec, ConfigError> {
    let bytes = std::fs::read(path).expect("read");
    parse_tactic(&bytes, path, &env)
}

#[test]
fn base_files_deep_merge_objects_and_replace_lists() {
    let dir = Dir::new("merge");
    dir.write(
        "shared/base.yaml",
        "global:\n  model_name: base-model\n  model_args: {max_tokens: 64, temperature: 0.5}\nagent_configs:\n  - {name: a, system_prompt: from base}\n  - {name: b, system_prompt: also base}\n",
    );
    let child = dir.write(
        "child.yaml",
        "base: shared/base.yaml\nglobal:\n  model_args: {temperature: 0.1}\nagent_configs:\n  - {name: c, system_prompt: from child}\n",
    );
    let spec = load(&child).expect("valid");
    assert_eq!(
        spec.agents().len(),
        1,
        "lists are replaced, not concatenated"
    );
    let c = &spec.agents()[0];
    assert_eq!(c.model(), "base-model");
    assert_eq!(
        c.model_args().endpoint.params.get("max_tokens"),
        Some(&Value::from(64))
    );
    assert_eq!(
        c.model_args().endpoint.params.get("temperature"),
        Some(&Value::from(0.1))
    );
}

#[test]
fn errors_point_into_the_file_that_holds_the_mistake() {
    let dir = Dir::new("where");
    dir.write(
        "shared/base.yaml",
        "global:\n  model_name: m\nagent_configs:\n  - name: a\n    system_prompt: s\nsteps:\n  - agent: nobody\n",
    );
    let child = dir.write("child.yaml", "base: shared/base.yaml\noutput: done\n");
    let error = load(&child).expect_err("unknown agent").to_string();
    assert!(
        error.contains("shared/base.yaml:7:12: steps[0].agent: unknown agent `nobody`"),
        "{error}"
    );

    let typo = dir.write("typo.yaml", "base: shared/base.yaml\nglobl: {}\n");
    let error = load(&typo).expect_err("typo").to_string();
    assert!(
        error.contains("typo.yaml:2:1: unknown key `globl`"),
        "{error}"
    );
    assert!(error.contains("did you mean `global`?"), "{error}");
}

#[test]
fn base_cycles_and_missing_bases_are_errors() {
    let dir = Dir::new("cycle");
    dir.write(
        "one.yaml",
        "base: two.yaml\nagent_configs: [{name: a, model_name: m, system_prompt: s}]\n",
    );
    let two = dir.write("two.yaml", "base: one.yaml\n");
    let error = load(&two).expect_err("cycle").to_string();
    assert!(error.contains("may not form a cycle"), "{error}");
    assert!(error.contains(":1:7: base:"), "{error}");
    let lonely = dir.write("lonely.yaml", "base: nowhere.yaml\n");
    let error = load(&lonely).expect_err("missing").to_string();
    assert!(
        error.contains("lonely.yaml:1:7: base: cannot read"),
        "{error}"
    );
    let own = dir.write("own.yaml", "base: own.yaml\n");
    assert!(load(&own).expect_err("self").to_string().contains("cycle"));
}

fn schema() -> crate::schema::Schema {
    crate::schema::Schema::compile(&tactic_schema()).expect("the schema compiles")
}

fn yaml_to_json(text: &str) -> Value {
    serde_saphyr::from_str(text.trim_start_matches('\u{feff}')).expect("yaml")
}

#[test]
fn the_schema_accepts_the_examples_and_rejects_misspellings() {
    let schema = schema();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).expect("examples") {
        let tactic = entry.expect("entry").path().join("tactic.yaml");
        if tactic.is_file() {
            let text = std::fs::read_to_string(&tactic).expect("read");
            schema
                .check(&yaml_to_json(&text))
                .unwrap_or_else(|e| panic!("{}: {e}", tactic.display()));
            checked += 1;
        }
    }
    assert_eq!(checked, 12, "every example tactic is checked");
    assert!(schema
        .check(&yaml_to_json("agent_configs: [{name: a, modle_args: {}}]"))
        .is_err());
    assert!(schema
        .check(&yaml_to_json(
            "agent_configs: [{name: a}]\nsteps: [{agent: a, recieve: x}]"
        ))
        .is_err());
    assert!(schema
        .check(&yaml_to_json("agent_configs: [{name: a}]\nsteps: [{parallel: [{steps: [{agent: a}]}, {agent: a, dialog: b}]}]"))
        .is_ok());
}

#[test]
fn relative_paths_in_a_base_file_are_relative_to_that_file() {
    let dir = Dir::new("relative");
    std::fs::create_dir_all(dir.0.join("shared/prompts/lead")).expect("dir");
    std::fs::write(dir.0.join("shared/prompts/lead/system.md"), "You lead.").expect("write");
    dir.write(
        "shared/base.yaml",
        "global:\n  model_name: m\n  system_prompt_path: lead/system\n  tools:\n    - {name: t, description: d, command: [python3, tool.py]}\nagent_configs:\n  - name: a\n",
    );
    // A base stays inside the top tactic's folder: the top file sits above the shared one.
    let child = dir.write(
        "child.yaml",
        "base: shared/base.yaml\nglobal: {model_args: {max_tokens: 5}}\n",
    );
    let spec = load(&child).expect("valid");
    assert_eq!(spec.agents()[0].system_prompt().template(), "You lead.");
    assert_eq!(
        spec.agents()[0].tools()[0].working_dir.as_deref(),
        Some(dir.0.join("shared").as_path())
    );
}
