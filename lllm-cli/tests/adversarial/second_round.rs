//! The second round of hostile inputs: journals, batch files, traces and their paths. One journal has
//! one runner and one output one writer at a time; no path of a run may be another of its files; FIFOs,
//! devices and endless lines are refused or read within bounds; a key a server echoes never reaches a
//! journal; ids stay exactly as written. Each case bounded in time and memory.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;

use super::support::{arg, lllm, Outcome, TempDir};

/// A steps tactic: `worker` appends a line to `effects.txt` with a tool (asking first when
/// `confirm`), then answers.
fn tactic(api_base: &str, dir: &Path, confirm: bool) -> String {
    format!(
        r#"global:
  model_name: m
  model_args: {{api_base: "{api_base}", api_key: "sk-second-round-0123456789", timeout: 30}}
  max_call_retries: 0
agent_configs:
  - name: worker
    system_prompt: You work.
    tools:
      - name: append
        description: Appends a line
        parameters: {{type: object, properties: {{line: {{type: string}}}}, required: [line]}}
        command: [sh, -c, 'printf "%s\n" "$1" >> "$2"; echo ok', sh, "{{{{ line }}}}", "{effects}"]
        confirm: {confirm}
steps:
  - {{agent: worker, receive: "{{{{ input }}}}"}}
"#,
        effects = dir.join("effects.txt").display()
    )
}

fn effects(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.path("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("a broken line {l:?}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_resumes_of_one_journal_never_both_run() {
    let server = StubServer::start().await.expect("stub");
    for round in 0..6 {
        let dir = TempDir::new(&format!("two-resumes-{round}"));
        let file = dir.write("t.yaml", tactic(&server.base_url(), &dir.0, true));
        let journal = dir.path("run.jsonl");
        server.push(StubReply::tool_calls(&[(
            "c1",
            "append",
            r#"{"line": "one"}"#,
        )]));
        lllm(&[
            "run",
            arg(&file),
            "--input",
            "go",
            "--journal",
            arg(&journal),
        ])
        .run()
        .await
        .assert_clean(3, &["paused"]);
        // The answer after the approved call comes slowly, so that the two resumes overlap.
        server.push(StubReply::text("done").delay(Duration::from_millis(400)));
        let first = lllm(&["resume", arg(&journal), "--yes"]).spawn();
        let second = lllm(&["resume", arg(&journal), "--yes"]).spawn();
        let (first, second) = tokio::task::spawn_blocking(move || (first.wait(), second.wait()))
            .await
            .expect("wait");
        let mut codes = [first.code, second.code];
        codes.sort();
        assert_eq!(codes, [Some(0), Some(2)], "{first:?}\n{second:?}");
        let refused = if first.code == Some(2) {
            &first
        } else {
            &second
        };
        refused.assert_clean(2, &["in use by another run"]);
        assert_eq!(effects(&dir), ["one"], "the confirmed call ran once");
        json_lines(&journal);
        server.clear_requests();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_batches_on_one_output_never_both_write() {
    let server = StubServer::start().await.expect("stub");
    for round in 0..4 {
        let dir = TempDir::new(&format!("two-batches-{round}"));
        let file = dir.write(
            "chat.yaml",
            format!(
                "agent_configs:\n  - {{name: a, model_name: m, system_prompt: s, model_args: {{api_base: \"{}\", timeout: 30}}}}\n",
                server.base_url()
            ),
        );
        let items: String = (0..6)
            .map(|i| format!("{{\"id\": {i}, \"input\": \"q{i}\"}}\n"))
            .collect();
        let inputs = dir.write("items.jsonl", items);
        let output = dir.path("out.jsonl");
        for _ in 0..12 {
            server.push(StubReply::text("a").delay(Duration::from_millis(300)));
        }
        let batch = || {
            lllm(&[
                "batch",
                arg(&file),
                "--inputs",
                arg(&inputs),
                "--output",
                arg(&output),
                "--concurrency",
                "2",
            ])
            .spawn()
        };
        let (first, second) = (batch(), batch());
        let (first, second) = tokio::task::spawn_blocking(move || (first.wait(), second.wait()))
            .await
            .expect("wait");
        let mut codes = [first.code, second.code];
        codes.sort();
        assert_eq!(codes, [Some(0), Some(2)], "{first:?}\n{second:?}");
        let refused = if first.code == Some(2) {
            &first
        } else {
            &second
        };
        refused.assert_clean(2, &["being written by another lllm batch"]);
        let mut seen: HashMap<String, usize> = HashMap::new();
        for line in json_lines(&output) {
            *seen.entry(line["id"].to_string()).or_default() += 1;
        }
        assert_eq!(seen.len(), 6);
        assert!(
            seen.values().all(|&n| n == 1),
            "an item answered twice: {seen:?}"
        );
        server.clear_requests();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_path_of_a_run_may_be_another_of_its_files() {
    let dir = TempDir::new("same-files");
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1", &dir.0, false));
    let before = std::fs::read(&file).expect("tactic");
    let link = dir.path("link.yaml");
    std::os::unix::fs::symlink(&file, &link).expect("symlink");
    let hard = dir.path("hard.yaml");
    std::fs::hard_link(&file, &hard).expect("hard link");
    for trace in [&file, &link, &hard] {
        lllm(&[
            "run",
            arg(&file),
            "--input",
            "x",
            "--dry-run",
            "--trace",
            arg(trace),
        ])
        .run()
        .await
        .assert_clean(2, &["the trace", "is the same file as the tactic"]);
    }
    let journal = dir.path("run.jsonl");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "x",
        "--journal",
        arg(&journal),
        "--trace",
        arg(&journal),
    ])
    .run()
    .await
    .assert_clean(2, &["is the same file as the journal"]);
    let inputs = dir.write("items.jsonl", "{\"input\": \"x\"}\n");
    let inputs_link = dir.path("items-hard.jsonl");
    std::fs::hard_link(&inputs, &inputs_link).expect("hard link");
    for output in [&inputs, &inputs_link, &file] {
        lllm(&[
            "batch",
            arg(&file),
            "--inputs",
            arg(&inputs),
            "--output",
            arg(output),
        ])
        .run()
        .await
        .assert_clean(2, &["the output", "is the same file as the"]);
    }
    assert_eq!(
        std::fs::read(&file).expect("tactic"),
        before,
        "the tactic is intact"
    );
    assert_eq!(
        std::fs::read_to_string(&inputs).expect("inputs"),
        "{\"input\": \"x\"}\n"
    );
}

/// A FIFO at `path`.
fn fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo (coreutils) runs");
    assert!(made.success(), "mkfifo failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn fifos_and_devices_are_refused_not_waited_on() {
    let dir = TempDir::new("fifos");
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1", &dir.0, false));
    let pipe = dir.path("pipe");
    fifo(&pipe);
    let quick = Duration::from_secs(10);
    lllm(&["resume", arg(&pipe)])
        .time_limit(quick)
        .run()
        .await
        .assert_clean(2, &["named pipe"]);
    lllm(&["run", arg(&file), "--input", "x", "--journal", arg(&pipe)])
        .time_limit(quick)
        .run()
        .await
        .assert_clean(2, &["named pipe"]);
    lllm(&["run", arg(&file), "--input", "x", "--journal", "/dev/null"])
        .time_limit(quick)
        .run()
        .await
        .assert_clean(2, &["/dev/null", "a device"]);
    lllm(&["run", arg(&file), "--input", "x", "--journal", arg(&dir.0)])
        .time_limit(quick)
        .run()
        .await
        .assert_clean(2, &["a directory"]);
    let items = dir.write("items.jsonl", "{\"input\": \"x\"}\n");
    for (inputs, output, what) in [
        (pipe.as_path(), dir.path("out.jsonl"), "named pipe"),
        (items.as_path(), pipe.clone(), "named pipe"),
        (items.as_path(), "/dev/zero".into(), "a device"),
        (items.as_path(), "/dev/full".into(), "a device"),
    ] {
        lllm(&[
            "batch",
            arg(&file),
            "--inputs",
            arg(inputs),
            "--output",
            arg(&output),
        ])
        .time_limit(quick)
        .run()
        .await
        .assert_clean(2, &[what]);
    }
    // A journal whose recorded tactic is a FIFO, or a device read without end.
    for tactic in [pipe.as_path(), Path::new("/dev/zero")] {
        let journal = dir.write(
            "odd.jsonl",
            format!(
                "{{\"event\":\"start\",\"version\":1,\"tactic\":\"{}\",\"tactic_sha256\":\"x\",\"input\":\"hi\",\"vars\":{{}}}}\n",
                tactic.display()
            ),
        );
        lllm(&["resume", arg(&journal)])
            .time_limit(quick)
            .run()
            .await
            .assert_clean(2, &["cannot read the tactic", "not a regular file"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn journals_in_odd_places_get_what_they_are_named() {
    let dir = TempDir::new("odd-journals");
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1", &dir.0, false));
    let dangling = dir.path("dangling.jsonl");
    let target = dir.path("elsewhere/target.jsonl");
    std::os::unix::fs::symlink(&target, &dangling).expect("symlink");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "x",
        "--journal",
        arg(&dangling),
    ])
    .run()
    .await
    .assert_clean(2, &["symbolic link to a file that does not exist"]);
    assert!(!target.exists());
    let notes = dir.write("notes.txt", "my notes\n");
    lllm(&["run", arg(&file), "--input", "x", "--journal", arg(&notes)])
        .run()
        .await
        .assert_clean(2, &["holds no journal"]);
    assert_eq!(
        std::fs::read_to_string(&notes).expect("notes"),
        "my notes\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_output_with_an_endless_line_is_read_within_bounds() {
    let dir = TempDir::new("endless-output");
    let server = StubServer::start().await.expect("stub");
    let file = dir.write(
        "chat.yaml",
        format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: s, model_args: {{api_base: \"{}\"}}}}\n",
            server.base_url()
        ),
    );
    let inputs = dir.write("items.jsonl", "{\"id\": \"x\", \"input\": \"q\"}\n");
    // 300 MB on one line, more than the suite's memory bound.
    let output = dir.path("out.jsonl");
    {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&output).expect("create"));
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..300 {
            out.write_all(&chunk).expect("write");
        }
    }
    server.push(StubReply::text("answer"));
    let outcome = lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&inputs),
        "--output",
        arg(&output),
    ])
    .run()
    .await;
    outcome.assert_clean(0, &[]);
    std::fs::remove_file(&output).ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_beyond_64_bits_stay_exactly_as_written() {
    let dir = TempDir::new("big-ids");
    let server = StubServer::start().await.expect("stub");
    let file = dir.write(
        "chat.yaml",
        format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: s, model_args: {{api_base: \"{}\"}}}}\n",
            server.base_url()
        ),
    );
    let inputs = dir.write(
        "items.jsonl",
        "{\"id\": 123456789012345678901, \"input\": \"a\"}\n{\"id\": 123456789012345678902, \"input\": \"b\"}\n",
    );
    let output = dir.path("out.jsonl");
    server.push(StubReply::text("one"));
    server.push(StubReply::text("two"));
    lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&inputs),
        "--output",
        arg(&output),
    ])
    .run()
    .await
    .assert_clean(0, &[]);
    let text = std::fs::read_to_string(&output).expect("output");
    assert!(text.contains("\"id\":123456789012345678901,"), "{text}");
    assert!(text.contains("\"id\":123456789012345678902,"), "{text}");
    // Run again: both are answered, nothing is asked.
    lllm(&[
        "batch",
        arg(&file),
        "--inputs",
        arg(&inputs),
        "--output",
        arg(&output),
    ])
    .run()
    .await
    .assert_clean(0, &["2 skipped"]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_a_server_echoes_never_reaches_the_journal() {
    let dir = TempDir::new("journal-secrets");
    let server = StubServer::start().await.expect("stub");
    let file = dir.write("t.yaml", tactic(&server.base_url(), &dir.0, false));
    let key = "sk-second-round-0123456789";
    server.push(StubReply::tool_calls(&[(
        "c1",
        "append",
        &format!(r#"{{"line": "the key is {key}"}}"#),
    )]));
    server.push(StubReply::text(&format!("I saw {key} in the headers")));
    let journal = dir.path("run.jsonl");
    let outcome: Outcome = lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
    ])
    .run()
    .await;
    outcome.assert_clean(0, &[]);
    let text = std::fs::read_to_string(&journal).expect("journal");
    assert!(!text.contains(key), "the key reached the journal:\n{text}");
    assert!(text.contains("[redacted]"), "{text}");
    json_lines(&journal);
}

#[tokio::test(flavor = "multi_thread")]
async fn env_references_in_a_steps_message_are_expanded_like_every_string() {
    let dir = TempDir::new("env-receive");
    let file = dir.write(
        "t.yaml",
        "agent_configs:\n  - {name: a, model_name: m, system_prompt: s, model_args: {api_base: \"http://127.0.0.1:9/v1\"}}\nsteps:\n  - {agent: a, receive: \"Region ${LLLM_TEST_REGION}, literal $${NOT_ME}\"}\n",
    );
    let outcome = lllm(&["run", arg(&file), "--dry-run"])
        .env("LLLM_TEST_REGION", "eu-west")
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    let text = outcome.stdout_text();
    assert!(text.contains("Region eu-west, literal ${NOT_ME}"), "{text}");
    lllm(&["run", arg(&file), "--dry-run"])
        .run()
        .await
        .assert_clean(2, &["t.yaml:4", "steps[0].receive", "LLLM_TEST_REGION"]);
}
