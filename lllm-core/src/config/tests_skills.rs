//! `skills:` in tactic files: folders beside the file that names them, `global`'s list replaced by
//! an agent's, and a bad skill an error naming the `skills:` key and the `SKILL.md`.

use std::path::PathBuf;

use super::*;

/// A fresh folder, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "lllm-config-skills-{name}-{}-{}",
            std::process::id(),
            crate::DialogId::new()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        Dir(dir)
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, text).expect("write");
    }

    fn skill(&self, folder: &str, name: &str) {
        let text = format!("---\nname: {name}\ndescription: Does {name}.\n---\nBody of {name}.\n");
        self.write(&format!("{folder}/{name}/SKILL.md"), &text);
    }

    fn load(&self) -> Result<TacticSpec, ConfigError> {
        TacticLoader::new()
            .env(|_| None)
            .load(&self.0.join("t.yaml"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

#[test]
fn skills_load_beside_the_tactic_and_an_agent_list_replaces_global() {
    let dir = Dir::new("merge");
    dir.skill("shared", "alpha");
    dir.skill("own", "beta");
    dir.write(
        "t.yaml",
        "global:\n  model_name: m\n  system_prompt: hi\n  skills: [shared]\nagent_configs:\n  - {name: a}\n  - {name: b, skills: [own]}\n  - {name: c, skills: []}\n",
    );
    let spec = dir.load().expect("loads");
    let names = |i: usize| -> Vec<String> {
        spec.agents()[i]
            .skills()
            .skills()
            .iter()
            .map(|s| s.name().to_owned())
            .collect()
    };
    assert_eq!(names(0), ["alpha"]);
    assert_eq!(names(1), ["beta"]);
    assert!(names(2).is_empty());
    assert_eq!(
        spec.agents()[0]
            .skills()
            .get("alpha")
            .expect("alpha")
            .body(),
        "Body of alpha.\n"
    );
}

#[test]
fn a_bad_skill_names_the_skills_key_and_its_skill_md() {
    let dir = Dir::new("bad");
    dir.write(
        "skills/broken/SKILL.md",
        "---\nname: other\ndescription: x\n---\nbody\n",
    );
    dir.write(
        "t.yaml",
        "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    skills: [skills]\n",
    );
    let error = dir.load().expect_err("refused");
    assert_eq!(
        error.position(),
        Some(Position {
            line: 5,
            column: 13
        }),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("agent_configs[0] (a).skills"), "{text}");
    assert!(text.contains("broken/SKILL.md:2:1"), "{text}");
    assert!(text.contains("not its folder's"), "{text}");
}

#[test]
fn a_missing_skills_folder_is_an_error() {
    let dir = Dir::new("missing");
    dir.write(
        "t.yaml",
        "agent_configs:\n  - {name: a, model_name: m, system_prompt: hi, skills: [nowhere]}\n",
    );
    let text = dir.load().expect_err("refused").to_string();
    assert!(text.contains("nowhere"), "{text}");
    assert!(text.contains("cannot read it"), "{text}");
}

#[test]
fn skills_must_be_a_list_of_folders() {
    let dir = Dir::new("type");
    dir.write(
        "t.yaml",
        "agent_configs:\n  - {name: a, model_name: m, system_prompt: hi, skills: 3}\n",
    );
    let error = dir.load().expect_err("refused");
    assert!(error.position().is_some(), "{error}");
}

#[test]
fn a_command_tool_may_not_take_a_skill_tools_name() {
    let dir = Dir::new("clash");
    dir.skill("skills", "alpha");
    dir.write(
        "t.yaml",
        "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    skills: [skills]\n    tools:\n      - {name: load_skill, description: x, command: [/bin/true]}\n",
    );
    let error = dir.load().expect_err("refused");
    assert_eq!(
        error.position(),
        Some(Position {
            line: 7,
            column: 16
        }),
        "{error}"
    );
    assert!(error.to_string().contains("tools[0].name"), "{error}");
    assert!(error.to_string().contains("skill tool"), "{error}");
}
