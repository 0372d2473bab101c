use std::path::{Path, PathBuf};

use super::*;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "lllm-skills-{name}-{}-{}",
            std::process::id(),
            crate::DialogId::new()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        Dir(dir)
    }
    fn skill(&self, folder: &str, text: &str) -> PathBuf {
        let dir = self.0.join(folder);
        std::fs::create_dir_all(&dir).expect("skill dir");
        std::fs::write(dir.join("SKILL.md"), text).expect("SKILL.md");
        dir
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n{body}")
}

fn error(dir: &Path) -> SkillError {
    SkillSet::load(&[dir]).expect_err("refused")
}

#[test]
fn skills_load_in_name_order_and_the_index_has_no_body() {
    let dir = Dir::new("order");
    dir.skill("zeta", &skill_md("zeta", "Last one.", "Z body"));
    let alpha = dir.skill(
        "alpha",
        "---\nname: alpha\ndescription: First one.\nallowed-tools: Read, Bash(git:*)\nmetadata: {a: 1}\n---\n\nA body\n",
    );
    std::fs::write(dir.0.join("README.md"), "not a skill").expect("readme");
    std::fs::write(alpha.join("notes.txt"), "notes").expect("file");
    let set = SkillSet::load(&[&dir.0]).expect("loads");
    let names: Vec<&str> = set.skills().iter().map(Skill::name).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    let a = set.get("alpha").expect("alpha");
    assert_eq!(a.body(), "A body\n");
    assert_eq!(a.allowed_tools().expect("set"), ["Read", "Bash(git:*)"]);
    assert!(a.allows("Bash") && a.allows("Read") && !a.allows("Write"));
    assert!(set.get("zeta").expect("zeta").allows("anything"));
    let index = set.index();
    assert!(
        index.ends_with("\n- alpha: First one.\n- zeta: Last one."),
        "{index}"
    );
    assert!(!index.contains("body"));
    assert_eq!(index, SkillSet::load(&[&dir.0]).expect("again").index());
    assert_eq!(set.read_file("alpha", "notes.txt"), Ok("notes".to_owned()));
}

#[test]
fn bad_skills_are_refused_with_their_file_and_line() {
    let cases: [(&str, &str, &str, Option<usize>); 7] = [
        ("nofront", "# just markdown\n", "no front matter", Some(1)),
        (
            "unclosed",
            "---\nname: unclosed\n",
            "no front matter",
            Some(1),
        ),
        (
            "notyaml",
            "---\nname: notyaml\ndescription: [unclosed\n---\nbody",
            "not YAML",
            Some(3),
        ),
        ("list", "---\n- a\n- b\n---\n", "must be a mapping", Some(2)),
        (
            "noname",
            "---\ndescription: d\n---\n",
            "`name` is required",
            Some(2),
        ),
        (
            "nodesc",
            "---\nname: nodesc\n\ndescription: \"\"\n---\n",
            "`description` is required",
            Some(4),
        ),
        (
            "other",
            "---\nname: elsewhere\ndescription: d\n---\n",
            "is not its folder's",
            Some(2),
        ),
    ];
    for (folder, text, expected, line) in cases {
        let dir = Dir::new(folder);
        dir.skill(folder, text);
        let e = error(&dir.0);
        let shown = e.to_string();
        assert!(shown.contains(expected), "{folder}: {shown}");
        assert!(
            e.file.ends_with(format!("{folder}/SKILL.md")),
            "{folder}: {shown}"
        );
        assert_eq!(e.position.map(|p| p.0), line, "{folder}: {shown}");
    }
}

#[test]
fn duplicates_across_folders_name_both_files() {
    let (one, two) = (Dir::new("dup1"), Dir::new("dup2"));
    one.skill("same", &skill_md("same", "d", "b"));
    two.skill("same", &skill_md("same", "d", "b"));
    let e = SkillSet::load(&[&one.0, &two.0]).expect_err("duplicate");
    assert!(e.file.starts_with(&two.0), "{e}");
    assert!(e.to_string().contains(&one.0.display().to_string()), "{e}");
    assert!(e.to_string().contains("must be unique"), "{e}");
}

#[cfg(unix)]
#[test]
fn links_and_oversized_bodies_are_refused() {
    let outside = Dir::new("outside");
    std::fs::write(outside.0.join("secret.txt"), "secret").expect("secret");
    let real = outside.skill("real", &skill_md("real", "d", "b"));
    // A linked skill folder.
    let dir = Dir::new("links");
    std::os::unix::fs::symlink(&real, dir.0.join("real")).expect("link");
    assert!(error(&dir.0).to_string().contains("symbolic link"));
    // A linked SKILL.md.
    let dir = Dir::new("linkmd");
    std::fs::create_dir_all(dir.0.join("real")).expect("dir");
    std::os::unix::fs::symlink(real.join("SKILL.md"), dir.0.join("real/SKILL.md")).expect("link");
    assert!(error(&dir.0).to_string().contains("symbolic link"));
    // A body past the bound is not read whole.
    let dir = Dir::new("huge");
    let big = dir.skill("big", &skill_md("big", "d", ""));
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(big.join("SKILL.md"))
        .expect("open");
    file.set_len(100 * 1024 * 1024).expect("sparse 100 MB");
    let e = error(&dir.0);
    assert!(e.to_string().contains("larger than 262144 bytes"), "{e}");
}

#[cfg(unix)]
#[test]
fn read_skill_file_stays_inside_the_folder() {
    let outside = Dir::new("files-outside");
    std::fs::write(outside.0.join("secret.txt"), "secret").expect("secret");
    let dir = Dir::new("files");
    let skill = dir.skill("s", &skill_md("s", "d", "b"));
    std::fs::create_dir_all(skill.join("docs")).expect("docs");
    std::fs::write(skill.join("docs/a.md"), "A").expect("a");
    std::os::unix::fs::symlink(outside.0.join("secret.txt"), skill.join("out.txt")).expect("l");
    std::os::unix::fs::symlink(&outside.0, skill.join("outdir")).expect("l");
    std::os::unix::fs::symlink(skill.join("docs/a.md"), skill.join("in.txt")).expect("l");
    let fifo = skill.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::fs::write(
        skill.join("big.bin"),
        vec![b'x'; MAX_SKILL_FILE_BYTES as usize + 1],
    )
    .expect("big");
    let set = SkillSet::load(&[&dir.0]).expect("loads");
    assert_eq!(set.read_file("s", "docs/a.md"), Ok("A".to_owned()));
    assert_eq!(set.read_file("s", "./docs/a.md"), Ok("A".to_owned()));
    let refused = [
        (
            "../../files-outside/secret.txt",
            "leaves the skill's folder",
        ),
        ("/etc/passwd", "not a path relative"),
        ("out.txt", "symbolic link"),
        ("outdir/secret.txt", "symbolic link"),
        ("in.txt", "symbolic link"),
        ("docs", "a directory"),
        ("pipe", "a named pipe"),
        ("big.bin", "too large"),
        ("missing.md", "cannot be read"),
    ];
    for (path, why) in refused {
        let problem = set.read_file("s", path).expect_err(path);
        assert!(problem.contains(why), "{path}: {problem}");
        assert!(!problem.contains("secret\n"), "{path}");
    }
    assert!(set
        .read_file("nope", "a")
        .expect_err("unknown")
        .contains("the skills are: s"));
}

#[test]
fn too_many_skills_and_too_large_an_index_are_clear_errors() {
    let dir = Dir::new("many");
    for i in 0..=MAX_SKILLS {
        let name = format!("s{i:05}");
        dir.skill(&name, &skill_md(&name, "d", "b"));
    }
    let e = error(&dir.0);
    assert!(e.to_string().contains("more than 256 skills"), "{e}");
    let dir = Dir::new("wide");
    for i in 0..40 {
        let name = format!("w{i:02}");
        dir.skill(&name, &skill_md(&name, &"x".repeat(1000), "b"));
    }
    let e = error(&dir.0);
    assert!(e.to_string().contains("index would have"), "{e}");
}

#[test]
fn loaded_skills_are_the_load_calls_answered_without_error() {
    use crate::{Message, ToolCall};
    let call = |id: &str, name: &str| ToolCall {
        id: id.into(),
        name: LOAD_SKILL.into(),
        arguments: format!(r#"{{"name": "{name}"}}"#),
    };
    let mut asked = Message::assistant("");
    asked.tool_calls = vec![call("1", "a"), call("2", "b"), call("3", "a")];
    let messages = vec![
        Message::user("q"),
        asked,
        Message::tool("1", "A body"),
        Message::tool("2", "error: no skill `b`"),
        Message::tool("3", "A body"),
    ];
    assert_eq!(loaded_skills(&messages), ["a"]);
}
