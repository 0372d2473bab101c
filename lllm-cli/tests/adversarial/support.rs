//! A bounded runner for the `lllm` binary, and small fixtures shared by the adversarial cases.

#![allow(dead_code)] // Each class module uses its own subset.

use std::io::{BufRead as _, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a case may run before it counts as a hang (generous: CI machines are slow and shared).
pub(crate) const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(30);
/// Peak resident memory a case may reach. lllm itself needs a few tens of MiB.
pub(crate) const DEFAULT_MEMORY_LIMIT_MIB: u64 = 256;

/// A temporary folder, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// A fresh folder under the system's temporary directory.
    pub(crate) fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "lllm-adv-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// Writes `bytes` to `name` (folders created) and returns its path.
    pub(crate) fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("dir");
        }
        std::fs::write(&path, bytes).expect("write");
        path
    }

    /// The path of `name` inside the folder.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A path as the `&str` an argument list wants.
pub(crate) fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// One `lllm` invocation, run with bounds.
pub(crate) struct Lllm {
    command: Command,
    stdin: Vec<u8>,
    time_limit: Duration,
}

/// What a bounded invocation did.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The exit code, or `None` when a signal ended it.
    pub(crate) code: Option<i32>,
    /// The signal that ended it, if one did.
    pub(crate) signal: Option<i32>,
    /// Everything written to standard output.
    pub(crate) stdout: Vec<u8>,
    /// Standard error, lossily decoded.
    pub(crate) stderr: String,
    /// Wall time from start to exit.
    pub(crate) elapsed: Duration,
    /// Whether it was killed for running past its time limit.
    pub(crate) timed_out: bool,
    /// Peak resident memory (MiB): the largest high-water mark (`VmHWM`) seen while it ran, read
    /// every few milliseconds.
    pub(crate) peak_rss_mib: u64,
}

/// `lllm` with these arguments, a clean environment for credentials, and the default time limit.
pub(crate) fn lllm(args: &[&str]) -> Lllm {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
    command.args(args);
    bounded(command)
}

/// `lllm` with these arguments, started by `sh` after `script` runs in that same process: `$$`
/// in the script is the process id `lllm` will have (`exec` keeps it), which lets a case plant
/// what a predictable name would find before `lllm` starts.
pub(crate) fn lllm_after(script: &str, args: &[&str]) -> Lllm {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{script}\nexec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_lllm"))
        .args(args);
    bounded(command)
}

/// `command` with a clean environment for credentials, piped, and the default time limit.
fn bounded(mut command: Command) -> Lllm {
    command
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("LLLM_LOG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Lllm {
        command,
        stdin: Vec::new(),
        time_limit: DEFAULT_TIME_LIMIT,
    }
}

impl Lllm {
    /// Sets an environment variable.
    pub(crate) fn env(mut self, name: &str, value: &str) -> Self {
        self.command.env(name, value);
        self
    }

    /// Bytes written to its standard input (then closed).
    pub(crate) fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// Its working directory.
    pub(crate) fn cwd(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    /// Its time limit (the default is [`DEFAULT_TIME_LIMIT`]).
    pub(crate) fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// Direct access, for what the setters above do not cover (a closed stdout, say).
    pub(crate) fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Starts it without waiting, for cases that act on the running process (signals).
    pub(crate) fn spawn(mut self) -> Running {
        let mut child = self.command.spawn().expect("lllm starts");
        let stdin = child.stdin.take();
        let input = self.stdin;
        std::thread::spawn(move || {
            if let Some(mut pipe) = stdin {
                // lllm may exit without reading its input; that is its right.
                pipe.write_all(&input).ok();
            }
        });
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        Running {
            child,
            stdout,
            stderr,
            started: Instant::now(),
            time_limit: self.time_limit,
        }
    }

    /// Runs it to its end (killed at the time limit) on a blocking thread.
    pub(crate) async fn run(self) -> Outcome {
        tokio::task::spawn_blocking(move || self.spawn().wait())
            .await
            .expect("runner thread")
    }

    /// Runs it to its end from synchronous code.
    pub(crate) fn run_blocking(self) -> Outcome {
        self.spawn().wait()
    }
}

/// A started `lllm`.
pub(crate) struct Running {
    child: std::process::Child,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    started: Instant,
    time_limit: Duration,
}

/// `VmHWM` of a running process, in KiB (0 once it has ended).
fn high_water_mark_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).ok();
        bytes
    })
}

impl Running {
    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends it a signal.
    pub(crate) fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid()).expect("pid"));
        nix::sys::signal::kill(pid, signal).expect("signal sent");
    }

    /// Waits for its end, killing it at the time limit.
    pub(crate) fn wait(mut self) -> Outcome {
        let mut timed_out = false;
        let mut peak_kib = 0;
        let status = loop {
            // The high-water mark only grows, so the last reading before the exit is the peak
            // (but for what it allocated in its last few milliseconds).
            peak_kib = peak_kib.max(high_water_mark_kib(self.child.id()));
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if self.started.elapsed() > self.time_limit {
                timed_out = true;
                self.child.kill().ok();
                break self.child.wait().expect("wait after kill");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = self.started.elapsed();
        let join = |handle: Option<std::thread::JoinHandle<Vec<u8>>>| {
            handle
                .map(|h| h.join().expect("reader thread"))
                .unwrap_or_default()
        };
        use std::os::unix::process::ExitStatusExt;
        Outcome {
            code: status.code(),
            signal: status.signal(),
            stdout: join(self.stdout.take()),
            stderr: String::from_utf8_lossy(&join(self.stderr.take())).into_owned(),
            elapsed,
            timed_out,
            peak_rss_mib: peak_kib / 1024,
        }
    }
}

impl Outcome {
    /// Standard output, lossily decoded.
    pub(crate) fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Asserts the bounds every case shares: it ended by itself within its time limit, with `code`,
    /// no panic or abort, peak memory under [`DEFAULT_MEMORY_LIMIT_MIB`], and a stderr that contains
    /// each of `messages` (when `code` is not 0, at least one line of explanation).
    #[track_caller]
    pub(crate) fn assert_clean(&self, code: i32, messages: &[&str]) -> &Self {
        self.assert_clean_within(code, messages, DEFAULT_MEMORY_LIMIT_MIB)
    }

    /// [`assert_clean`](Self::assert_clean) with another memory bound.
    #[track_caller]
    pub(crate) fn assert_clean_within(
        &self,
        code: i32,
        messages: &[&str],
        memory_mib: u64,
    ) -> &Self {
        let context = format!(
            "code {:?}, signal {:?}, {:?}, {} MiB\nstderr: {}",
            self.code,
            self.signal,
            self.elapsed,
            self.peak_rss_mib,
            excerpt(&self.stderr)
        );
        assert!(!self.timed_out, "it hung: {context}");
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"),
            "it panicked: {context}"
        );
        assert_eq!(self.code, Some(code), "wrong exit: {context}");
        assert!(
            self.peak_rss_mib <= memory_mib,
            "it used more than {memory_mib} MiB: {context}"
        );
        if code != 0 {
            assert!(
                self.stderr.lines().any(|l| !l.trim().is_empty()),
                "it failed without a word: {context}"
            );
        }
        for message in messages {
            assert!(
                self.stderr.contains(message),
                "missing `{message}`: {context}"
            );
        }
        self
    }

    /// Asserts that neither output contains `secret`.
    #[track_caller]
    pub(crate) fn assert_never_shows(&self, secret: &str) -> &Self {
        assert!(
            !self.stderr.contains(secret) && !self.stdout_text().contains(secret),
            "a secret was printed: {}",
            excerpt(&self.stderr)
        );
        self
    }
}

/// The first few KiB of a long text, for failure messages.
pub(crate) fn excerpt(text: &str) -> &str {
    let mut end = text.len().min(4096);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The tool messages of a recorded request, in order.
pub(crate) fn tool_messages(request: &lllm_runtime::testing::RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a process runs (zombies count as ended).
pub(crate) fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Processes whose environment holds `LLLM_TEST_MARK=<mark>` and that still run: a test puts the
/// mark in a server's `env:` to find everything the server started.
pub(crate) fn marked_processes(mark: &str) -> Vec<u32> {
    let wanted = format!("LLLM_TEST_MARK={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) && running(*pid)
        })
        .collect()
}

/// A mark no other test run uses.
pub(crate) fn unique_mark(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), fastrand::u64(..))
}

/// A running `lllm serve`, killed when dropped.
pub(crate) struct Serving {
    child: std::process::Child,
    pub(crate) base: String,
    pub(crate) stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Serving {
    /// Starts `lllm serve ARGS --listen 127.0.0.1:0` and waits for its address.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
        command
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("LLLM_SERVE_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("lllm serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, receiver) = std::sync::mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(url) = line.split("on http://").nth(1) {
                    let address = url.split('/').next().unwrap_or_default().to_owned();
                    sender.send(address).ok();
                }
                kept.lock().expect("log").push_str(&(line + "\n"));
            }
        });
        let address = receiver
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("lllm serve never said where it listens"));
        Serving {
            child,
            base: format!("http://{address}"),
            stderr: log,
        }
    }

    /// Its resident memory now, in MiB.
    pub(crate) fn rss_mib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .map_or(0, |kib| kib / 1024)
    }

    pub(crate) fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}
