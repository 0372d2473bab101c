//! MCP servers end to end, against real servers from the package registries: the reference server
//! `@modelcontextprotocol/server-everything` (stdio and streamable HTTP), `mcp-server-time`, and
//! `tests/mcp/fault_server.py` (written with the official Python SDK) for the faults.
//!
//! `scripts/test.sh` installs them (`scripts/servers/mcp.sh install`) and sets `LLLM_MCP_EVERYTHING`,
//! `LLLM_MCP_TIME`, `LLLM_MCP_PYTHON` and `LLLM_REQUIRE_MCP=1`. Without those variables each test says
//! so and passes without checking, unless `LLLM_REQUIRE_MCP=1`, which makes them fail.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lllm_runtime::testing::{RecordedRequest, StubReply, StubServer};
use serde_json::Value;

use crate::support::{
    arg, lllm, marked_processes, running, tool_messages, unique_mark, Outcome, TempDir,
};

/// The installed servers.
pub(super) struct Servers {
    pub(super) everything: String,
    pub(super) time: String,
    pub(super) python: String,
}

#[allow(clippy::print_stderr)]
pub(super) fn servers(test: &str) -> Option<Servers> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("LLLM_MCP_EVERYTHING"), var("LLLM_MCP_TIME"), var("LLLM_MCP_PYTHON")) {
        (Some(everything), Some(time), Some(python)) => Some(Servers {
            everything,
            time,
            python,
        }),
        _ if std::env::var("LLLM_REQUIRE_MCP").as_deref() == Ok("1") => panic!(
            "{test}: LLLM_MCP_EVERYTHING, LLLM_MCP_TIME and LLLM_MCP_PYTHON must be set: run `eval \"$(scripts/servers/mcp.sh install)\"` (scripts/test.sh does)"
        ),
        _ => {
            eprintln!("{test}: skipped: the MCP servers are not installed (scripts/servers/mcp.sh install; scripts/test.sh runs this suite)");
            None
        }
    }
}

fn fault_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fault_server.py")
}

/// A YAML flow list of strings.
pub(super) fn list(items: &[&str]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| serde_json::to_string(s).expect("string"))
        .collect();
    format!("[{}]", quoted.join(", "))
}

impl Servers {
    /// The fault server on stdio, with extra arguments and settings (YAML flow mapping entries).
    fn fault(&self, args: &[&str], settings: &str) -> String {
        let fault = fault_server();
        let mut command = vec![self.python.as_str(), arg(&fault)];
        command.extend_from_slice(args);
        let extra = if settings.is_empty() {
            String::new()
        } else {
            format!(", {settings}")
        };
        format!("{{command: {}{extra}}}", list(&command))
    }
}

/// A tactic with these servers (YAML mapping entries, two spaces in) and one agent using `mcp`.
pub(super) fn tactic(api_base: &str, servers: &str, mcp: &str, extra_agent: &str) -> String {
    format!(
        "mcp_servers:\n{servers}\nagent_configs:\n  - name: a\n    model_name: m\n    system_prompt: You use tools.\n    model_args: {{api_base: \"{api_base}\", timeout: 60}}\n    inference_hints: {{profile: dynamo, session_prefix: mcp-test}}\n    max_tool_rounds: 4\n    mcp: {mcp}\n{extra_agent}"
    )
}

pub(super) fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits up to `patience` for `done`.
async fn eventually(patience: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < patience {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_lists_every_agents_tools_with_filters_prefixes_and_schemas() {
    let Some(s) = servers("tools listing") else {
        return;
    };
    let dir = TempDir::new("mcp-tools");
    let servers = format!(
        "  every: {{command: {}, prefix: ev_, confirm: [echo]}}\n  time: {{command: {}}}\n  fault: {}",
        list(&[&s.everything, "stdio"]),
        list(&[&s.time, "--local-timezone", "UTC"]),
        s.fault(&[], "")
    );
    let extra = "    tools:\n      - {name: shout, description: Says it loud, command: [echo], confirm: true}\n";
    let file = dir.write(
        "t.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &servers,
            "{every: {include: [echo, get-sum]}, time: null, fault: {exclude: [crash, spawn_sleeper]}}",
            extra,
        ),
    );
    let check = lllm(&["check", arg(&file)]).run().await;
    check.assert_clean(0, &[]);
    assert!(
        check
            .stdout_text()
            .contains("; MCP server(s) every, time, fault (not started: `lllm tools` starts them"),
        "{}",
        check.stdout_text()
    );
    let outcome = lllm(&["tools", arg(&file), "--json"]).run().await;
    outcome.assert_clean(0, &[]);
    let listing: Value = serde_json::from_slice(&outcome.stdout).expect("JSON");
    let tools = listing["agents"][0]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(&names[..3], ["shout", "ev_echo", "ev_get-sum"], "{names:?}");
    assert!(names.contains(&"get_current_time") && names.contains(&"convert_time"));
    assert!(
        names.contains(&"echo") && names.contains(&"slow"),
        "{names:?}"
    );
    assert!(!names.contains(&"crash") && !names.contains(&"spawn_sleeper"));
    let by_name = |name: &str| tools.iter().find(|t| t["name"] == name).expect(name);
    assert_eq!(by_name("shout")["source"], "a command tool");
    assert_eq!(by_name("shout")["confirm"], true);
    assert_eq!(by_name("ev_echo")["source"], "MCP server `every`");
    assert_eq!(by_name("ev_echo")["confirm"], true);
    assert_eq!(by_name("ev_get-sum")["confirm"], false);
    assert_eq!(
        by_name("ev_echo")["parameters"]["required"],
        serde_json::json!(["message"])
    );
    assert_eq!(
        by_name("get_current_time")["parameters"]["properties"]["timezone"]["type"],
        "string"
    );
    let text = lllm(&["tools", arg(&file)]).run().await;
    text.assert_clean(0, &[]);
    let text = text.stdout_text();
    assert!(
        text.contains("ev_echo (MCP server `every`, asks before it runs)")
            && text.contains("Echoes back the input")
            && text.contains("\"message\""),
        "{text}"
    );
    assert!(
        marked_processes("never-set").is_empty(),
        "the helper works on an empty set"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_and_their_results_reach_the_next_request_with_the_same_session() {
    let Some(s) = servers("calls and results") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[
        ("c1", "ev_echo", r#"{"message": "hi there"}"#),
        ("c2", "get_current_time", r#"{"timezone": "UTC"}"#),
        ("c3", "fail", r#"{"reason": "disk full"}"#),
        ("c4", "image", "{}"),
        ("c5", "resource", "{}"),
        ("c6", "add_structured", r#"{"a": 2, "b": 3}"#),
        ("c7", "add", r#"{"a": "two", "b": 3}"#),
    ]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-calls");
    let servers = format!(
        "  every: {{command: {}, prefix: ev_}}\n  time: {{command: {}}}\n  fault: {}",
        list(&[&s.everything, "stdio"]),
        list(&[&s.time, "--local-timezone", "UTC"]),
        s.fault(&[], "")
    );
    let file = dir.write(
        "t.yaml",
        tactic(&server.base_url(), &servers, "[every, time, fault]", ""),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go", "--json"])
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    let report: Value = serde_json::from_slice(&outcome.stdout).expect("JSON");
    assert_eq!(report["answer"], "done");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let offered = offered_tools(&requests[0]);
    for name in ["ev_echo", "get_current_time", "fail", "add_structured"] {
        assert!(offered.contains(&name.to_owned()), "{name}: {offered:?}");
    }
    let echo = requests[0].body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["function"]["name"] == "ev_echo"))
        .expect("ev_echo offered");
    assert_eq!(
        echo["function"]["description"],
        "Echoes back the input string"
    );
    assert!(
        echo["function"]["parameters"].get("$schema").is_none(),
        "$schema is left out: {echo}"
    );
    let results = tool_messages(&requests[1]);
    assert_eq!(results.len(), 7, "{results:?}");
    assert_eq!(results[0], "Echo: hi there");
    let time: Value = serde_json::from_str(&results[1]).expect("structuredContent as JSON");
    assert_eq!(time["timezone"], "UTC");
    assert!(time["datetime"].is_string(), "{time}");
    assert_eq!(results[2], "error: disk full");
    assert!(
        results[3].starts_with("[image: image/png, ") && results[3].ends_with(" bytes]"),
        "{}",
        results[3]
    );
    assert_eq!(
        results[4],
        "[resource: file:///tmp/x.txt, text/plain, 5 bytes]"
    );
    assert_eq!(results[5], r#"{"sum":5}"#);
    assert!(
        results[6].starts_with("error: the arguments do not match the tool's parameters"),
        "checked against the server's schema before the call: {}",
        results[6]
    );
    let session = requests[0].header("x-dynamo-session-id").expect("session");
    assert!(session.starts_with("mcp-test:"), "{session}");
    assert_eq!(requests[1].header("x-dynamo-session-id"), Some(session));
}

/// A free port on 127.0.0.1 (bound, then released for the server to take).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// Starts a server process and waits until `port` accepts connections.
async fn http_server(mut command: tokio::process::Command, port: u16) -> tokio::process::Child {
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("server starts");
    let up = eventually(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await;
    assert!(up, "the HTTP server did not listen on {port}");
    child
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_servers_work_like_stdio_ones() {
    let Some(s) = servers("streamable HTTP") else {
        return;
    };
    let (every_port, fault_port) = (free_port(), free_port());
    let mut every = tokio::process::Command::new(&s.everything);
    every
        .arg("streamableHttp")
        .env("PORT", every_port.to_string());
    let _every = http_server(every, every_port).await;
    let mut fault = tokio::process::Command::new(&s.python);
    fault
        .arg(fault_server())
        .args(["--http", &fault_port.to_string()]);
    let _fault = http_server(fault, fault_port).await;

    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[
        ("c1", "echo", r#"{"message": "over http"}"#),
        ("c2", "f_fail", r#"{"reason": "nope"}"#),
        ("c3", "f_add_structured", r#"{"a": 1, "b": 1}"#),
    ]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-http");
    let servers = format!(
        "  every: {{url: \"http://127.0.0.1:{every_port}/mcp\", headers: {{Authorization: \"Bearer ${{MCP_TOKEN}}\"}}}}\n  fault: {{url: \"http://127.0.0.1:{fault_port}/mcp\", prefix: f_}}"
    );
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &servers,
            "{every: {include: [echo]}, fault: {include: [fail, add_structured]}}",
            "",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"])
        .env("MCP_TOKEN", "tok-http-secret-42")
        .run()
        .await;
    outcome
        .assert_clean(0, &[])
        .assert_never_shows("tok-http-secret-42");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        offered_tools(&requests[0]),
        ["echo", "f_add_structured", "f_fail"],
        "in each server's own order"
    );
    assert_eq!(
        tool_messages(&requests[1]),
        ["Echo: over http", "error: nope", r#"{"sum":2}"#]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn name_clashes_and_unknown_tools_are_errors_naming_both_sides() {
    let Some(s) = servers("clashes") else { return };
    let dir = TempDir::new("mcp-clash");
    let two = format!("  one: {}\n  two: {}", s.fault(&[], ""), s.fault(&[], ""));
    let file = dir.write(
        "t.yaml",
        tactic("http://127.0.0.1:9/v1", &two, "[one, two]", ""),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "x", "--dry-run"])
        .run()
        .await;
    outcome.assert_clean(
        2,
        &[
            "two tools are called `echo`",
            "MCP server `one`",
            "MCP server `two`",
            "prefix:",
        ],
    );

    let with_command = dir.write(
        "c.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!("  one: {}", s.fault(&[], "")),
            "[one]",
            "    tools:\n      - {name: echo, description: d, command: [echo]}\n",
        ),
    );
    lllm(&["tools", arg(&with_command)])
        .run()
        .await
        .assert_clean(2, &["`echo`", "a command tool", "MCP server `one`"]);

    let unknown = dir.write(
        "u.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!("  one: {}", s.fault(&[], "confirm: [write_file]")),
            "{one: {include: [echo]}}",
            "",
        ),
    );
    lllm(&["tools", arg(&unknown)]).run().await.assert_clean(
        2,
        &[
            "u.yaml:2:",
            ": mcp_servers.one.confirm: MCP server `one` has no tool `write_file`; its tools are: echo",
        ],
    );
    let include = dir.write(
        "i.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!("  one: {}", s.fault(&[], "")),
            "{one: {include: [echo, get_time]}}",
            "",
        ),
    );
    lllm(&["tools", arg(&include)]).run().await.assert_clean(
        2,
        &[
            "i.yaml:10:26:",
            ": agent_configs[0] (a).mcp.one.include: MCP server `one` has no tool `get_time`",
        ],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_servers_see_only_the_default_environment_and_their_own_env() {
    let Some(s) = servers("environment") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    let names = [
        "OPENAI_API_KEY",
        "LLLM_SECRET_FOR_TEST",
        "GIVEN",
        "FROM_LLLM",
        "HOME",
        "PATH",
    ];
    let calls: Vec<(String, String)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("c{i}"), format!(r#"{{"name": "{n}"}}"#)))
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "env", args.as_str()))
        .collect();
    server.push(StubReply::tool_calls(&calls));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-env");
    let fault = s.fault(&[], "env: {GIVEN: \"yes ${FROM_LLLM}\"}");
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &format!("  fault: {fault}"),
            "[fault]",
            "",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"])
        .env("OPENAI_API_KEY", "sk-never-for-servers-123456")
        .env("LLLM_SECRET_FOR_TEST", "also-never-987654")
        .env("FROM_LLLM", "named")
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    let results = tool_messages(&server.requests()[1]);
    assert_eq!(results[0], "<unset>", "API keys stay with lllm");
    assert_eq!(results[1], "<unset>", "the rest of lllm's environment too");
    assert_eq!(
        results[2], "yes named",
        "env: is added, with ${{}} expanded"
    );
    assert_eq!(results[3], "<unset>", "only through env:");
    assert_eq!(results[4], std::env::var("HOME").expect("HOME"));
    assert_eq!(results[5], std::env::var("PATH").expect("PATH"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_leaves_no_server_process_behind() {
    let Some(s) = servers("shutdown") else { return };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[
        ("c1", "spawn_sleeper", "{}"),
        ("c2", "pid", "{}"),
    ]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-shutdown");
    let mark = unique_mark("shutdown");
    let fault = s.fault(&[], &format!("env: {{LLLM_TEST_MARK: {mark}}}"));
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &format!("  fault: {fault}"),
            "[fault]",
            "",
        ),
    );
    lllm(&["run", arg(&file), "--input", "go"])
        .run()
        .await
        .assert_clean(0, &[]);
    let results = tool_messages(&server.requests()[1]);
    let sleeper: u32 = results[0].trim().parse().expect("the sleeper's pid");
    let server_pid: u32 = results[1].trim().parse().expect("the server's pid");
    let gone = eventually(Duration::from_secs(5), || {
        !running(sleeper) && !running(server_pid) && marked_processes(&mark).is_empty()
    })
    .await;
    assert!(
        gone,
        "left behind: sleeper {sleeper} {}, server {server_pid} {}, marked {:?}",
        running(sleeper),
        running(server_pid),
        marked_processes(&mark)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_dies_mid_call_is_an_error_result_and_the_run_goes_on() {
    let Some(s) = servers("death") else { return };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[("c1", "crash", "{}")]));
    server.push(StubReply::tool_calls(&[(
        "c2",
        "echo",
        r#"{"text": "still?"}"#,
    )]));
    server.push(StubReply::text("carried on"));
    let dir = TempDir::new("mcp-death");
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &format!("  fault: {}", s.fault(&[], "")),
            "[fault]",
            "",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &["MCP server `fault` stopped", "crashing on purpose"]);
    assert_eq!(outcome.stdout_text().trim(), "carried on");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let after_crash = tool_messages(&requests[1]);
    assert!(
        after_crash[0].starts_with("error: the MCP server `fault` stopped"),
        "{after_crash:?}"
    );
    let later = tool_messages(&requests[2]);
    assert!(
        later[1].starts_with("error: not run: the MCP server `fault` stopped earlier in this run"),
        "{later:?}"
    );
    assert_eq!(
        outcome.stderr.matches("MCP server `fault` stopped").count(),
        1,
        "said once: {}",
        outcome.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_tool_past_its_timeout_is_an_error_result() {
    let Some(s) = servers("timeout") else { return };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "slow",
        r#"{"seconds": 30}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "c2",
        "echo",
        r#"{"text": "after"}"#,
    )]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-timeout");
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &format!("  fault: {}", s.fault(&[], "timeout_s: 1")),
            "[fault]",
            "",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    assert!(
        outcome.elapsed < Duration::from_secs(15),
        "{:?}",
        outcome.elapsed
    );
    let requests = server.requests();
    assert_eq!(
        tool_messages(&requests[1]),
        ["error: the tool did not answer within 1 s (timeout_s of MCP server `fault`); try a smaller request"]
    );
    assert_eq!(
        tool_messages(&requests[2])[1],
        "after",
        "the server still answers"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_that_do_not_start_are_named_with_their_last_words() {
    let Some(s) = servers("startup") else { return };
    let dir = TempDir::new("mcp-start");
    let dies = dir.write(
        "d.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!("  fault: {}", s.fault(&["--die-at-start"], "")),
            "[fault]",
            "",
        ),
    );
    lllm(&["run", arg(&dies), "--input", "x"])
        .run()
        .await
        .assert_clean(
            1,
            &[
                "MCP server `fault` did not start",
                "cannot start: bad config",
            ],
        );

    let mark = unique_mark("hang");
    let hangs = dir.write(
        "h.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!(
                "  fault: {}",
                s.fault(
                    &["--hang-at-start"],
                    // The fault server imports the Python SDK (0.75 s on an idle machine, over
                    // 2 s under a parallel build) before it writes the line the message must show.
                    &format!("startup_timeout_s: 5, env: {{LLLM_TEST_MARK: {mark}}}")
                )
            ),
            "[fault]",
            "",
        ),
    );
    let outcome = lllm(&["tools", arg(&hangs)]).run().await;
    outcome.assert_clean(
        1,
        &[
            "MCP server `fault` did not start within 5 s",
            "hanging at start",
        ],
    );
    assert!(
        outcome.elapsed < Duration::from_secs(10),
        "{:?}",
        outcome.elapsed
    );
    assert!(
        eventually(Duration::from_secs(5), || marked_processes(&mark)
            .is_empty())
        .await,
        "the hung server was killed"
    );

    let closed = dir.write(
        "c.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!(
                "  web: {{url: \"http://user:pw-hunter2-secret@127.0.0.1:{}/mcp\", startup_timeout_s: 5}}",
                free_port()
            ),
            "[web]",
            "",
        ),
    );
    lllm(&["tools", arg(&closed)])
        .run()
        .await
        .assert_clean(1, &["MCP server `web` did not start"])
        .assert_never_shows("pw-hunter2-secret");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_an_mcp_call_stops_the_run_and_the_server() {
    let Some(s) = servers("ctrl-c") else { return };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "slow",
        r#"{"seconds": 60}"#,
    )]));
    server.push(StubReply::text("never"));
    let dir = TempDir::new("mcp-sigint");
    let mark = unique_mark("sigint");
    let fault = s.fault(&[], &format!("env: {{LLLM_TEST_MARK: {mark}}}"));
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &format!("  fault: {fault}"),
            "[fault]",
            "",
        ),
    );
    let running_lllm = lllm(&["run", arg(&file), "--input", "go"]).spawn();
    let asked = eventually(Duration::from_secs(20), || server.requests().len() == 1).await;
    assert!(asked, "the first request arrived");
    // The call is in flight once the model's answer arrived; give it a moment to reach the server.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!marked_processes(&mark).is_empty(), "the server runs");
    running_lllm.signal(nix::sys::signal::Signal::SIGINT);
    let outcome = tokio::task::spawn_blocking(move || running_lllm.wait())
        .await
        .expect("wait");
    outcome.assert_clean(130, &["stopped by SIGINT"]);
    assert!(
        outcome.elapsed < Duration::from_secs(25),
        "{:?}",
        outcome.elapsed
    );
    assert!(
        eventually(Duration::from_secs(5), || marked_processes(&mark)
            .is_empty())
        .await,
        "left behind: {:?}",
        marked_processes(&mark)
    );
    assert_eq!(server.requests().len(), 1, "nothing after the stop");
}

/// A tactic whose `echo` (MCP) and `shout` (command tool) need confirmation.
fn confirming_tactic(s: &Servers, api_base: &str) -> String {
    tactic(
        api_base,
        &format!("  fault: {}", s.fault(&[], "confirm: [echo]")),
        "[fault]",
        "    tools:\n      - {name: shout, description: Says it loud, parameters: {type: object, properties: {text: {type: string}}}, command: [echo, \"{{ text }}\"], confirm: true}\n",
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn confirmation_is_declined_without_a_terminal_and_approved_with_yes() {
    let Some(s) = servers("confirmation") else {
        return;
    };
    let dir = TempDir::new("mcp-confirm");
    for yes in [false, true] {
        let server = StubServer::start().await.expect("stub");
        server.push(StubReply::tool_calls(&[
            ("c1", "echo", r#"{"text": "hi"}"#),
            ("c2", "shout", r#"{"text": "HEY"}"#),
            ("c3", "add", r#"{"a": 1, "b": 2}"#),
        ]));
        server.push(StubReply::text("done"));
        let file = dir.write("t.yaml", confirming_tactic(&s, &server.base_url()));
        let mut args = vec!["run", arg(&file), "--input", "go"];
        if yes {
            args.push("--yes");
        }
        let outcome = lllm(&args).run().await;
        let results = tool_messages(&server.requests()[1]);
        if yes {
            outcome.assert_clean(0, &[]);
            assert_eq!(results, ["hi", "HEY", "3"]);
            assert!(!outcome.stderr.contains("declined"), "{}", outcome.stderr);
        } else {
            outcome.assert_clean(
                0,
                &[
                    "declined a call of `echo` (MCP server `fault`)",
                    "declined a call of `shout` (a command tool)",
                    "--yes",
                ],
            );
            assert!(
                results[0].starts_with("error: the user declined this call"),
                "{results:?}"
            );
            assert!(
                results[1].starts_with("error: the user declined this call"),
                "{results:?}"
            );
            assert_eq!(results[2], "3", "tools without confirm run");
        }
    }
}

/// Runs `lllm` on a pseudo-terminal (`script`), typing `answers` (one per prompt) as prompts appear.
async fn on_a_terminal(lllm_args: &str, answers: &[&str]) -> (Option<i32>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut child = tokio::process::Command::new("script")
        .args([
            "-qec",
            &format!("{} {lllm_args}", env!("CARGO_BIN_EXE_lllm")),
            "/dev/null",
        ])
        .env_remove("LLLM_LOG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("script (util-linux) runs");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = child.stdout.take().expect("stdout");
    let mut seen = String::new();
    let mut answered = 0;
    let mut buffer = vec![0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        let read = tokio::time::timeout_at(deadline, output.read(&mut buffer)).await;
        match read {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
        }
        let prompts = seen.matches("Allow it?").count();
        if prompts > answered && answered < answers.len() {
            input
                .write_all(format!("{}\n", answers[answered]).as_bytes())
                .await
                .expect("type");
            answered += 1;
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    (status.and_then(|s| s.code()), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_asks_and_the_answer_decides() {
    let Some(s) = servers("terminal prompt") else {
        return;
    };
    let dir = TempDir::new("mcp-pty");
    // "n": declined; then "a": approved, with no question for the rest of the run.
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "echo",
        r#"{"text": "first"}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "c2",
        "echo",
        r#"{"text": "second"}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "c3",
        "shout",
        r#"{"text": "third"}"#,
    )]));
    server.push(StubReply::text("done"));
    let file = dir.write("t.yaml", confirming_tactic(&s, &server.base_url()));
    let (code, screen) =
        on_a_terminal(&format!("run {} --input go", arg(&file)), &["n", "a"]).await;
    assert_eq!(code, Some(0), "{screen}");
    assert!(
        screen.contains("agent `a` wants to call `echo` (MCP server `fault`) with:")
            && screen.contains("\"text\": \"first\""),
        "{screen}"
    );
    assert_eq!(screen.matches("Allow it?").count(), 2, "{screen}");
    let requests = server.requests();
    assert!(tool_messages(&requests[1])[0].starts_with("error: the user declined"));
    assert_eq!(tool_messages(&requests[2])[1], "second");
    assert_eq!(
        tool_messages(&requests[3])[2],
        "third",
        "all: not asked again"
    );
    let seen: HashSet<String> = requests
        .iter()
        .filter_map(|r| r.header("x-dynamo-session-id").map(str::to_owned))
        .collect();
    assert_eq!(seen.len(), 1, "one dialog, one session: {seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_lists_mcp_tools_but_calls_none() {
    let Some(s) = servers("dry run") else { return };
    let dir = TempDir::new("mcp-dry");
    let mark = unique_mark("dry");
    let file = dir.write(
        "t.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &format!(
                "  fault: {}",
                s.fault(&[], &format!("env: {{LLLM_TEST_MARK: {mark}}}"))
            ),
            "{fault: {include: [echo, crash]}}",
            "",
        ),
    );
    let outcome: Outcome = lllm(&["run", arg(&file), "--input", "x", "--dry-run"])
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    let line: Value =
        serde_json::from_str(outcome.stdout_text().lines().next().expect("a request"))
            .expect("JSON");
    let names: Vec<&str> = line["body"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "crash"]);
    assert!(
        marked_processes(&mark).is_empty(),
        "shut down after the dry run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_time_example_calls_the_time_server() {
    let Some(s) = servers("the mcp_time example") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "get_current_time",
        r#"{"timezone": "Asia/Tokyo"}"#,
    )]));
    server.push(StubReply::text("It is late afternoon in Tokyo."));
    let tactic = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mcp_time/tactic.yaml");
    let outcome = lllm(&["run", arg(&tactic), "--input", "What time is it in Tokyo?"])
        .env("LLLM_API_BASE", &server.base_url())
        .env("LLLM_MCP_TIME", &s.time)
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    assert_eq!(
        outcome.stdout_text().trim(),
        "It is late afternoon in Tokyo."
    );
    let requests = server.requests();
    assert_eq!(
        offered_tools(&requests[0]),
        ["get_current_time", "convert_time"]
    );
    let time: Value = serde_json::from_str(&tool_messages(&requests[1])[0]).expect("JSON");
    assert_eq!(time["timezone"], "Asia/Tokyo");
    assert!(
        time["datetime"]
            .as_str()
            .is_some_and(|t| t.contains("+09:00")),
        "{time}"
    );
}
