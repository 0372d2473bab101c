//! Hostile files: every file a tactic names is contained, typed and bounded, and every value the run
//! would refuse is refused at load time, at its position, without showing a secret.

use std::path::{Path, PathBuf};

use super::*;

/// A fresh folder, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("lllm-files-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).expect("dir");
        Dir(dir.canonicalize().expect("canonical"))
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, text).expect("write");
        path
    }

    fn load(&self, name: &str) -> Result<TacticSpec, ConfigError> {
        TacticLoader::new().env(|_| None).load(&self.0.join(name))
    }

    /// The error of loading `name`, with its text.
    fn error(&self, name: &str) -> (ConfigError, String) {
        match self.load(name) {
            Ok(spec) => panic!("expected an error, got {spec:?}"),
            Err(e) => {
                let text = crate::full_message(&e);
                (e, text)
            }
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

const AGENT: &str = "agent_configs:\n  - name: a\n    model_name: m\n";

fn at(error: &ConfigError, line: usize, column: usize) {
    assert_eq!(error.position(), Some(Position { line, column }), "{error}");
}

#[cfg(unix)]
#[test]
fn a_prompt_linked_out_of_prompts_is_refused_at_its_key() {
    let dir = Dir::new("prompt-link");
    std::fs::create_dir_all(dir.0.join("prompts")).expect("dir");
    std::os::unix::fs::symlink("/etc/passwd", dir.0.join("prompts/leak.md")).expect("link");
    dir.write("t.yaml", &format!("{AGENT}    system_prompt_path: leak\n"));
    let (error, text) = dir.error("t.yaml");
    at(&error, 4, 25);
    assert!(
        text.contains("outside") && text.contains("prompts/"),
        "{text}"
    );
    assert!(!text.contains("root:x:0"), "{text}");
    // A link that stays inside prompts/ is fine.
    dir.write("prompts/real.md", "You help.");
    std::os::unix::fs::symlink(
        dir.0.join("prompts/real.md"),
        dir.0.join("prompts/alias.md"),
    )
    .expect("link");
    dir.write(
        "ok.yaml",
        &format!("{AGENT}    system_prompt_path: alias\n"),
    );
    let spec = dir.load("ok.yaml").expect("inside is fine");
    assert_eq!(spec.agents()[0].system_prompt().template(), "You help.");
}

#[cfg(unix)]
#[test]
fn a_prompts_folder_linked_elsewhere_is_refused() {
    let dir = Dir::new("prompts-link");
    std::os::unix::fs::symlink("/etc", dir.0.join("prompts")).expect("link");
    dir.write(
        "t.yaml",
        &format!("{AGENT}    system_prompt_path: passwd\n"),
    );
    let (error, text) = dir.error("t.yaml");
    at(&error, 4, 25);
    assert!(text.contains("outside"), "{text}");
}

#[test]
fn a_prompt_that_is_a_directory_is_not_read() {
    let dir = Dir::new("prompt-dir");
    std::fs::create_dir_all(dir.0.join("prompts/sub.md")).expect("dir");
    dir.write(
        "t.yaml",
        &format!("{AGENT}    system_prompt_path: sub.md\n"),
    );
    let (error, text) = dir.error("t.yaml");
    at(&error, 4, 25);
    assert!(text.contains("a directory"), "{text}");
}

#[test]
fn bases_stay_inside_the_tactic_folder() {
    let dir = Dir::new("base-outside");
    dir.write("shared/base.yaml", AGENT);
    dir.write("team/t.yaml", "base: ../shared/base.yaml\n");
    let (error, text) = dir.error("team/t.yaml");
    at(&error, 1, 7);
    assert_eq!(error.field(), Some("base"));
    assert!(text.contains("outside"), "{text}");
    dir.write("abs.yaml", "base: /etc/passwd\n");
    let (_, text) = dir.error("abs.yaml");
    assert!(
        text.contains("outside") && !text.contains("root:x"),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn special_files_are_never_opened_as_bases() {
    let dir = Dir::new("base-special");
    // A FIFO inside the folder: opening it would block for ever.
    let fifo = dir.0.join("pipe.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if made {
        dir.write("t.yaml", "base: pipe.yaml\n");
        let (error, text) = dir.error("t.yaml");
        at(&error, 1, 7);
        assert!(text.contains("named pipe"), "{text}");
    }
    std::fs::create_dir_all(dir.0.join("folder.yaml")).expect("dir");
    dir.write("d.yaml", "base: folder.yaml\n");
    let (_, text) = dir.error("d.yaml");
    assert!(text.contains("a directory"), "{text}");
    // A device linked into the folder is still a device.
    std::os::unix::fs::symlink("/dev/zero", dir.0.join("zero.yaml")).expect("link");
    dir.write("z.yaml", "base: zero.yaml\n");
    let (_, text) = dir.error("z.yaml");
    assert!(
        text.contains("outside") || text.contains("device"),
        "{text}"
    );
}

#[test]
fn every_file_is_held_to_the_size_limit() {
    let dir = Dir::new("size");
    let big = format!("{AGENT}    system_prompt: '{}'\n", "x".repeat(2000));
    dir.write("t.yaml", &big);
    let small = TacticLoader::new().env(|_| None).max_file_bytes(1000);
    let error = small.load(&dir.0.join("t.yaml")).expect_err("too large");
    assert!(
        matches!(error.kind(), ConfigErrorKind::TooLarge { limit: 1000 }),
        "{error}"
    );
    // The environment variable sets the default limit; the setter wins over it.
    let from_env = TacticLoader::new().env(|n| (n == MAX_FILE_BYTES_VAR).then(|| "1500".into()));
    let error = from_env.load(&dir.0.join("t.yaml")).expect_err("too large");
    assert!(error.to_string().contains("LLLM_MAX_FILE_BYTES"), "{error}");
    let bad = TacticLoader::new().env(|n| (n == MAX_FILE_BYTES_VAR).then(|| "lots".into()));
    let error = bad.load(&dir.0.join("t.yaml")).expect_err("not a number");
    assert!(
        matches!(error.kind(), ConfigErrorKind::Setting { .. }),
        "{error}"
    );
    assert!(TacticLoader::new()
        .env(|_| None)
        .load(&dir.0.join("t.yaml"))
        .is_ok());
    // Bases and prompts too.
    dir.write("prompts/long.md", &"y".repeat(3000));
    dir.write("p.yaml", &format!("{AGENT}    system_prompt_path: long\n"));
    let error = TacticLoader::new()
        .env(|_| None)
        .max_file_bytes(2500)
        .load(&dir.0.join("p.yaml"))
        .expect_err("prompt too large");
    at(&error, 4, 25);
    assert!(
        error.to_string().contains("more than 2500 bytes"),
        "{error}"
    );
    dir.write("b.yaml", "base: t.yaml\n");
    let error = small
        .load(&dir.0.join("b.yaml"))
        .expect_err("base too large");
    at(&error, 1, 7);
    // Together: two files under the per-file limit, over the total.
    let error = TacticLoader::new()
        .env(|_| None)
        .max_total_bytes(2070)
        .load(&dir.0.join("b.yaml"))
        .expect_err("together too large");
    assert!(
        matches!(error.kind(), ConfigErrorKind::TooLargeTogether { .. }),
        "{error}"
    );
}

#[test]
fn a_long_base_chain_stops_at_the_limit() {
    let dir = Dir::new("chain");
    for i in 0..(MAX_BASE_DEPTH + 5) {
        dir.write(&format!("b{i}.yaml"), &format!("base: b{}.yaml\n", i + 1));
    }
    dir.write(&format!("b{}.yaml", MAX_BASE_DEPTH + 5), AGENT);
    let (error, _) = dir.error("b0.yaml");
    assert!(
        matches!(error.kind(), ConfigErrorKind::BaseTooDeep { .. }),
        "{error}"
    );
    // Within the limit, a chain loads.
    let spec = dir
        .load(&format!("b{}.yaml", 5 + 5))
        .map(|s| s.agents().len());
    assert!(matches!(spec, Err(_) | Ok(1)));
}

#[test]
fn templates_that_never_finish_are_refused_at_load() {
    let bomb = "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";
    let dir = Dir::new("fuel");
    dir.write("t.yaml", &format!("{AGENT}    system_prompt: '{bomb}'\n"));
    let started = std::time::Instant::now();
    let (error, text) = dir.error("t.yaml");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    at(&error, 4, 20);
    assert!(
        text.contains("too much work") && text.contains("a.system_prompt"),
        "{text}"
    );
    // In a prompt file, in a step and in the output.
    dir.write("prompts/bomb.md", bomb);
    dir.write("f.yaml", &format!("{AGENT}    system_prompt_path: bomb\n"));
    let (error, text) = dir.error("f.yaml");
    at(&error, 4, 25);
    assert!(text.contains("prompt `bomb`"), "{text}");
    let steps =
        format!("{AGENT}    system_prompt: hi\nsteps:\n  - agent: a\n    receive: '{bomb}'\n");
    dir.write("s.yaml", &steps);
    let (error, _) = dir.error("s.yaml");
    assert_eq!(error.field(), Some("steps[0].receive"));
    at(&error, 7, 14);
    // Output too large.
    let wide = "{% for a in range(100) %}{{ 'x' * 1000000 }}{% endfor %}";
    dir.write("w.yaml", &format!("{AGENT}    system_prompt: \"{wide}\"\n"));
    let (_, text) = dir.error("w.yaml");
    assert!(text.contains("renders to more than"), "{text}");
}

#[test]
fn templates_using_run_time_variables_still_load() {
    let dir = Dir::new("vars");
    let text = AGENT.to_owned()
        + "    system_prompt: 'You help {{ user }} with {{ topic | upper }}{% for x in items %}{{ x }}{% endfor %}'\n"
        + "steps:\n  - agent: a\n    receive: '{{ input }} {{ extra.field }}'\n";
    dir.write("t.yaml", &text);
    dir.load("t.yaml")
        .expect("variables are supplied at run time");
}

#[test]
fn api_base_must_be_an_http_url_and_is_never_shown() {
    for (base, secret) in [
        ("http://user:hunter2@bad host/v1", "hunter2"),
        ("ftp://user:hunter3@example.com/v1", "hunter3"),
        ("http://:hunter4@/v1", "hunter4"),
        ("http://example.com/v1#frag?key=hunter5", "hunter5"),
    ] {
        let yaml =
            format!("{AGENT}    system_prompt: hi\n    model_args: {{api_base: \"{base}\"}}\n");
        let error = parse_tactic(yaml.as_bytes(), Path::new("t.yaml"), &|_| None).expect_err(base);
        let text = crate::full_message(&error);
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains("model_args.api_base"), "{text}");
        at(&error, 5, 18);
    }
    for good in ["http://127.0.0.1:8000/v1", "https://api.example.com/v1?x=1"] {
        let yaml =
            format!("{AGENT}    system_prompt: hi\n    model_args: {{api_base: \"{good}\"}}\n");
        parse_tactic(yaml.as_bytes(), Path::new("t.yaml"), &|_| None).expect(good);
    }
}

#[test]
fn an_api_key_that_cannot_be_sent_is_refused_without_showing_it() {
    for key in ["sk-hunter2\\x01x", "sk-hunter2\\nx"] {
        let yaml =
            format!("{AGENT}    system_prompt: hi\n    model_args: {{api_key: \"{key}\"}}\n");
        let error = parse_tactic(yaml.as_bytes(), Path::new("t.yaml"), &|_| None).expect_err(key);
        let text = crate::full_message(&error);
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("model_args.api_key"), "{text}");
        at(&error, 5, 18);
    }
    // From the environment too, and a malformed reference does not quote it.
    let yaml = format!("{AGENT}    system_prompt: hi\n    model_args: {{api_key: \"${{KEY}}\"}}\n");
    let error = parse_tactic(yaml.as_bytes(), Path::new("t.yaml"), &|name| {
        (name == "KEY").then(|| "hunter2\r\n".into())
    })
    .expect_err("control character");
    assert!(!crate::full_message(&error).contains("hunter2"));
    let yaml =
        format!("{AGENT}    system_prompt: hi\n    model_args: {{api_key: \"${{hunter2\"}}\n");
    let error =
        parse_tactic(yaml.as_bytes(), Path::new("t.yaml"), &|_| None).expect_err("malformed");
    assert!(!crate::full_message(&error).contains("hunter2"), "{error}");
}

#[test]
fn a_command_tool_program_must_exist_and_be_executable() {
    let dir = Dir::new("program");
    let tool = |command: &str| {
        format!("{AGENT}    system_prompt: hi\n    tools:\n      - name: t\n        description: d\n        command: {command}\n")
    };
    dir.write("missing.yaml", &tool("[no-such-program-lllm]"));
    let (error, text) = dir.error("missing.yaml");
    at(&error, 8, 18);
    assert!(
        text.contains("tools[0].command[0]") && text.contains("PATH"),
        "{text}"
    );
    dir.write("script.txt", "not executable");
    dir.write("noexec.yaml", &tool("[./script.txt]"));
    let (_, text) = dir.error("noexec.yaml");
    assert!(text.contains("not executable"), "{text}");
    dir.write("rel.yaml", &tool("[./nothing-here]"));
    let (_, text) = dir.error("rel.yaml");
    assert!(text.contains("does not exist"), "{text}");
    // On PATH, and an absolute path.
    dir.write("sh.yaml", &tool("[sh, -c, 'echo hi']"));
    dir.load("sh.yaml").expect("sh is on PATH");
    dir.write("abs.yaml", &tool("[/bin/sh]"));
    dir.load("abs.yaml").expect("absolute path");
    // Relative to the folder of the file that declares the tool.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.write("bin/run.sh", "#!/bin/sh\necho hi\n");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        dir.write("ok.yaml", &tool("[bin/run.sh]"));
        dir.load("ok.yaml")
            .expect("relative to the tactic's folder");
    }
    dir.write(
        "huge.yaml",
        &tool("[sh]\n        max_output_bytes: 18446744073709551615"),
    );
    let (error, _) = dir.error("huge.yaml");
    assert_eq!(
        error.field(),
        Some("agent_configs[0] (a).tools[0].max_output_bytes")
    );
}

#[test]
fn yaml_bombs_and_oddities_are_errors() {
    let lol = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    let bomb = format!("{AGENT}    system_prompt: hi\nconfig:\n{}", indent(lol));
    let deep = format!(
        "{AGENT}    system_prompt: hi\nconfig: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let deep_block = format!(
        "{AGENT}    system_prompt: hi\nconfig:\n{}",
        (0..200)
            .map(|i| format!("{}k:\n", " ".repeat(2 * i + 2)))
            .collect::<String>()
    );
    let long_key = format!(
        "{AGENT}    system_prompt: hi\n    {}: 1\n",
        "k".repeat(100_000)
    );
    let nul = format!("{AGENT}    system_prompt: \"a\\0b\"\n    model_name: \"\0\"\n");
    for (name, text) in [
        ("bomb", bomb),
        ("deep", deep),
        ("deep_block", deep_block),
        ("long_key", long_key),
        ("nul", nul),
    ] {
        let started = std::time::Instant::now();
        let result = parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{name}"
        );
        let error = result.expect_err(name);
        let message = error.to_string();
        assert!(message.starts_with("t.yaml"), "{name}: {message}");
        assert!(message.len() < 2000, "{name}: {}", &message[..200]);
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
