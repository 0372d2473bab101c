//! Skills through the real binary: `lllm check` validates the example's skills and `lllm tools`
//! lists them with the skill tools the model is offered.

use std::path::Path;

use serde_json::Value;

use crate::support::{arg, lllm};

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/skills/tactic.yaml")
}

#[test]
fn check_validates_the_skills_example() {
    let out = lllm(&["check", arg(&example())]).run_blocking();
    out.assert_clean(0, &[]);
    let stdout = out.stdout_text();
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert!(
        stdout.contains("writer (llama_cpp/SmolLM2-135M-Instruct, profile openai, 2 skill(s))"),
        "{stdout}"
    );
}

#[test]
fn tools_lists_each_agents_skills_and_the_skill_tools() {
    let out = lllm(&["tools", arg(&example()), "--json"]).run_blocking();
    out.assert_clean(0, &[]);
    let listing: Value = serde_json::from_str(&out.stdout_text()).expect("one JSON object");
    let writer = &listing["agents"][0];
    let tools: Vec<&str> = writer["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["load_skill", "read_skill_file"]);
    let skills = writer["skills"].as_array().expect("skills");
    let names: Vec<&str> = skills.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["changelog-style", "release-notes"]);
    assert_eq!(skills[0]["allowed_tools"], Value::Null);
    assert_eq!(skills[1]["allowed_tools"][0], "load_skill");
    assert!(skills[1]["dir"]
        .as_str()
        .is_some_and(|d| d.ends_with("examples/skills/skills/release-notes")));
    let text = lllm(&["tools", arg(&example())]).run_blocking();
    text.assert_clean(0, &[]);
    let shown = text.stdout_text();
    assert!(
        shown.contains("  skills (2):\n    changelog-style ("),
        "{shown}"
    );
    assert!(
        shown.contains("[allowed-tools: load_skill, read_skill_file]"),
        "{shown}"
    );
    assert!(
        shown.contains("      Writes release notes from a list of merged changes"),
        "{shown}"
    );
}
