//! The terminal and standard streams: output that cannot be written is a failure (exit 1, said on
//! stderr), a closed stdout stops a streamed answer, standard input is bounded, colour appears
//! only on a terminal without `NO_COLOR`, and the confirmation question shows what a call's
//! arguments hold, invisible characters included.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::support::{arg, lllm, Lllm, TempDir};

fn tactic(server: &str) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{server}\", timeout: 60}}\n    system_prompt: s\n"
    )
}

/// Standard output is a pipe nobody reads from.
fn with_closed_stdout(mut run: Lllm) -> Lllm {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    run.command().stdout(Stdio::from(writer));
    run
}

/// Standard output is `/dev/full`: every write fails with "no space left".
fn with_full_stdout(mut run: Lllm) -> Lllm {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    run.command().stdout(Stdio::from(full));
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn output_that_cannot_be_written_is_exit_1_with_a_message() {
    let dir = TempDir::new("stdout");
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1"));
    let cases: [(&[&str], &str); 3] = [
        (&["schema"], "schema"),
        (&["check", arg(&file)], "check"),
        (&["run", arg(&file), "--input", "x", "--dry-run"], "dry run"),
    ];
    for (args, what) in cases {
        for (outcome, how) in [
            (with_closed_stdout(lllm(args)).run().await, "closed"),
            (with_full_stdout(lllm(args)).run().await, "full"),
        ] {
            assert!(
                outcome.stderr.contains("cannot write to standard output"),
                "{what}, {how}: {}",
                outcome.stderr
            );
            outcome.assert_clean(1, &[]);
        }
    }
}

/// A server that streams an answer for ever (a piece every 20 ms), and notes when its client hangs up.
async fn endless_stream() -> (String, Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    let hung_up = Arc::new(AtomicBool::new(false));
    let noted = hung_up.clone();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        // The request itself does not matter: whatever it was, the answer never ends.
        let mut request = vec![0; 64 * 1024];
        let _ = socket.read(&mut request).await;
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        if socket.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for _ in 0..3000 {
            let piece =
                "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"more \"}}]}\n\n";
            if socket.write_all(piece.as_bytes()).await.is_err() {
                noted.store(true, Ordering::SeqCst);
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    (url, hung_up)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_answer_stops_when_stdout_closes() {
    let (url, hung_up) = endless_stream().await;
    let dir = TempDir::new("stream-closed");
    let file = dir.write("t.yaml", tactic(&url));
    let outcome = with_closed_stdout(lllm(&["run", arg(&file), "--input", "x", "--stream"]))
        .run()
        .await;
    outcome.assert_clean(1, &["cannot write to standard output"]);
    // lllm is gone, so its connection is closed: the server's next write fails.
    for _ in 0..250 {
        if hung_up.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        hung_up.load(Ordering::SeqCst),
        "the server never saw the end"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_input_is_read_up_to_a_limit() {
    let dir = TempDir::new("stdin");
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1"));
    let huge = vec![b'a'; 17 * 1024 * 1024];
    lllm(&["run", arg(&file), "--dry-run"])
        .stdin(huge)
        .run()
        .await
        .assert_clean(2, &["standard input is longer than 16 MiB"]);
    lllm(&["run", arg(&file), "--dry-run"])
        .stdin(b"\xff\xfe not text".to_vec())
        .run()
        .await
        .assert_clean(2, &["standard input is not valid UTF-8"]);
}

/// Runs `lllm` under a pseudo-terminal (`script`), so that stderr is a terminal.
fn under_a_terminal(lllm_args: &str, no_color: bool) -> String {
    let mut command = std::process::Command::new("script");
    command
        .args([
            "-qec",
            &format!("{} {lllm_args}", env!("CARGO_BIN_EXE_lllm")),
            "/dev/null",
        ])
        .env("LLLM_LOG", "debug")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    if no_color {
        command.env("NO_COLOR", "1");
    }
    let output = command.output().expect("script (util-linux) runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let dir = TempDir::new("colour");
    // At debug level a call to a closed port logs a few lines (the attempt and its connection):
    // enough to see whether they are coloured.
    let text = tactic("http://127.0.0.1:9/v1").replace(
        "system_prompt: s",
        "system_prompt: s\n    max_call_retries: 0",
    );
    let file = dir.write("t.yaml", text);
    let args = format!("run {} --input x", arg(&file));
    let on_terminal = under_a_terminal(&args, false);
    assert!(
        on_terminal.contains("\u{1b}["),
        "a terminal gets colour: {on_terminal}"
    );
    let no_color = under_a_terminal(&args, true);
    assert!(
        !no_color.contains("\u{1b}[") && no_color.contains("DEBUG"),
        "NO_COLOR is honoured: {no_color}"
    );
    let piped = lllm(&["run", arg(&file), "--input", "x"])
        .env("LLLM_LOG", "debug")
        .run_blocking();
    piped.assert_clean(1, &["DEBUG", "cannot reach the server"]);
    assert!(!piped.stderr.contains('\u{1b}'), "{}", piped.stderr);
}

/// A model asks for a call that needs confirmation, with arguments that hide what they are: a
/// right-to-left override that turns `exe.txt` around, the other bidirectional controls, zero-width
/// and tag characters, C1 controls. The person asked at the terminal sees each of them escaped,
/// none raw; they answer no, and the tool does not run.
#[tokio::test(flavor = "multi_thread")]
async fn the_confirmation_question_shows_invisible_characters_escaped() {
    let hidden = [
        '\u{202e}',
        '\u{202a}',
        '\u{202b}',
        '\u{202c}',
        '\u{202d}',
        '\u{2066}',
        '\u{2067}',
        '\u{2068}',
        '\u{2069}',
        '\u{200e}',
        '\u{200f}',
        '\u{061c}',
        '\u{200b}',
        '\u{feff}',
        '\u{e0041}',
        '\u{7f}',
        '\u{85}',
        '\u{9b}',
    ];
    let text: String = std::iter::once("invoice".to_owned())
        .chain(hidden.iter().map(|c| format!("{c}x")))
        .collect();
    let arguments = serde_json::json!({ "text": text }).to_string();
    let server = lllm_runtime::testing::StubServer::start()
        .await
        .expect("server");
    server.push(lllm_runtime::testing::StubReply::tool_calls(&[(
        "c1", "shout", &arguments,
    )]));
    server.push(lllm_runtime::testing::StubReply::text("done"));
    let dir = TempDir::new("confirm-bidi");
    let ran = dir.path("ran");
    let file = dir.write(
        "t.yaml",
        format!(
            "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{}\"}}\n    system_prompt: s\n    tools:\n      - {{name: shout, description: Says it, parameters: {{type: object, properties: {{text: {{type: string}}}}}}, command: [touch, \"{}\"], confirm: true}}\n",
            server.base_url(),
            arg(&ran)
        ),
    );
    let args = format!("run {} --input go", arg(&file));
    let shown = tokio::task::spawn_blocking(move || answered_at_a_terminal(&args, "n\n"))
        .await
        .expect("script");
    assert!(shown.contains("wants to call `shout`"), "{shown:?}");
    for c in hidden {
        let escaped = format!("\\u{{{:x}}}", u32::from(c));
        assert!(shown.contains(&escaped), "{escaped} not in {shown:?}");
        assert!(!shown.contains(c), "{c:?} shown raw: {shown:?}");
    }
    assert!(!ran.exists(), "declined, the tool did not run");
}

/// Runs `lllm` under a pseudo-terminal (`script`), typing `answer`; what the terminal showed.
/// Killed past the suite's time limit.
fn answered_at_a_terminal(lllm_args: &str, answer: &str) -> String {
    let mut child = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("{} {lllm_args}", env!("CARGO_BIN_EXE_lllm")),
            "/dev/null",
        ])
        .env_remove("LLLM_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("script (util-linux) runs");
    // Typed ahead: the terminal keeps it until lllm reads its answer. Standard input stays open
    // until the end, so that `script` does not pass an end of input on.
    let mut stdin = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut stdin, answer.as_bytes()).expect("typed");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut shown = Vec::new();
        std::io::Read::read_to_end(&mut { stdout }, &mut shown).ok();
        shown
    });
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > super::support::DEFAULT_TIME_LIMIT {
            child.kill().ok();
            panic!("it hung at the terminal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    String::from_utf8_lossy(&reader.join().expect("reader")).into_owned()
}
