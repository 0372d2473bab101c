//! Hostile tactic files and everything they name: symbolic links out of the tactic's folder, special
//! files, sizes, templates that never finish, URLs, headers and keys, tools, YAML bombs. Each bad file
//! is given to both `lllm check` and `lllm run --dry-run`: both must refuse it with exit 2 and a
//! message naming the file and the line and column (or the field), within the time and memory bounds,
//! without printing a secret.

use std::path::Path;

use super::support::{arg, lllm, TempDir};

const AGENT: &str = "agent_configs:\n  - name: a\n    model_name: m\n";

/// What a case sets up besides its files.
#[derive(Clone, Copy)]
enum Extra {
    None,
    /// A symbolic link (name, target).
    Link(&'static str, &'static str),
    /// A named pipe.
    Fifo(&'static str),
    /// A folder.
    Folder(&'static str),
    /// A file that is not executable, with this text.
    Plain(&'static str),
    /// `LLLM_MAX_FILE_BYTES`.
    Limit(&'static str),
}

struct Case {
    name: &'static str,
    files: Vec<(String, Vec<u8>)>,
    extra: Extra,
    /// The file given to lllm.
    tactic: &'static str,
    expect: Vec<&'static str>,
    secret: Option<&'static str>,
}

fn case(name: &'static str, tactic_text: impl Into<Vec<u8>>, expect: &[&'static str]) -> Case {
    Case {
        name,
        files: vec![("t.yaml".into(), tactic_text.into())],
        extra: Extra::None,
        tactic: "t.yaml",
        expect: expect.to_vec(),
        secret: None,
    }
}

impl Case {
    fn file(mut self, name: &str, text: impl Into<Vec<u8>>) -> Self {
        self.files.push((name.into(), text.into()));
        self
    }
    fn extra(mut self, extra: Extra) -> Self {
        self.extra = extra;
        self
    }
    fn secret(mut self, secret: &'static str) -> Self {
        self.secret = Some(secret);
        self
    }
    fn tactic(mut self, tactic: &'static str) -> Self {
        self.tactic = tactic;
        self
    }
}

fn agent(rest: &str) -> String {
    format!("{AGENT}{rest}")
}

fn tool(command: &str, more: &str) -> String {
    agent(&format!(
        "    system_prompt: hi\n    tools:\n      - name: t\n        description: d\n        command: {command}\n{more}"
    ))
}

const BOMB: &str =
    "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";

fn cases() -> Vec<Case> {
    let mut chain: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("c{i}.yaml"),
                format!("base: c{}.yaml\n", i + 1).into_bytes(),
            )
        })
        .collect();
    chain.push((
        "c40.yaml".into(),
        agent("    system_prompt: hi\n").into_bytes(),
    ));
    let lol = (0..8)
        .map(|i| {
            let item = if i == 0 {
                "x".to_owned()
            } else {
                format!("*l{}", i - 1)
            };
            format!("  k{i}: &l{i} [{}]\n", vec![item; 10].join(", "))
        })
        .collect::<String>();
    vec![
        // Symbolic links and paths out of the tactic's folder.
        case("prompt link to /etc/passwd", agent("    system_prompt_path: leak\n"), &["t.yaml:4:25", "outside"])
            .extra(Extra::Link("prompts/leak.md", "/etc/passwd"))
            .secret("root:x:0"),
        case("prompts folder linked to /etc", agent("    system_prompt_path: passwd\n"), &["t.yaml:4:25", "outside"])
            .extra(Extra::Link("prompts", "/etc"))
            .secret("root:x:0"),
        case("base linked out of the folder", "base: b.yaml\n", &["t.yaml:1:7", "base", "outside"])
            .extra(Extra::Link("b.yaml", "/etc/passwd")),
        case("base above the folder", "base: ../b.yaml\n", &["sub/t.yaml:1:7", "outside"])
            .tactic("sub/t.yaml")
            .file("sub/t.yaml", "base: ../b.yaml\n")
            .file("b.yaml", agent("    system_prompt: hi\n")),
        case("absolute base", "base: /etc/passwd\n", &["t.yaml:1:7", "outside"]).secret("root:x:0"),
        case("base /dev/stdin", "base: /dev/stdin\n", &["t.yaml:1:7", "outside"]),
        case("base /dev/zero", "base: /dev/zero\n", &["t.yaml:1:7", "outside"]),
        case("base linked to /dev/zero", "base: z.yaml\n", &["t.yaml:1:7"]).extra(Extra::Link("z.yaml", "/dev/zero")),
        case("prompt path with ..", agent("    system_prompt_path: ../t.yaml\n"), &["t.yaml:4:25", "inside prompts/"]),
        // Special files.
        case("base is a FIFO", "base: pipe.yaml\n", &["t.yaml:1:7", "named pipe"]).extra(Extra::Fifo("pipe.yaml")),
        case("base is a folder", "base: dir.yaml\n", &["t.yaml:1:7", "a directory"]).extra(Extra::Folder("dir.yaml")),
        case("prompt is a folder", agent("    system_prompt_path: p.md\n"), &["t.yaml:4:25", "a directory"])
            .extra(Extra::Folder("prompts/p.md")),
        case("tactic is a folder", "", &["d.yaml", "a directory"]).tactic("d.yaml").extra(Extra::Folder("d.yaml")),
        case("missing base", "base: nothing.yaml\n", &["t.yaml:1:7", "base"]),
        // Sizes.
        case("tactic over LLLM_MAX_FILE_BYTES", agent(&format!("    system_prompt: '{}'\n", "x".repeat(5000))), &["t.yaml", "more than 1000 bytes", "LLLM_MAX_FILE_BYTES"])
            .extra(Extra::Limit("1000")),
        case("prompt over LLLM_MAX_FILE_BYTES", agent("    system_prompt_path: big\n"), &["t.yaml:4:25", "more than 1000 bytes"])
            .file("prompts/big.md", "y".repeat(5000))
            .extra(Extra::Limit("1000")),
        case("base over LLLM_MAX_FILE_BYTES", "base: big.yaml\n", &["t.yaml:1:7", "more than 1000 bytes"])
            .file("big.yaml", agent(&format!("    system_prompt: '{}'\n", "x".repeat(5000))))
            .extra(Extra::Limit("1000")),
        case("LLLM_MAX_FILE_BYTES not a number", agent("    system_prompt: hi\n"), &["t.yaml", "LLLM_MAX_FILE_BYTES"])
            .extra(Extra::Limit("lots")),
        Case { files: chain, ..case("base chain of 40 files", "", &["c32.yaml:1:7", "longer than 32"]).tactic("c0.yaml") },
        // Templates.
        case("nested loops inline", agent(&format!("    system_prompt: '{BOMB}'\n")), &["t.yaml:4:20", "system_prompt", "too much work"]),
        case("nested loops in a prompt file", agent("    system_prompt_path: bomb\n"), &["t.yaml:4:25", "prompt `bomb`", "too much work"])
            .file("prompts/bomb.md", BOMB),
        case("nested loops in a step", agent(&format!("    system_prompt: hi\nsteps:\n  - agent: a\n    receive: '{BOMB}'\n")), &["t.yaml:7:14", "steps[0].receive", "too much work"]),
        case("nested loops in the output", agent(&format!("    system_prompt: hi\nsteps:\n  - agent: a\n    save: x\noutput: '{BOMB}'\n")), &["t.yaml:8:9", "output", "too much work"]),
        case("output too long", agent("    system_prompt: \"{% for a in range(100) %}{{ 'x' * 1000000 }}{% endfor %}\"\n"), &["t.yaml:4:20", "renders to more than"]),
        case("template syntax", agent("    system_prompt: '{{ x'\n"), &["t.yaml:4:20", "not a valid template"]),
        // URLs, headers and keys.
        case("api_base with a space and a password", agent("    system_prompt: hi\n    model_args: {api_base: \"http://user:hunter2@bad host/v1\"}\n"), &["t.yaml:5:18", "api_base"])
            .secret("hunter2"),
        case("api_base with a password in the path", agent("    system_prompt: hi\n    model_args: {api_base: \"ftp://user:pa/hunter2@h/v1\"}\n"), &["t.yaml:5:18", "api_base"])
            .secret("hunter2"),
        case("api_base without host", agent("    system_prompt: hi\n    model_args: {api_base: \"http://:8000/v1\"}\n"), &["t.yaml:5:18", "api_base"]),
        case("api_key with a control character", agent("    system_prompt: hi\n    model_args: {api_key: \"sk-hunter2\\x01\"}\n"), &["t.yaml:5:18", "api_key"])
            .secret("hunter2"),
        case("api_key with a newline", agent("    system_prompt: hi\n    model_args:\n      api_key: \"sk-hunter2\\r\\nx-evil: 1\"\n"), &["t.yaml:6:7", "api_key"])
            .secret("hunter2"),
        case("malformed reference in api_key", agent("    system_prompt: hi\n    model_args: {api_key: \"${hunter2\"}\n"), &["t.yaml:5:27", "api_key"])
            .secret("hunter2"),
        case("header with a newline", agent("    system_prompt: hi\n    model_args: {extra_headers: {x-a: \"1\\r\\nx-b: 2\"}}\n"), &["t.yaml:5:18", "extra_headers"]),
        // Tools.
        case("tool program missing", tool("[no-such-program-lllm]", ""), &["t.yaml:8:18", "command[0]", "PATH"]),
        case("tool program not executable", tool("[./script.sh]", ""), &["t.yaml:8:18", "not executable"])
            .extra(Extra::Plain("script.sh")),
        case("tool program is a folder", tool("[/tmp]", ""), &["t.yaml:8:18", "not a regular file"]),
        case("tool output limit of 2^64-1", tool("[sh]", "        max_output_bytes: 18446744073709551615\n"), &["t.yaml:9", "max_output_bytes"]),
        case("tool output limit of 0", tool("[sh]", "        max_output_bytes: 0\n"), &["t.yaml:9:27", "max_output_bytes"]),
        // Values of the wrong kind in `context:` and `limits:`: the field and what it allows, at the
        // value, never the parser's words; `.inf` and `.nan` in free JSON at their own column.
        case("context keep_last negative", agent("    system_prompt: hi\n    context: {window: 100, keep_last: -1}\n"), &["t.yaml:5:39", "context.keep_last", "0 to 10000", "not `-1`"]),
        case("context as a list", agent("    system_prompt: hi\n    context: [1, 2]\n"), &["t.yaml:5:14", "context", "must be a mapping of `window`", "not a list"]),
        case("context window .inf", agent("    system_prompt: hi\n    context: {window: .inf}\n"), &["t.yaml:5:23", "context.window", "context length in tokens", "not `.inf`"]),
        case("context compact_at .nan", agent("    system_prompt: hi\n    context: {window: 100, compact_at: .nan}\n"), &["t.yaml:5:40", "context.compact_at", "fraction", "not `.nan`"]),
        case("context session a list", agent("    system_prompt: hi\n    context: {window: 100, session: [keep]}\n"), &["t.yaml:5:37", "context.session", "`keep` or `rotate`"]),
        case("limits as a list", agent("    system_prompt: hi\nlimits: [1]\n"), &["t.yaml:5:9", "limits", "must be a mapping of `max_requests`", "not a list"]),
        case("limits max_seconds .inf", agent("    system_prompt: hi\nlimits: {max_seconds: .inf}\n"), &["t.yaml:5:23", "limits.max_seconds", "number of seconds", "not `.inf`"]),
        case("limits max_requests a mapping", agent("    system_prompt: hi\nlimits: {max_requests: {a: 1}}\n"), &["t.yaml:5:24", "limits.max_requests", "whole number", "not a mapping"]),
        case("model_args .nan", agent("    system_prompt: hi\n    model_args: {temperature: .nan}\n"), &["t.yaml:5:31", "`.nan` is not a number JSON can carry"]),
        case("extra_body .inf deep", agent("    system_prompt: hi\n    model_args: {extra_body: {a: [1, -.inf]}}\n"), &["t.yaml:5:38", "`-.inf` is not a number JSON can carry"]),
        // YAML bombs and oddities.
        case("alias bomb", agent(&format!("    system_prompt: hi\nconfig:\n{lol}")), &["t.yaml"]),
        case("deep flow nesting", agent(&format!("    system_prompt: hi\nconfig: {}{}\n", "[".repeat(20_000), "]".repeat(20_000))), &["t.yaml"]),
        case("huge key", agent(&format!("    system_prompt: hi\n    {}: 1\n", "k".repeat(1_000_000))), &["t.yaml:5:5"]),
        case("NUL byte", agent("    system_prompt: \"a\0b\"\n\0\n"), &["t.yaml"]),
        case("not UTF-8", b"agent_configs:\n  - name: \xff\xfe\n".to_vec(), &["t.yaml:2:11", "UTF-8"]),
        case("long line", agent(&format!("    system_prompt: hi\n    model_name: [{}]\n", "1,".repeat(400_000))), &["t.yaml:5"]),
    ]
}

fn set_up(dir: &TempDir, case: &Case) -> bool {
    for (name, bytes) in &case.files {
        dir.write(name, bytes);
    }
    match case.extra {
        Extra::None | Extra::Limit(_) => true,
        Extra::Link(name, target) => {
            let path = dir.path(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::os::unix::fs::symlink(target, path).is_ok()
        }
        Extra::Fifo(name) => std::process::Command::new("mkfifo")
            .arg(dir.path(name))
            .status()
            .is_ok_and(|s| s.success()),
        Extra::Folder(name) => std::fs::create_dir_all(dir.path(name)).is_ok(),
        Extra::Plain(name) => {
            dir.write(name, "#!/bin/sh\necho hi\n");
            true
        }
    }
}

#[test]
fn bad_files_are_refused_by_check_and_run_alike() {
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for case in &cases {
        let dir = TempDir::new("files");
        if !set_up(&dir, case) {
            continue; // mkfifo missing: nothing to test
        }
        let tactic = dir.path(case.tactic);
        for args in [
            vec!["check", arg(&tactic)],
            vec!["run", arg(&tactic), "--dry-run", "--input", "x"],
        ] {
            let mut run = lllm(&args).cwd(&dir.0);
            if let Extra::Limit(limit) = case.extra {
                run = run.env("LLLM_MAX_FILE_BYTES", limit);
            }
            let outcome = run.run_blocking();
            eprintln_case(case.name, &args);
            outcome.assert_clean(2, &case.expect);
            if let Some(secret) = case.secret {
                outcome.assert_never_shows(secret);
            }
        }
    }
}

#[allow(clippy::print_stderr)]
fn eprintln_case(name: &str, args: &[&str]) {
    eprintln!(
        "case: {name}: lllm {}",
        args.first().copied().unwrap_or_default()
    );
}

#[test]
fn a_valid_tactic_with_run_time_variables_still_checks() {
    let dir = TempDir::new("files-ok");
    let tactic = dir.write(
        "t.yaml",
        agent("    system_prompt: 'You help {{ user }}{% for x in items %}{{ x }}{% endfor %}'\n    tools:\n      - name: t\n        description: d\n        command: [sh, -c, 'echo hi']\nsteps:\n  - agent: a\n    receive: '{{ input }}'\n"),
    );
    lllm(&["check", arg(&tactic)])
        .run_blocking()
        .assert_clean(0, &[]);
}

#[test]
fn an_unreadable_base_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("files-mode");
    let base = dir.write("b.yaml", agent("    system_prompt: hi\n"));
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    if std::fs::read(&base).is_ok() {
        return; // root reads anything: nothing to test
    }
    let tactic = dir.write("t.yaml", "base: b.yaml\n");
    lllm(&["check", arg(&tactic)])
        .run_blocking()
        .assert_clean(2, &["t.yaml:1:7", "cannot read"]);
}

#[test]
fn a_tactic_with_a_non_utf8_name_is_named_in_the_error() {
    use std::os::unix::ffi::OsStrExt;
    let dir = TempDir::new("files-name");
    let name = std::ffi::OsStr::from_bytes(b"t\xff.yaml");
    let path = dir.0.join(name);
    std::fs::write(&path, "agent_configs: 1\n").expect("write");
    let mut check = lllm(&["check"]);
    check.command().arg(&path);
    let outcome = check.run_blocking();
    outcome.assert_clean(2, &[":1:16"]);
    assert!(Path::new(&path).exists());
}
