//! A stdio server's process: started in a process group of its own with only the inherited variables
//! and its `env:`, its stderr kept as a short tail for error messages, its exit watched, and the whole
//! group killed when it is shut down or dropped. Like a command tool's program, it is marked with
//! `LLLM_TOOL_CALL=<id>`, so that the processes it started that left its group (`setsid`, a
//! daemonising double fork) are found and killed with it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lllm_core::MCP_INHERITED_ENV;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::tools::process::{
    kill_call, kill_group, new_marker, terminate_group, GroupRegistration, Registration, MARKER_VAR,
};

/// Most bytes of a server's stderr kept for messages.
const STDERR_TAIL_BYTES: usize = 4096;
/// Most lines of the tail shown in a message.
const STDERR_TAIL_LINES: usize = 12;

/// A running stdio server process.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    /// Its id, which is also its process group's id.
    group: u32,
    /// The exit status, once it has exited.
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: Arc<Mutex<Tail>>,
    /// The `LLLM_TOOL_CALL` value its processes carry.
    marker: String,
    /// Whether the processes carrying the marker were killed.
    swept: AtomicBool,
    _group: GroupRegistration,
}

/// The pipes MCP speaks over.
pub(crate) struct Pipes {
    pub(crate) stdout: ChildStdout,
    pub(crate) stdin: ChildStdin,
}

impl ServerProcess {
    /// Starts `command` in `cwd` with the inherited variables and `env`.
    pub(crate) fn spawn(
        command: &[String],
        env: &BTreeMap<String, String>,
        cwd: &Path,
    ) -> std::io::Result<(ServerProcess, Pipes)> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| std::io::Error::other("no program given"))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .env_clear()
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in MCP_INHERITED_ENV {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.envs(env);
        let marker = new_marker();
        cmd.env(MARKER_VAR, &marker);
        #[cfg(unix)]
        cmd.process_group(0);
        let (mut child, registration) = Registration::spawn(|| cmd.spawn(), |c| c.id())?;
        let group = child
            .id()
            .ok_or_else(|| std::io::Error::other("the server exited at once"))?;
        let registered_group = GroupRegistration::new(group);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill_group(group);
            return Err(std::io::Error::other(
                "the server's pipes could not be opened",
            ));
        };
        let tail = Arc::new(Mutex::new(Tail::default()));
        tokio::spawn(keep_tail(stderr, tail.clone()));
        let (sender, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            // The registration ends once tokio has reaped the program.
            drop(registration);
            sender.send(status).ok();
        });
        let process = ServerProcess {
            group,
            exit,
            stderr: tail,
            marker,
            swept: AtomicBool::new(false),
            _group: registered_group,
        };
        Ok((process, Pipes { stdout, stdin }))
    }

    /// The exit status, when the process has exited.
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// The last lines the server wrote on stderr, for messages (empty when it wrote none).
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .lines(STDERR_TAIL_LINES)
    }

    /// Waits up to `patience` for the process to exit; whether it did.
    pub(crate) async fn exited_within(&self, patience: Duration) -> bool {
        let mut exit = self.exit.clone();
        tokio::time::timeout(patience, exit.wait_for(Option::is_some))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Ends the process group: SIGTERM when the server is still running and `grace` allows, then
    /// SIGKILL to whatever of the group is left (children it started included), and to the
    /// processes carrying its marker that left the group.
    pub(crate) async fn stop(&self, grace: Duration) {
        if self.exit_status().is_none() {
            terminate_group(self.group);
            self.exited_within(grace).await;
        }
        kill_group(self.group);
        if !self.swept.swap(true, Ordering::SeqCst) {
            let marker = self.marker.clone();
            tokio::task::spawn_blocking(move || kill_call(&marker))
                .await
                .ok();
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Dropped without `stop` (a panic, a cancelled run, a startup timeout): nothing it started
        // may survive.
        kill_group(self.group);
        if !self.swept.swap(true, Ordering::SeqCst) {
            kill_call(&self.marker);
        }
    }
}

/// The last bytes of a stream.
#[derive(Debug, Default)]
struct Tail {
    bytes: std::collections::VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let extra = self.bytes.len().saturating_sub(STDERR_TAIL_BYTES);
        self.bytes.drain(..extra);
    }

    fn lines(&self, most: usize) -> String {
        let (a, b) = self.bytes.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect();
        let start = lines.len().saturating_sub(most);
        lines[start..]
            .iter()
            .map(|line| super::printable(line))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Reads the server's stderr until it closes, keeping the tail (and showing it at debug level).
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Tail>>) {
    let mut buffer = vec![0u8; 4096];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let chunk = &buffer[..n];
                tracing::debug!(target: "lllm::mcp", "server stderr: {}", String::from_utf8_lossy(chunk).trim_end());
                tail.lock().unwrap_or_else(|p| p.into_inner()).push(chunk);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a child subreaper (a library's process), a daemon that left the server's group is
    /// found by its mark.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread")]
    async fn stopping_kills_what_left_the_group() {
        let dir = std::env::temp_dir().join(format!("lllm-mcp-child-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let command = [
            "sh".to_owned(),
            "-c".to_owned(),
            "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid; exec sleep 300"
                .to_owned(),
        ];
        let (process, _pipes) =
            ServerProcess::spawn(&command, &BTreeMap::new(), &dir).expect("spawned");
        let pid_file = dir.join("pid");
        let mut daemon = None;
        for _ in 0..200 {
            daemon = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|p| p.trim().parse::<u32>().ok());
            if daemon.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let daemon = daemon.expect("the daemon's pid");
        let alive = || {
            std::fs::read_to_string(format!("/proc/{daemon}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
            })
        };
        assert!(alive(), "the daemon runs");
        process.stop(Duration::from_millis(200)).await;
        let gone = !alive();
        if !gone {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(daemon).expect("pid")),
                nix::sys::signal::Signal::SIGKILL,
            )
            .ok();
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(gone, "the daemon outlived its server");
    }

    #[test]
    fn the_tail_keeps_the_last_lines_without_control_characters() {
        let mut tail = Tail::default();
        for i in 0..2000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        tail.push(b"evil \x1b[31mred\n");
        let lines = tail.lines(3);
        assert_eq!(lines, "line 1998\nline 1999\nevil [31mred");
        assert!(tail.bytes.len() <= STDERR_TAIL_BYTES);
    }
}
