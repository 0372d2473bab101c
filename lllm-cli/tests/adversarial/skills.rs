//! Hostile skill folders (issue 37): links out of the folder, a 100 MB `SKILL.md`, front matter that
//! is not YAML, 10,000 skills. `lllm check` and `lllm run --dry-run` refuse each with exit 2 and a
//! message naming the tactic's `skills:` key and the skill's file, within the time and memory bounds.

use std::path::Path;

use super::support::{arg, lllm, TempDir};

const TACTIC: &str =
    "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    skills: [skills]\n";

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: Does {name}.\n---\nBody.\n")
}

/// Both commands refuse the tactic in `dir`, each stderr holding every one of `messages`.
fn refused(dir: &TempDir, messages: &[&str]) {
    let tactic = dir.path("t.yaml");
    let mut expected = vec!["t.yaml:5:13", "agent_configs[0] (a).skills"];
    expected.extend_from_slice(messages);
    lllm(&["check", arg(&tactic)])
        .run_blocking()
        .assert_clean(2, &expected);
    lllm(&["run", arg(&tactic), "--dry-run", "--input", "hi"])
        .run_blocking()
        .assert_clean(2, &expected);
}

#[test]
fn a_skill_folder_linked_out_of_the_skills_folder_is_refused() {
    let dir = TempDir::new("skill-link-out");
    dir.write("t.yaml", TACTIC);
    let outside = TempDir::new("skill-link-target");
    outside.write("evil/SKILL.md", skill_md("evil"));
    std::fs::create_dir_all(dir.path("skills")).expect("skills");
    std::os::unix::fs::symlink(outside.path("evil"), dir.path("skills/evil")).expect("link");
    refused(&dir, &["skills/evil", "symbolic link"]);
}

#[test]
fn a_skill_md_linked_out_of_its_folder_is_refused() {
    let dir = TempDir::new("skill-md-link");
    dir.write("t.yaml", TACTIC);
    let secret = dir.write("secret.md", skill_md("leak"));
    std::fs::create_dir_all(dir.path("skills/leak")).expect("folder");
    std::os::unix::fs::symlink(&secret, dir.path("skills/leak/SKILL.md")).expect("link");
    refused(&dir, &["skills/leak/SKILL.md", "symbolic link"]);
}

#[test]
fn a_100_mb_skill_md_is_refused_without_being_read() {
    let dir = TempDir::new("skill-huge");
    dir.write("t.yaml", TACTIC);
    let file = dir.write("skills/huge/SKILL.md", skill_md("huge"));
    // Sparse: 100 MB on paper, nothing on disk; a reader that read it all would pass the memory
    // bound the runner checks.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_len(100 * 1024 * 1024))
        .expect("grow");
    refused(&dir, &["skills/huge/SKILL.md", "larger than 262144 bytes"]);
}

#[test]
fn front_matter_that_is_not_yaml_is_refused_at_its_line() {
    let dir = TempDir::new("skill-not-yaml");
    dir.write("t.yaml", TACTIC);
    dir.write(
        "skills/broken/SKILL.md",
        "---\nname: broken\ndescription: [unclosed\n---\nBody.\n",
    );
    refused(
        &dir,
        &["skills/broken/SKILL.md:3:", "front matter is not YAML"],
    );
}

fn many_skills(root: &Path, folders: usize, per_folder: usize) {
    for f in 0..folders {
        for s in 0..per_folder {
            let name = format!("s{f}-{s}");
            let folder = root.join(format!("skills{f}")).join(&name);
            std::fs::create_dir_all(&folder).expect("folder");
            std::fs::write(folder.join("SKILL.md"), skill_md(&name)).expect("SKILL.md");
        }
    }
}

#[test]
fn ten_thousand_skills_in_one_folder_are_refused_at_the_folder_bound() {
    let dir = TempDir::new("skill-10k");
    dir.write("t.yaml", TACTIC.replace("[skills]", "[skills0]"));
    many_skills(&dir.0, 1, 10_000);
    refused(&dir, &["skills0", "more than 1024 entries"]);
}

#[test]
fn ten_thousand_skills_across_folders_are_refused_at_the_skill_bound() {
    let dir = TempDir::new("skill-10k-spread");
    let folders: Vec<String> = (0..40).map(|f| format!("skills{f}")).collect();
    dir.write(
        "t.yaml",
        TACTIC.replace("[skills]", &format!("[{}]", folders.join(", "))),
    );
    many_skills(&dir.0, 40, 250);
    refused(
        &dir,
        &[
            "more than 256 skills",
            "the index every request carries is bounded",
        ],
    );
}
