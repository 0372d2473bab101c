//! Journals and batch files are inputs too: a resume of something that is not a journal, a journal
//! whose tactic is gone, places that cannot be written, endless or binary item files, and settings
//! out of range. Each is a clear error (exit 2) within bounds, never a hang or a panic.

use super::support::{arg, lllm, TempDir};

fn tactic() -> &'static str {
    "agent_configs:\n  - {name: a, model_name: m, system_prompt: s, model_args: {api_base: \"http://127.0.0.1:9/v1\"}}\n"
}

#[tokio::test(flavor = "multi_thread")]
async fn what_is_not_a_journal_is_refused_with_its_line() {
    let dir = TempDir::new("durable-journal");
    let garbage = dir.write("garbage.jsonl", b"\x00\xff binary\nmore\n".as_slice());
    lllm(&["resume", arg(&garbage)])
        .run()
        .await
        .assert_clean(2, &["garbage.jsonl:1: not a journal event"]);
    let empty = dir.write("empty.jsonl", "");
    lllm(&["resume", arg(&empty)])
        .run()
        .await
        .assert_clean(2, &["the journal is empty"]);
    let future = dir.write(
        "future.jsonl",
        "{\"event\":\"start\",\"version\":99,\"tactic\":\"t.yaml\",\"tactic_sha256\":\"x\",\"input\":null,\"vars\":{}}\n",
    );
    lllm(&["resume", arg(&future)])
        .run()
        .await
        .assert_clean(2, &["version 99; this lllm reads version 1"]);
    let no_start = dir.write("nostart.jsonl", "{\"event\":\"resumed\"}\n");
    lllm(&["resume", arg(&no_start)])
        .run()
        .await
        .assert_clean(2, &["the first line must be the run's start"]);
    let gone = dir.write(
        "gone.jsonl",
        format!(
            "{{\"event\":\"start\",\"version\":1,\"tactic\":\"{}\",\"tactic_sha256\":\"x\",\"input\":\"hi\",\"vars\":{{}}}}\n",
            dir.path("missing.yaml").display()
        ),
    );
    lllm(&["resume", arg(&gone)])
        .run()
        .await
        .assert_clean(2, &["cannot read the tactic", "missing.yaml"]);
    lllm(&["resume", arg(&dir.0)])
        .run()
        .await
        .assert_clean(2, &[]);
    lllm(&["resume", arg(&dir.path("nothing-here.jsonl"))])
        .run()
        .await
        .assert_clean(2, &["nothing-here.jsonl"]);
}

/// A journal's `limits` are read by the rule of `limits:` too: a value out of range, an unknown or
/// enormous name, two limits in one entry, text that is not KEY=VALUE, or another kind of value is
/// refused naming the journal's line, in a short message without the hostile text's control
/// characters.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_limits_in_a_journal_are_refused_with_its_line() {
    let dir = TempDir::new("durable-limits");
    let file = dir.write("t.yaml", tactic());
    let huge = format!("\\u001b[31m{}", "a".repeat(100_000));
    let cases = [
        (
            r#"[{"max_requests": -1}]"#.to_owned(),
            "max_requests must be a whole number from 0",
        ),
        (
            r#"[{"max_seconds": 1e308}]"#.to_owned(),
            "max_seconds must be a number of seconds",
        ),
        (
            r#"["max_tool_calls=abc"]"#.to_owned(),
            "max_tool_calls must be a whole number",
        ),
        (r#"["max_requests"]"#.to_owned(), "is not KEY=VALUE"),
        (
            r#"[{"max_requests": 1, "max_seconds": 2}]"#.to_owned(),
            "names one limit",
        ),
        (r#"[{}]"#.to_owned(), "names one limit"),
        (r#"[42]"#.to_owned(), "a limit and its value"),
        (r#"{"max_requests": 1}"#.to_owned(), "not a journal event"),
        (format!(r#"[{{"{huge}": 1}}]"#), "unknown limit `[31maaaa"),
    ];
    for (n, (limits, expected)) in cases.iter().enumerate() {
        // A line after the start: a broken last line alone would be a crash's torn line.
        let journal = dir.write(
            &format!("j{n}.jsonl"),
            format!(
                "{{\"event\":\"start\",\"version\":1,\"tactic\":\"{}\",\"tactic_sha256\":\"x\",\"input\":\"hi\",\"vars\":{{}},\"limits\":{limits}}}\nmore\n",
                file.display()
            ),
        );
        let outcome = lllm(&["resume", arg(&journal)]).run().await;
        outcome.assert_clean(
            2,
            &[&format!("j{n}.jsonl:1: not a journal event"), expected],
        );
        assert!(outcome.stderr.len() < 1000, "{}", outcome.stderr.len());
        assert!(!outcome.stderr.contains('\u{1b}'), "{limits}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_journal_that_cannot_be_written_stops_the_run_before_it_starts() {
    let dir = TempDir::new("durable-write");
    let file = dir.write("t.yaml", tactic());
    let nowhere = dir.path("no/such/folder/run.jsonl");
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "x",
        "--journal",
        arg(&nowhere),
    ])
    .run()
    .await
    .assert_clean(2, &["run.jsonl"]);
    lllm(&["run", arg(&file), "--input", "x", "--journal", arg(&dir.0)])
        .run()
        .await
        .assert_clean(2, &[]);
    lllm(&[
        "run",
        arg(&file),
        "--input",
        "x",
        "--dry-run",
        "--journal",
        arg(&dir.path("dry.jsonl")),
    ])
    .run()
    .await
    .assert_clean(2, &["a dry run sends nothing"]);
    // An interactive chat cannot be journaled (standard input is a pipe here, but empty).
    lllm(&["run", arg(&file), "--journal", arg(&dir.path("chat.jsonl"))])
        .stdin(Vec::new())
        .run()
        .await
        .assert_clean(2, &[]);
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_item_files_and_settings_are_refused() {
    let dir = TempDir::new("durable-batch");
    let file = dir.write("t.yaml", tactic());
    let output = dir.path("out.jsonl");
    let run = |inputs: &str, extra: &[&str]| {
        let mut args = vec![
            "batch".to_owned(),
            arg(&file).to_owned(),
            "--inputs".to_owned(),
            inputs.to_owned(),
            "--output".to_owned(),
            arg(&output).to_owned(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    // A device is no items file (reading /dev/zero would never end); a line over the item limit is
    // cut there.
    let endless = run("/dev/zero", &[]);
    let endless: Vec<&str> = endless.iter().map(String::as_str).collect();
    let outcome = lllm(&endless).run().await;
    outcome.assert_clean(2, &["/dev/zero", "a device, not a regular file"]);
    let long = dir.write("long.jsonl", vec![b' '; 17 << 20]);
    let long = run(arg(&long), &[]);
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    let outcome = lllm(&long).run().await;
    outcome.assert_clean(2, &["an item is longer than 16 MiB"]);
    let binary = dir.write("bin.jsonl", b"\xff\xfe\n".as_slice());
    let args = run(arg(&binary), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lllm(&args)
        .run()
        .await
        .assert_clean(2, &["bin.jsonl:1: not UTF-8"]);
    let unknown = dir.write("unknown.jsonl", "{\"input\": \"a\", \"inptu\": 1}\n");
    let args = run(arg(&unknown), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lllm(&args)
        .run()
        .await
        .assert_clean(2, &["unknown key `inptu`"]);
    let badvar = dir.write("badvar.jsonl", "{\"vars\": {\"1x\": \"a\"}}\n");
    let args = run(arg(&badvar), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lllm(&args)
        .run()
        .await
        .assert_clean(2, &["`1x` is not a variable name"]);
    let fine = dir.write("fine.jsonl", "{\"input\": \"a\"}\n");
    for bad in ["0", "100000", "-1"] {
        let args = run(arg(&fine), &["--concurrency", bad]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        lllm(&args).run().await.assert_clean(2, &["--concurrency"]);
    }
    let args = vec![
        "batch",
        arg(&file),
        "--inputs",
        arg(&fine),
        "--output",
        arg(&dir.0),
    ];
    lllm(&args)
        .run()
        .await
        .assert_clean(2, &["cannot write the output", "a directory"]);
}
