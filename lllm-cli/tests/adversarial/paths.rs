//! Paths named on the command line besides the tactic: a tokenizer or a trace that is a device, a
//! FIFO, a folder or garbage fails at once with exit 2 and the path, never reads for ever.

use super::support::{arg, lllm, TempDir};

fn tactic() -> &'static str {
    "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {api_base: \"http://127.0.0.1:9/v1\"}\n    system_prompt: s\n"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tokenizer_that_is_not_a_tokenizer_file_is_refused() {
    let dir = TempDir::new("tokenizer");
    let file = dir.write("t.yaml", tactic());
    let trace = dir.path("trace.jsonl");
    let fifo = dir.path("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) runs");
    assert!(made.success());
    let garbage = dir.write("garbage.json", b"{\"model\": [1, 2, \xff");
    for (tokenizer, message) in [
        ("/dev/zero", "not a regular file"),
        (arg(&fifo), "not a regular file"),
        (arg(&dir.0), "not a regular file"),
        (arg(&garbage), "cannot load the tokenizer"),
        ("/nonexistent/tokenizer.json", "cannot load the tokenizer"),
    ] {
        lllm(&[
            "run",
            arg(&file),
            "--input",
            "x",
            "--dry-run",
            "--trace",
            arg(&trace),
            "--tokenizer",
            tokenizer,
        ])
        .run()
        .await
        .assert_clean(2, &[message, tokenizer]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trace_that_cannot_be_written_is_refused_before_the_run() {
    let dir = TempDir::new("trace-path");
    let file = dir.write("t.yaml", tactic());
    for trace in ["/nonexistent/dir/trace.jsonl", arg(&dir.0)] {
        lllm(&[
            "run",
            arg(&file),
            "--input",
            "x",
            "--dry-run",
            "--trace",
            trace,
        ])
        .run()
        .await
        .assert_clean(2, &["cannot write the trace"]);
    }
}
