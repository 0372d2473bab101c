//! Hostile MCP servers: everything a server sends is hostile input, its tool listing (endless,
//! enormous, badly named, duplicated, with schemas that are not object schemas or do not compile,
//! with megabytes of description, junk and oversized lines on stdout, JSON-RPC errors), its answers
//! to calls (100 MiB, 100 000 blocks, not a tool result, an error, none, one with the wrong id, a
//! closed stdout), its stderr (a flood, escape sequences), its death (a signal, a hang at start,
//! daemons it leaves) and its error messages (which may quote credentials).
//!
//! The server is `tests/mcp/hostile_server.py`, plain Python 3 without the MCP SDK, so that it can
//! break the protocol on purpose; its first argument picks the misbehaviour. A server that cannot be
//! used ends the run with a message naming it (exit 1; exit 2 when the tactic can leave the bad tool
//! out); a bad answer to a call is an error result for the model and the run goes on. Nothing lllm
//! prints carries the server's escape sequences or credentials, and no process of the server is left.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};

use super::support::{
    arg, lllm, marked_processes, running, tool_messages, unique_mark, Outcome, TempDir,
};

/// The Python 3 interpreter: `$LLLM_MCP_PYTHON` when set, else `python3` resolved once to the real
/// program (a version manager's shim costs a tenth of a second per start).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(python) = std::env::var("LLLM_MCP_PYTHON")
            .ok()
            .filter(|p| !p.is_empty())
        {
            return python;
        }
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .map(|path| path.trim().to_owned())
            .filter(|path| !path.is_empty())
            .unwrap_or_else(|| "python3".to_owned())
    })
}

fn hostile_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile_server.py")
}

/// Server `h` in `mode` (YAML flow mapping), with extra settings (`timeout_s: 1`, ...).
fn server(mode: &str, settings: &str) -> String {
    let command: Vec<String> = [python(), arg(&hostile_server()), mode]
        .iter()
        .map(|s| serde_json::to_string(s).expect("string"))
        .collect();
    let extra = if settings.is_empty() {
        String::new()
    } else {
        format!(", {settings}")
    };
    format!("{{command: [{}]{extra}}}", command.join(", "))
}

/// A tactic with server `h` (a YAML flow mapping) and one agent taking it as `mcp`.
fn tactic(api_base: &str, server: &str, mcp: &str) -> String {
    format!(
        "mcp_servers:\n  h: {server}\nagent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    model_args: {{api_base: \"{api_base}\", timeout: 60}}\n    max_tool_rounds: 4\n    mcp: {mcp}\n"
    )
}

/// `lllm tools` on a tactic whose agent takes server `h` as `mcp`.
async fn list(dir: &TempDir, server: &str, mcp: &str) -> Outcome {
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1", server, mcp));
    lllm(&["tools", arg(&file), "--json"]).run().await
}

/// The names `lllm tools --json` lists for the first agent.
fn listed(outcome: &Outcome) -> Vec<String> {
    let listing: serde_json::Value = serde_json::from_slice(&outcome.stdout).expect("JSON");
    listing["agents"][0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Runs the tactic with server `h` through `rounds` of tool calls and a final "done"; returns the
/// outcome and the stub's requests.
async fn run(
    dir: &TempDir,
    server: &str,
    rounds: &[&[(&str, &str, &str)]],
    configure: impl FnOnce(super::support::Lllm) -> super::support::Lllm,
) -> (Outcome, Vec<RecordedRequest>) {
    let stub = StubServer::start().await.expect("stub");
    for calls in rounds {
        stub.push(StubReply::tool_calls(calls));
    }
    stub.push(StubReply::text("done"));
    let file = dir.write("t.yaml", tactic(&stub.base_url(), server, "[h]"));
    let outcome = configure(lllm(&["run", arg(&file), "--input", "go"]))
        .run()
        .await;
    (outcome, stub.requests())
}

/// Asserts that stderr carries no terminal control character but newlines and tabs.
#[track_caller]
fn assert_no_control_characters(outcome: &Outcome) {
    let found: Vec<char> = outcome
        .stderr
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(
        found.is_empty(),
        "control characters {found:?} on stderr: {:?}",
        outcome.stderr
    );
}

/// Waits up to `patience` for `done`.
fn eventually(patience: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < patience {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// The tool listing: endless, enormous, unofferable tools, errors, junk and oversized lines.
mod listing {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn an_endless_listing_or_thousands_of_tools_stop_the_start() {
        let dir = TempDir::new("mcp-endless");
        let endless = list(&dir, &server("endless-pages", ""), "[h]").await;
        endless.assert_clean(
            1,
            &[
                "MCP server `h` did not start",
                "its tool listing did not end after 64 pages",
            ],
        );
        assert!(
            !endless.stderr.contains("exited"),
            "lllm gave up, the server did not exit by itself: {}",
            endless.stderr
        );
        list(&dir, &server("many-tools", ""), "[h]")
            .await
            .assert_clean(1, &["MCP server `h` did not start", "more than 1024 tools"]);
    }

    /// A tool that cannot be offered to a model is an error naming it (exit 2) when an agent takes
    /// it, and the tactic can leave it out: with `exclude:`, or with `include:` when its name is not
    /// one a tactic file can write.
    #[tokio::test(flavor = "multi_thread")]
    async fn unofferable_tools_are_named_and_can_be_left_out() {
        let dir = TempDir::new("mcp-bad-tools");
        let cases: [(&str, &str, &[&str]); 7] = [
            (
                "spaced-name",
                "{include: [echo]}",
                &["tool `has spaces`", "may only contain", "include:"],
            ),
            (
                "long-name",
                "{include: [echo]}",
                &["tool `nnnnnnnn", "1 to 64 characters", "include:"],
            ),
            (
                "control-name",
                "{include: [echo]}",
                &["tool `evil[31mred[0m ]0;owned title", "include:"],
            ),
            (
                "duplicate",
                "{exclude: [echo]}",
                &["tool `echo` is listed twice", "exclude:"],
            ),
            (
                "string-schema",
                "{exclude: [stringly]}",
                &["tool `stringly`", "must be an object schema", "exclude:"],
            ),
            (
                "broken-schema",
                "{exclude: [broken]}",
                &["tool `broken`", "does not compile", "exclude:"],
            ),
            (
                "long-description",
                "{exclude: [verbose]}",
                &[
                    "tool `verbose`",
                    "description of 1048575 bytes",
                    "65536",
                    "exclude:",
                ],
            ),
        ];
        for (mode, filter, messages) in cases {
            let mut expected = vec!["MCP server `h`"];
            expected.extend_from_slice(messages);
            let taken = list(&dir, &server(mode, ""), "[h]").await;
            taken.assert_clean(2, &expected);
            assert_no_control_characters(&taken);
            let left_out = list(&dir, &server(mode, ""), &format!("{{h: {filter}}}")).await;
            left_out.assert_clean(0, &[]);
            let expected: &[&str] = if mode == "duplicate" {
                &["t"]
            } else {
                &["echo"]
            };
            assert_eq!(listed(&left_out), expected, "{mode}");
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_listing_error_is_a_start_failure_without_escape_sequences() {
        let dir = TempDir::new("mcp-list-error");
        let outcome = list(&dir, &server("list-error", ""), "[h]").await;
        outcome.assert_clean(
            1,
            &[
                "MCP server `h` did not start",
                "listing its tools failed",
                "listing broke [31mred",
            ],
        );
        assert_no_control_characters(&outcome);
    }

    /// Lines that are not JSON, before and after the handshake (one of 20 MiB), are skipped.
    #[tokio::test(flavor = "multi_thread")]
    async fn junk_on_stdout_is_skipped() {
        let dir = TempDir::new("mcp-junk");
        let (outcome, requests) = run(
            &dir,
            &server("junk", ""),
            &[&[("c1", "echo", r#"{"text": "still here"}"#)]],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        assert!(outcome.stderr.is_empty(), "quietly: {}", outcome.stderr);
        assert_eq!(tool_messages(&requests[1]), ["still here"]);
    }

    /// A listing of 20 MiB on one line (over the 16 MiB a message may have) fails the start at
    /// once, not at the startup timeout.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_oversized_listing_fails_at_once() {
        let dir = TempDir::new("mcp-huge-list");
        let outcome = list(
            &dir,
            &server("huge-listing", "startup_timeout_s: 20"),
            "[h]",
        )
        .await;
        outcome.assert_clean(
            1,
            &[
                "MCP server `h` did not start",
                "listing its tools failed",
                "bytes, more than the 16777216",
            ],
        );
        assert!(
            outcome.elapsed < Duration::from_secs(10),
            "{:?}",
            outcome.elapsed
        );
    }
}

/// Answers to calls: enormous, dense, misshapen, refused, missing, misaddressed; a closed stdout,
/// a flooded stderr, death by a signal.
mod calls {
    use super::*;

    /// 100 MiB of text in one result: refused (over the 16 MiB a message may have), promptly, with
    /// memory bounded, and the server goes on answering.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_hundred_mib_result_is_refused_and_the_server_goes_on() {
        let dir = TempDir::new("mcp-huge");
        let (outcome, requests) = run(
            &dir,
            &server("serve", ""),
            &[
                &[("c1", "t", r#"{"how": "huge"}"#)],
                &[("c2", "echo", r#"{"text": "after"}"#)],
            ],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        assert!(
            outcome.elapsed < Duration::from_secs(20),
            "{:?}",
            outcome.elapsed
        );
        let answer = &tool_messages(&requests[1])[0];
        assert!(
            answer.starts_with("error: the answer has 1048576")
                && answer.contains("more than the 16777216")
                && answer.contains("ask for less"),
            "{answer}"
        );
        assert_eq!(tool_messages(&requests[2])[1], "after");
    }

    /// The heaviest answers within the 16 MiB a message may have: 15 MiB of text, and 65 000 blocks
    /// (just under the 200 000 JSON values a message may have), are error results over
    /// `max_output_bytes`; 550 000 empty blocks (each a JSON object, which the SDK's parser would
    /// turn into most of a GiB in all) are refused as they arrive, past 200 000 values.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_heaviest_answers_under_the_byte_limit_stay_within_memory() {
        let dir = TempDir::new("mcp-dense");
        let cases = [
            ("fifteen", "error: the result has 15728640 bytes, more than the 65536 this server's results may have (max_output_bytes)"),
            ("under", "error: the result has 129999 bytes, more than the 65536 this server's results may have (max_output_bytes)"),
            ("dense", "error: the answer has more than 200000 JSON values (objects, arrays, items), the most an MCP message may have; ask for less"),
        ];
        for (how, expected) in cases {
            let (outcome, requests) = run(
                &dir,
                &server("serve", ""),
                &[&[("c1", "t", &format!(r#"{{"how": "{how}"}}"#))]],
                |l| l,
            )
            .await;
            outcome.assert_clean(0, &[]);
            let answer = &tool_messages(&requests[1])[0];
            assert!(answer.starts_with(expected), "{how}: {answer}");
        }
    }

    /// Bad answers to calls are error results, the run goes on, and the server still answers. The
    /// nine calls reach one server at once and its heavy answers come first: `timeout_s` leaves a
    /// loaded machine room to answer the others (at 1 s they timed out under a parallel build).
    #[tokio::test(flavor = "multi_thread")]
    async fn bad_answers_are_error_results_and_the_run_goes_on() {
        let dir = TempDir::new("mcp-answers");
        let (outcome, requests) = run(
            &dir,
            &server("serve", "timeout_s: 5"),
            &[
                &[
                    ("c1", "t", r#"{"how": "blocks"}"#),
                    ("c2", "t", r#"{"how": "shapeless"}"#),
                    ("c3", "t", r#"{"how": "rpc-error"}"#),
                    ("c4", "t", r#"{"how": "never"}"#),
                    ("c5", "t", r#"{"how": "wrong-id"}"#),
                    ("c6", "t", r#"{"how": "ansi"}"#),
                    ("c7", "t", r#"{"how": "hologram"}"#),
                    ("c8", "t", r#"{"how": "deep"}"#),
                    ("c9", "t", r#"{"how": "ok"}"#),
                ],
                &[("c10", "echo", r#"{"text": "after"}"#)],
            ],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        assert!(outcome.stderr.is_empty(), "{}", outcome.stderr);
        let answers = tool_messages(&requests[1]);
        let timed_out = "error: the tool did not answer within 5 s (timeout_s of MCP server `h`); try a smaller request";
        assert_eq!(
            answers,
            [
                "error: the answer has more than 200000 JSON values (objects, arrays, items), the most an MCP message may have; ask for less, for example a smaller range or a narrower query",
                "error: the MCP server `h` answered with something that is not a tool result",
                "error: the server refused the call: Invalid params: `how` is not to my taste",
                timed_out,
                timed_out,
                // The model reads what the tool wrote; only what lllm prints is cleaned.
                "colour \u{1b}[31mred\u{1b}[0m \u{1b}]0;owned title\u{7} \u{1b}[2J\u{1b}[H bell\u{7} back\u{8}space \r\u{1b}[1A end",
                // The SDK refuses a block type it does not know.
                "error: the MCP server `h` answered with something that is not a tool result",
                "error: the answer is nested more than 100 levels deep, the most an MCP message may be; ask for less, for example a smaller range or a narrower query",
                "fine",
            ]
        );
        assert_eq!(
            tool_messages(&requests[2])[9],
            "after",
            "the server still answers"
        );
        assert!(
            outcome.elapsed < Duration::from_secs(60),
            "{:?}",
            outcome.elapsed
        );
    }

    /// A server that closes its stdout but keeps running: the call is an error result, so is every
    /// later one, stderr says so once, and the run goes on.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_server_that_closes_its_output_is_done_for() {
        let dir = TempDir::new("mcp-close");
        let mark = unique_mark("close");
        let (outcome, requests) = run(
            &dir,
            &server("serve", &format!("env: {{LLLM_TEST_MARK: {mark}}}")),
            &[
                &[("c1", "t", r#"{"how": "close"}"#)],
                &[("c2", "echo", r#"{"text": "anyone?"}"#)],
            ],
            |l| l,
        )
        .await;
        outcome.assert_clean(
            0,
            &["MCP server `h` closed its output during a call of `t`"],
        );
        assert_eq!(
            outcome.stderr.matches("MCP server `h`").count(),
            1,
            "said once: {}",
            outcome.stderr
        );
        let closed = "error: the MCP server `h` closed its connection; its tools cannot be used for the rest of this run";
        assert_eq!(tool_messages(&requests[1]), [closed]);
        assert_eq!(tool_messages(&requests[2])[1], closed);
        assert!(
            eventually(Duration::from_secs(5), || marked_processes(&mark)
                .is_empty()),
            "the silent server was stopped: {:?}",
            marked_processes(&mark)
        );
    }

    /// Megabytes on stderr without end: lllm neither blocks nor grows, and the calls work.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_flood_on_stderr_neither_blocks_nor_grows() {
        let dir = TempDir::new("mcp-flood");
        let (outcome, requests) = run(
            &dir,
            &server("flood", ""),
            &[
                &[("c1", "echo", r#"{"text": "one"}"#)],
                &[("c2", "t", r#"{"how": "ok"}"#)],
            ],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        assert_eq!(tool_messages(&requests[1]), ["one"]);
        assert_eq!(tool_messages(&requests[2])[1], "fine");
        assert!(
            outcome.stderr.is_empty(),
            "{}",
            super::super::support::excerpt(&outcome.stderr)
        );
    }

    /// A server killed by a signal mid-call: an error result, said once on stderr with its last
    /// words, whose escape sequences are gone.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_server_killed_by_a_signal_is_reported_once_without_escapes() {
        let dir = TempDir::new("mcp-die");
        let (outcome, requests) = run(
            &dir,
            &server("serve", ""),
            &[
                &[("c1", "t", r#"{"how": "die"}"#)],
                &[("c2", "echo", r#"{"text": "anyone?"}"#)],
            ],
            |l| l,
        )
        .await;
        outcome.assert_clean(
            0,
            &[
                "MCP server `h` stopped (signal: 9",
                "its last words on stderr",
                "hostile_server: dying [31mred[0m ]0;owned title",
            ],
        );
        assert_no_control_characters(&outcome);
        let answer = &tool_messages(&requests[1])[0];
        assert!(
            answer.starts_with("error: the MCP server `h` stopped (signal: 9"),
            "{answer}"
        );
        let later = &tool_messages(&requests[2])[1];
        assert!(
            later.starts_with("error: not run: the MCP server `h` stopped earlier in this run"),
            "{later}"
        );
    }
}

/// Starting and stopping: a server that never answers, one that leaves daemons.
mod lifecycle {
    use super::*;

    /// A server that never answers `initialize` is killed at its startup timeout, with its words.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_server_that_never_answers_is_killed_at_the_startup_timeout() {
        let dir = TempDir::new("mcp-hang");
        let mark = unique_mark("hang");
        let settings = format!("startup_timeout_s: 2, env: {{LLLM_TEST_MARK: {mark}}}");
        let outcome = list(&dir, &server("hang", &settings), "[h]").await;
        outcome.assert_clean(
            1,
            &[
                "MCP server `h` did not start within 2 s (startup_timeout_s)",
                "hostile_server: hanging",
            ],
        );
        assert!(
            outcome.elapsed < Duration::from_secs(6),
            "{:?}",
            outcome.elapsed
        );
        assert!(
            eventually(Duration::from_secs(5), || marked_processes(&mark)
                .is_empty()),
            "left behind: {:?}",
            marked_processes(&mark)
        );
    }

    /// A server that starts daemons (a child in a session of its own, a double-forked grandchild,
    /// one that also clears its environment): none is left once lllm has exited, after a run or a
    /// listing.
    #[tokio::test(flavor = "multi_thread")]
    async fn daemons_of_a_server_do_not_outlive_lllm() {
        let dir = TempDir::new("mcp-daemon");
        let pids = dir.path("pids");
        let settings = format!("env: {{LLLM_TEST_PIDS: {}}}", arg(&pids));
        let (outcome, requests) = run(
            &dir,
            &server("daemon", &settings),
            &[&[("c1", "t", r#"{"how": "pid"}"#)]],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        let server_pid: u32 = tool_messages(&requests[1])[0]
            .parse()
            .expect("the server's pid");
        let listing = list(&dir, &server("daemon", &settings), "[h]").await;
        listing.assert_clean(0, &[]);
        let daemons: Vec<u32> = std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert_eq!(daemons.len(), 6, "three daemons per start: {daemons:?}");
        let gone = eventually(Duration::from_secs(5), || {
            !running(server_pid) && daemons.iter().all(|pid| !running(*pid))
        });
        let left: Vec<u32> = daemons.into_iter().filter(|pid| running(*pid)).collect();
        for pid in &left {
            // Do not leave them to the machine.
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(*pid).expect("pid")),
                nix::sys::signal::Signal::SIGKILL,
            )
            .ok();
        }
        assert!(gone, "left behind: {left:?}");
    }
}

/// Credentials quoted back by a server, in its errors and on its stderr.
mod secrets {
    use super::*;

    const TOKEN: &str = "tok-hostile-0123456789";

    /// A stdio server's `*_TOKEN` variable, quoted back in its errors and on its stderr.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_env_token_quoted_back_is_never_shown() {
        let dir = TempDir::new("mcp-secret-env");
        let settings = "env: {API_TOKEN: \"${HOSTILE_TOKEN}\"}";
        let file = dir.write(
            "t.yaml",
            tactic(
                "http://127.0.0.1:9/v1",
                &server("secret-list", settings),
                "[h]",
            ),
        );
        lllm(&["tools", arg(&file)])
            .env("HOSTILE_TOKEN", TOKEN)
            .run()
            .await
            .assert_clean(
                1,
                &[
                    "MCP server `h` did not start",
                    "token [redacted] was refused",
                    "bad token [redacted]",
                ],
            )
            .assert_never_shows(TOKEN);
        let (outcome, requests) = run(
            &dir,
            &server("serve", settings),
            &[
                &[("c1", "t", r#"{"how": "secret"}"#)],
                &[("c2", "t", r#"{"how": "die"}"#)],
            ],
            |l| l.env("HOSTILE_TOKEN", TOKEN),
        )
        .await;
        // The server's last words, shown when it dies, quote the token too.
        outcome
            .assert_clean(0, &["MCP server `h` stopped", "refusing token [redacted]"])
            .assert_never_shows(TOKEN);
        assert_eq!(
            tool_messages(&requests[1]),
            ["error: the server refused the call: your token [redacted] has expired"]
        );
    }

    /// The hostile server over streamable HTTP on 127.0.0.1, in `mode`; its URL.
    pub(super) async fn http_server(mode: &str) -> (tokio::process::Child, String) {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(python())
            .arg(hostile_server())
            .args(["http", mode])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        tokio::time::timeout(
            Duration::from_secs(10),
            tokio::io::BufReader::new(stdout).read_line(&mut line),
        )
        .await
        .expect("the HTTP server says its port")
        .expect("read");
        let port = line
            .trim()
            .strip_prefix("port ")
            .expect("port N")
            .to_owned();
        (child, format!("http://127.0.0.1:{port}/mcp"))
    }

    /// An HTTP server quoting the Authorization header back, in its listing's error and in a call's.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_authorization_header_quoted_back_is_never_shown() {
        let dir = TempDir::new("mcp-secret-http");
        let headers = "headers: {Authorization: \"Bearer ${HOSTILE_TOKEN}\"}";
        let (_listing, url) = http_server("list-echo").await;
        let file = dir.write(
            "t.yaml",
            tactic(
                "http://127.0.0.1:9/v1",
                &format!("{{url: \"{url}\", {headers}}}"),
                "[h]",
            ),
        );
        lllm(&["tools", arg(&file)])
            .env("HOSTILE_TOKEN", TOKEN)
            .run()
            .await
            .assert_clean(1, &["MCP server `h` did not start", "who is"])
            .assert_never_shows(TOKEN);

        let (_serving, url) = http_server("serve").await;
        let (outcome, requests) = run(
            &dir,
            &format!("{{url: \"{url}\", {headers}}}"),
            &[&[("c1", "t", r#"{"how": "secret"}"#)]],
            |l| l.env("HOSTILE_TOKEN", TOKEN),
        )
        .await;
        outcome.assert_clean(0, &[]).assert_never_shows(TOKEN);
        let answer = &tool_messages(&requests[1])[0];
        assert!(
            answer.starts_with("error: the server refused the call"),
            "{answer}"
        );
        assert!(
            !answer.contains(TOKEN),
            "the model is not told either: {answer}"
        );
    }

    /// Credentials in an HTTP server's `url:` reach it as `Authorization: Basic <base64>`. Quoted
    /// back, in a listing's error or a call's, they are shown in no form, as a `headers:` value
    /// is not, and the model is not told them either.
    #[tokio::test(flavor = "multi_thread")]
    async fn credentials_in_the_url_quoted_back_are_never_shown() {
        const PASSWORD: &str = "mcp-pass-9d2a51";
        let forms = [
            PASSWORD,
            "mcp-user:mcp-pass-9d2a51",
            "bWNwLXVzZXI6bWNwLXBhc3MtOWQyYTUx",
        ];
        let with_credentials =
            |url: &str| url.replace("http://", "http://mcp-user:mcp-pass-9d2a51@");
        let dir = TempDir::new("mcp-secret-url");
        let (_listing, url) = http_server("list-echo").await;
        let file = dir.write(
            "t.yaml",
            tactic(
                "http://127.0.0.1:9/v1",
                &format!("{{url: \"{}\"}}", with_credentials(&url)),
                "[h]",
            ),
        );
        let listing = lllm(&["tools", arg(&file)]).run().await;
        listing.assert_clean(1, &["MCP server `h` did not start", "who is [redacted]?"]);
        for form in forms {
            listing.assert_never_shows(form);
        }

        let (_serving, url) = http_server("serve").await;
        let (outcome, requests) = run(
            &dir,
            &format!("{{url: \"{}\"}}", with_credentials(&url)),
            &[&[("c1", "t", r#"{"how": "secret"}"#)]],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        let answer = &tool_messages(&requests[1])[0];
        assert!(
            answer.starts_with("error: the server refused the call: your token [redacted]"),
            "{answer}"
        );
        for form in forms {
            outcome.assert_never_shows(form);
            assert!(!answer.contains(form), "the model is told {form}: {answer}");
        }
    }
}

/// MCP over HTTP, failing: what failed is said in words, as for a server run as a program, never
/// with the SDK's internal type names (`rmcp::transport::worker::WorkerTransport<…>`).
mod http {
    use lllm_runtime::testing::{HostileReply, HostileServer};

    use super::*;

    /// Asserts that stderr names none of the SDK's types.
    #[track_caller]
    fn assert_no_type_names(text: &str) {
        for internal in ["rmcp::", "Transport [", "WorkerTransport", "reqwest::"] {
            assert!(!text.contains(internal), "`{internal}` in: {text}");
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_server_that_cannot_be_used_is_described_in_words() {
        let reply = |status, kind, body: &str| {
            HostileReply::http(status, &[("content-type", kind)], body.to_owned())
        };
        let missing = HostileServer::start(reply(404, "text/plain", "no such page"))
            .await
            .expect("server");
        let page = HostileServer::start(reply(200, "text/html", "<html>welcome</html>"))
            .await
            .expect("server");
        let moved = HostileServer::start(HostileReply::redirect(307, "http://127.0.0.1:9/mcp"))
            .await
            .expect("server");
        let cases = [
            (
                "http://127.0.0.1:9/mcp".to_owned(),
                "the MCP handshake failed: cannot connect to the server: Connection refused",
            ),
            (
                format!("http://{}/mcp", missing.addr()),
                "the MCP handshake failed: the server answered HTTP 404 Not Found: no such page",
            ),
            (
                format!("http://{}/mcp", page.addr()),
                "the MCP handshake failed: the server answered with content type `text/html`, neither JSON nor an event stream",
            ),
            (
                format!("http://{}/mcp", moved.addr()),
                "the MCP handshake failed: the server answered HTTP 307 Temporary Redirect, a redirect; redirects are not followed",
            ),
        ];
        let dir = TempDir::new("mcp-http-words");
        for (url, expected) in cases {
            let outcome = list(&dir, &format!("{{url: \"{url}\"}}"), "[h]").await;
            outcome.assert_clean(1, &["MCP server `h` did not start", expected]);
            assert_no_type_names(&outcome.stderr);
        }
        assert_eq!(moved.connections(), 1, "the redirect was not followed");
    }

    /// A call answered with an HTTP error instead of a JSON-RPC message: an error result in words.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_call_answered_with_an_http_error_is_described_in_words() {
        let dir = TempDir::new("mcp-http-call");
        let (_serving, url) = secrets::http_server("serve").await;
        let (outcome, requests) = run(
            &dir,
            &format!("{{url: \"{url}\"}}"),
            &[&[("c1", "t", r#"{"how": "http-error"}"#)]],
            |l| l,
        )
        .await;
        outcome.assert_clean(0, &[]);
        assert_no_type_names(&outcome.stderr);
        let answer = &tool_messages(&requests[1])[0];
        assert_no_type_names(answer);
        assert_eq!(
            answer,
            "error: the MCP server `h` could not be reached (the server answered HTTP 502); the call may be tried again later"
        );
    }
}
