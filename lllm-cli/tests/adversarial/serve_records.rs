//! What `lllm serve` leaves on disk for a run, against a client that reads the run and a server
//! killed right after: a pause shows only once the run's record holds the id of its last event, and
//! a run killed while it ran shows its failure after every event a client saw. The moment between
//! "the run paused" and "its record is written" is held open by the test (the record is written
//! through a full pipe it drains when it chose), so no clock decides what is seen.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::{json, Value};

use crate::serve::http;
use crate::serve_runs::{
    body_of, effects, events, events_after, get_json, no_panic, request, tool_tactic, wait_status,
};
use crate::support::{arg, Serving, TempDir};

/// Waits, checking every few milliseconds, until `done` holds; `what` names it when it never does.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(20), "never {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A named pipe at `path`, opened for reading and writing (so that a writer's open never waits)
/// and filled: whoever writes to it waits until the test drains it. Returns it and what it holds.
fn full_pipe(path: &Path) -> (std::fs::File, usize) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .expect("the pipe opens");
    let mut filled = 0;
    for chunk in [4096, 1] {
        loop {
            match pipe.write(&vec![b' '; chunk]) {
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling the pipe: {e}"),
            }
        }
    }
    (pipe, filled)
}

/// Whether process `pid` holds `path` open.
fn holds_open(pid: u32, path: &Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
        })
        .unwrap_or(false)
}

/// Drains `pipe` of its `filled` bytes and returns the JSON value written after them.
fn drained(pipe: &mut std::fs::File, filled: usize) -> Value {
    let mut bytes = Vec::new();
    let mut value = None;
    until("a record written to the pipe", || {
        let mut chunk = [0; 8192];
        match pipe.read(&mut chunk) {
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading the pipe: {e}"),
        }
        value = bytes
            .get(filled..)
            .and_then(|written| serde_json::from_slice(written).ok());
        value.is_some()
    });
    value.expect("a record")
}

/// Sends a chat request of its own to `stub`: a reply held for two requests at once is let go.
fn second_request(stub: &StubServer) {
    let address = stub.base_url();
    let address = address
        .trim_start_matches("http://")
        .trim_end_matches("/v1");
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "release"}]});
    let (status, text) = http(
        address,
        &request("POST", "/v1/chat/completions", &[], &body.to_string()),
    );
    assert_eq!(status, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pause_shows_only_once_the_record_holds_its_last_event() {
    let dir = TempDir::new("serve-record-first");
    let stub = StubServer::start().await.expect("stub");
    let tactic = tool_tactic(&dir, &stub, true);
    let state = dir.path("state");
    // The run's model call is answered once the test sends a request of its own: by then the
    // record's next write goes to a full pipe.
    stub.push(
        StubReply::tool_calls(&[("c1", "act", r#"{"line": "did it"}"#)])
            .for_message("act")
            .together(2),
    );
    let serving = Serving::start(&[arg(&tactic), "--state", arg(&state)], &[]);
    let (address, pid) = (serving.address().to_owned(), serving.pid());
    let record = tokio::task::spawn_blocking(move || {
        let body = json!({"model": "worker", "input": "act"}).to_string();
        let (_, text) = http(&address, &request("POST", "/v1/runs", &[], &body));
        let id = body_of(&text)["id"].as_str().expect("id").to_owned();
        // The record is written to a temporary file, then renamed: the temporary file is the pipe.
        let temporary: PathBuf = state.join("runs").join(format!(".{id}.json.tmp"));
        let (mut pipe, filled) = full_pipe(&temporary);
        until("the run's model call", || stub.requests().len() == 1);
        second_request(&stub);
        // The server writes the record at the pause: it holds the pipe open and waits to write.
        until("the record written at the pause", || {
            holds_open(pid, &temporary)
        });
        let run = get_json(&address, &format!("/v1/runs/{id}"));
        assert_eq!(
            run["status"], "running",
            "the pause shows before its record: {run}"
        );
        assert!(run.get("pending").is_none(), "{run}");
        let written = drained(&mut pipe, filled);
        let run = wait_status(&address, &id, "requires_action");
        assert_eq!(run["pending"][0]["id"], "c1", "{run}");
        let seen = events_after(&address, &id, 0);
        (written, seen)
    })
    .await
    .expect("client");
    let (written, seen) = record;
    let (last, name, data) = seen.last().cloned().expect("events");
    assert_eq!(
        (name.as_str(), &data["status"]),
        ("status", &json!("requires_action"))
    );
    assert_eq!(written["last_event"], last, "{written} vs {seen:?}");
    assert!(written.get("running").is_none(), "{written}");
    assert!(written.get("status").is_none(), "{written}");
    no_panic(&serving);
}

/// A live run's events after `after`, read until one satisfies `enough` (the stream goes on).
fn events_until(
    address: &str,
    id: &str,
    after: u64,
    enough: impl Fn(&(u64, String, Value)) -> bool,
) -> Vec<(u64, String, Value)> {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    let asked = format!(
        "GET /v1/runs/{id}/events HTTP/1.0\r\nHost: 127.0.0.1\r\nLast-Event-ID: {after}\r\n\r\n"
    );
    stream.write_all(asked.as_bytes()).expect("write");
    let mut text = String::new();
    loop {
        let mut chunk = [0; 8192];
        let n = stream.read(&mut chunk).expect("the run's events");
        assert!(n > 0, "the stream ended: {text}");
        text.push_str(&String::from_utf8_lossy(&chunk[..n]));
        let seen = events(&text);
        if seen.iter().any(&enough) {
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_killed_while_it_ran_shows_its_failure_after_every_event_seen() {
    let dir = TempDir::new("serve-killed-running");
    let stub = StubServer::start().await.expect("stub");
    let tactic = tool_tactic(&dir, &stub, true);
    let state = dir.path("state");
    stub.push(StubReply::tool_calls(&[(
        "c1",
        "act",
        r#"{"line": "did it"}"#,
    )]));
    // The continuation's model call is never answered: the server is killed while it waits.
    stub.push(StubReply::text("late").delay(Duration::from_secs(3600)));
    let args = [arg(&tactic), "--state", arg(&state)];
    let serving = Serving::start(&args, &[]);
    let address = serving.address().to_owned();
    let (id, paused, seen) = tokio::task::spawn_blocking(move || {
        let body = json!({"model": "worker", "input": "act"}).to_string();
        let (_, text) = http(&address, &request("POST", "/v1/runs", &[], &body));
        let id = body_of(&text)["id"].as_str().expect("id").to_owned();
        wait_status(&address, &id, "requires_action");
        let paused = events_after(&address, &id, 0).last().expect("events").0;
        let approval = request(
            "POST",
            &format!("/v1/runs/{id}/approval"),
            &[],
            r#"{"decision": "approve"}"#,
        );
        let (status, text) = http(&address, &approval);
        assert_eq!(status, 200, "{text}");
        // The approved call ran; the continuation's model call waits.
        let seen = events_until(&address, &id, paused, |e| e.1 == "tool_result");
        (id, paused, seen)
    })
    .await
    .expect("first server");
    no_panic(&serving);
    drop(serving); // SIGKILL, while the run runs

    let last_seen = seen.last().expect("events").0;
    assert!(last_seen > paused, "{seen:?}");
    let serving = Serving::start(&args, &[]);
    let address = serving.address().to_owned();
    let (run, after, all) = tokio::task::spawn_blocking(move || {
        let run = get_json(&address, &format!("/v1/runs/{id}"));
        let after = events_after(&address, &id, last_seen);
        let all = events_after(&address, &id, 0);
        (run, after, all)
    })
    .await
    .expect("second server");
    assert_eq!(run["status"], "failed", "{run}");
    // The client that reconnects with the last id it saw gets the failure, numbered after it.
    assert_eq!(after.len(), 1, "after {last_seen}: {after:?}");
    assert_eq!(after[0].2["status"], "failed", "{after:?}");
    assert!(after[0].0 > last_seen, "after {last_seen}: {after:?}");
    assert_eq!(all, after, "one status event");
    assert_eq!(effects(&dir), ["did it"]);
    no_panic(&serving);
}
