//! What several suites of this binary share: a temporary folder, watching a tool's process, and
//! reading a recorded request's messages.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lllm_runtime::testing::RecordedRequest;

/// A fresh folder under the system's temporary one, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "lllm-it-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Whether process `pid` runs (a zombie does not).
pub(crate) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The process id a tool wrote into `file` once it started (panics after 10 s).
pub(crate) async fn started_pid(file: &Path) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the tool never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for process `pid` to end, failing if it outlives `patience`.
pub(crate) async fn gone_within(pid: i32, patience: Duration, what: &str) {
    let since = Instant::now();
    while alive(pid) {
        assert!(since.elapsed() < patience, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The last user message of a request: which step or dialog sent it.
pub(crate) fn last_user(request: &RecordedRequest) -> String {
    request.body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// The contents of a request's tool messages, in order.
pub(crate) fn tool_results(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect()
}
