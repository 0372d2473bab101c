//! Command tools: run a program with the model's arguments, without a shell.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use lllm_core::{CommandToolConfig, ToolSpec};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::watch;

use lllm_core::ToolConfigError;

use super::process::{self, Registration};
use super::{Tool, ToolError, ToolOutput};

/// Most bytes of a failed program's standard error shown to the model.
const STDERR_TAIL_BYTES: usize = 1_000;
/// Work allowed to render one argv item (minijinja fuel): far more than inserting arguments takes.
const ARGV_FUEL: u64 = 100_000;
/// Longest argv item Linux accepts (`MAX_ARG_STRLEN`).
const MAX_ARGV_ITEM_BYTES: usize = 128 * 1024;
/// How long the pipes are still read after the program exited and its leftovers were killed.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// Variables a tool always gets; everything else in lllm's environment (API keys) stays out.
const BASE_ENV: [&str; 7] = ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];

/// Runs a program for each call: the arguments go to its standard input as JSON and may be inserted into
/// argv items written as `{{ arg }}` (an argument the model left out inserts nothing). No shell is
/// involved, so arguments cannot inject commands; the program itself cannot be templated.
///
/// The program runs in its own process group with a cleared environment (see
/// [`CommandToolConfig::env`]). When it exits, times out, writes too much or the call is cancelled, the
/// whole group is killed, so nothing it started outlives the call. A non-zero exit, a timeout or output
/// over the limit is an error the model reads.
#[derive(Debug, Clone)]
pub struct CommandTool {
    config: CommandToolConfig,
    spec: ToolSpec,
}

impl CommandTool {
    /// A tool from its configuration, validated (see [`CommandToolConfig::validate`]).
    pub fn new(config: CommandToolConfig) -> Result<Self, ToolConfigError> {
        config.validate()?;
        Ok(Self::checked(config))
    }

    /// A tool from a configuration the tactic loader has already validated.
    pub(crate) fn checked(config: CommandToolConfig) -> Self {
        CommandTool {
            spec: config.spec(),
            config,
        }
    }

    fn argv(&self, arguments: &Value) -> Result<Vec<String>, ToolError> {
        let mut env = minijinja::Environment::new();
        // An optional argument the model left out renders as nothing rather than failing the call.
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
        // Values go in as written: no HTML escaping, no shell quoting (there is no shell).
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // An argv item is a template of the tactic's: a loop in it must not hang every call.
        env.set_fuel(Some(ARGV_FUEL));
        self.config
            .command
            .iter()
            .map(|item| {
                let rendered = env.render_str(item, arguments).map_err(|e| {
                    ToolError::new(format!(
                        "cannot build the command line from the arguments: {e}"
                    ))
                })?;
                if rendered.len() > MAX_ARGV_ITEM_BYTES {
                    return Err(ToolError::new(format!(
                        "an argument of the command line would be {} bytes, more than the {MAX_ARGV_ITEM_BYTES} the system accepts; pass long values on standard input instead",
                        rendered.len()
                    )));
                }
                Ok(rendered)
            })
            .collect()
    }

    fn command(&self, argv: &[String]) -> Command {
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in BASE_ENV
            .iter()
            .copied()
            .chain(self.config.env.iter().map(String::as_str))
        {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        if let Some(dir) = self
            .config
            .working_dir
            .as_deref()
            .filter(|d| !d.as_os_str().is_empty())
        {
            command.current_dir(dir);
        }
        #[cfg(unix)]
        command.process_group(0);
        command
    }

    async fn run(&self, argv: Vec<String>, stdin: Vec<u8>) -> Result<ToolOutput, ToolError> {
        let marker = process::new_marker();
        let mut command = self.command(&argv);
        command.env(process::MARKER_VAR, &marker);
        let (mut child, _registration) = Registration::spawn(|| command.spawn(), |c| c.id())
            .map_err(|e| ToolError::new(format!("cannot start `{}`: {e}", argv[0])))?;
        // Kills the program and everything it started, however this call ends (cancellation included).
        let leftovers = Leftovers {
            group: child.id(),
            marker,
            swept: AtomicBool::new(false),
        };
        let input = child.stdin.take();
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let limit = self.config.max_output_bytes;
        // Once the program has exited and its leftovers are killed, the pipes close at once, unless
        // something that escaped every kill still holds them: reading stops shortly after the exit.
        let (exited, exit_seen) = watch::channel(false);
        let drained = || {
            let mut exit_seen = exit_seen.clone();
            async move {
                exit_seen.wait_for(|exited| *exited).await.ok();
                tokio::time::sleep(DRAIN_AFTER_EXIT).await;
            }
        };
        let read_out = async {
            let mut out = Vec::new();
            drain(stdout, drained(), |chunk| {
                out.extend_from_slice(chunk);
                out.len() <= limit
            })
            .await;
            if out.len() > limit {
                // Stop it now: it may go on writing (and keep its pipes open) forever.
                leftovers.kill_group();
            }
            out
        };
        let read_err = async {
            // All of it is read, so that a program writing a lot to stderr never blocks; the tail is kept.
            let mut tail = Vec::new();
            drain(stderr, drained(), |chunk| {
                tail.extend_from_slice(chunk);
                if tail.len() > 2 * STDERR_TAIL_BYTES {
                    tail.drain(..tail.len() - STDERR_TAIL_BYTES);
                }
                true
            })
            .await;
            tail
        };
        let wait = async {
            let status = child.wait().await;
            // Whatever it left running in the background would hold the pipes open.
            leftovers.kill_all().await;
            exited.send(true).ok();
            status
        };
        let write = async {
            tokio::select! {
                () = write_all(input, stdin) => {}
                () = drained() => {}
            }
        };
        let ((), out, err, status) = tokio::join!(write, read_out, read_err, wait);
        let status =
            status.map_err(|e| ToolError::new(format!("cannot wait for `{}`: {e}", argv[0])))?;
        if out.len() > limit {
            return Err(ToolError::new(format!(
                "the output is longer than the {limit}-byte limit"
            )));
        }
        if !status.success() {
            return Err(exit_error(&argv[0], status, &err));
        }
        Ok(ToolOutput::Text(
            String::from_utf8_lossy(&out).trim_end().to_owned(),
        ))
    }
}

/// Writes the program's input and closes the pipe.
async fn write_all(pipe: Option<tokio::process::ChildStdin>, bytes: Vec<u8>) {
    if let Some(mut pipe) = pipe {
        // A program that does not read its input closes the pipe early; that is fine.
        pipe.write_all(&bytes).await.ok();
    }
}

/// Reads a pipe chunk by chunk into `keep` until its end, until `keep` says stop, or until `stop`
/// resolves.
async fn drain(
    pipe: Option<impl tokio::io::AsyncRead + Unpin>,
    stop: impl std::future::Future<Output = ()>,
    mut keep: impl FnMut(&[u8]) -> bool,
) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = vec![0; 16 * 1024];
    tokio::pin!(stop);
    loop {
        tokio::select! {
            read = pipe.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => if !keep(&chunk[..n]) { return },
            },
            () = &mut stop => return,
        }
    }
}

/// A failed exit, with the tail of what the program wrote to standard error.
fn exit_error(program: &str, status: std::process::ExitStatus, stderr: &[u8]) -> ToolError {
    let tail = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_TAIL_BYTES)..])
        .trim()
        .to_owned();
    let code = status
        .code()
        .map_or("a signal".to_owned(), |c| format!("status {c}"));
    ToolError::new(if tail.is_empty() {
        format!("`{program}` exited with {code}")
    } else {
        format!("`{program}` exited with {code}: {tail}")
    })
}

/// What a started tool may leave behind: its process group, and processes that left the group but
/// carry the call's marker. Killed on request and when dropped.
struct Leftovers {
    group: Option<u32>,
    marker: String,
    /// Set once the marked processes were swept after the program's exit: dropping then has only the
    /// group left to kill, not another pass over `/proc`.
    swept: AtomicBool,
}

impl Leftovers {
    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(id) = self.group.and_then(|id| i32::try_from(id).ok()) {
            // The group may be gone already; nothing to do then.
            nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(id),
                nix::sys::signal::Signal::SIGKILL,
            )
            .ok();
        }
    }

    /// Kills the group and the marked escapees, and returns once none of them runs.
    async fn kill_all(&self) {
        self.kill_group();
        let marker = self.marker.clone();
        if tokio::task::spawn_blocking(move || process::kill_call(&marker))
            .await
            .is_ok()
        {
            self.swept.store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        self.kill_group();
        if *self.swept.get_mut() {
            return;
        }
        let marker = std::mem::take(&mut self.marker);
        // Cancelled calls end here; the sweep reads /proc and may wait a little, so off this thread.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || process::kill_call(&marker))),
            Err(_) => {
                process::kill_call(&marker);
            }
        }
    }
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn needs_confirmation(&self) -> bool {
        self.config.confirm
    }

    fn idempotent(&self) -> bool {
        self.config.idempotent
    }

    fn source(&self) -> String {
        "a command tool".to_owned()
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        let argv = self.argv(&arguments)?;
        let stdin = serde_json::to_vec(&arguments).unwrap_or_default();
        let timeout = Duration::from_secs_f64(self.config.timeout_s);
        tokio::time::timeout(timeout, self.run(argv, stdin))
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::new(format!(
                    "`{}` did not finish within {} s",
                    self.config.command[0], self.config.timeout_s
                )))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(command: &[&str], timeout_s: f64, max_output_bytes: usize) -> CommandToolConfig {
        CommandToolConfig {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            timeout_s,
            max_output_bytes,
            env: Vec::new(),
            confirm: false,
            idempotent: false,
            working_dir: None,
        }
    }

    fn tool(command: &[&str], timeout_s: f64, max_output_bytes: usize) -> CommandTool {
        CommandTool::new(config(command, timeout_s, max_output_bytes)).expect("valid")
    }

    #[tokio::test]
    async fn arguments_arrive_on_stdin_and_in_argv_without_a_shell() {
        let cat = tool(&["cat"], 5.0, 1000);
        assert_eq!(
            cat.call(json!({"text": "a b"})).await,
            Ok(ToolOutput::Text(r#"{"text":"a b"}"#.into()))
        );
        let echo = tool(&["echo", "{{ text }}"], 5.0, 1000);
        assert_eq!(
            echo.call(json!({"text": "$(whoami); <b>"})).await,
            Ok(ToolOutput::Text("$(whoami); <b>".into()))
        );
        assert_eq!(
            echo.call(json!({})).await,
            Ok(ToolOutput::Text(String::new())),
            "a left-out optional argument inserts nothing"
        );
    }

    #[tokio::test]
    async fn failures_become_errors_for_the_model() {
        let failing = tool(&["sh", "-c", "echo broken >&2; exit 3"], 5.0, 1000);
        let err = failing.call(json!({})).await.expect_err("non-zero");
        assert_eq!(err.message(), "`sh` exited with status 3: broken");
        let slow = tool(&["sleep", "5"], 0.2, 1000);
        let err = slow.call(json!({})).await.expect_err("timeout");
        assert!(
            err.message().contains("did not finish within 0.2 s"),
            "{err}"
        );
        let chatty = tool(&["yes"], 5.0, 100);
        let err = chatty.call(json!({})).await.expect_err("too long");
        assert!(err.message().contains("100-byte limit"), "{err}");
        let missing = tool(&["/nonexistent/program"], 5.0, 100);
        assert!(missing
            .call(json!({}))
            .await
            .expect_err("spawn")
            .message()
            .starts_with("cannot start"));
    }

    #[tokio::test]
    async fn background_children_do_not_outlive_the_call_or_hold_it() {
        // The child would outlive the tool's 2 s timeout: a call that waited for it would time out.
        let spawner = tool(&["sh", "-c", "sleep 60 & echo $!"], 2.0, 1000);
        let Ok(ToolOutput::Text(pid)) = spawner.call(json!({})).await else {
            panic!("the call waited for its background child");
        };
        // Killed with its group when the call ended; it may still need a moment to be reaped.
        assert!(
            !still_running_after_a_while(&pid).await,
            "the background child {pid} outlived the call"
        );
    }

    /// Whether a process runs (a zombie counts as ended), waiting up to a few seconds for it to end.
    async fn still_running_after_a_while(pid: &str) -> bool {
        let stat = format!("/proc/{}/stat", pid.trim());
        let alive = || {
            std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        };
        for _ in 0..500 {
            if !alive() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        alive()
    }

    #[tokio::test]
    async fn a_child_that_left_the_group_neither_holds_the_call_nor_survives_it() {
        // `setsid` puts the sleeper in a session of its own, out of reach of the group kill, and it
        // inherits stdout: waiting for the pipe to close would wait for it (the 20 s timeout).
        let escaper = tool(&["sh", "-c", "setsid sleep 60 & echo $!"], 20.0, 1000);
        let output = escaper.call(json!({})).await;
        let Ok(ToolOutput::Text(pid)) = output else {
            panic!("the call waited for its escaped child: {output:?}");
        };
        assert!(
            !still_running_after_a_while(&pid).await,
            "the escaped child {pid} outlived the call"
        );
    }

    #[tokio::test]
    async fn a_child_without_the_marker_does_not_hold_the_call() {
        // With its environment cleared, the child cannot be found by its marker; the call still ends
        // shortly after the program, with its output. (Only a host that adopts orphans, such as the
        // `lllm` command, kills such a child: see the CLI's signal tests.)
        let escaper = tool(
            &["sh", "-c", "env -i setsid sleep 60 & echo $!"],
            20.0,
            1000,
        );
        let output = escaper.call(json!({})).await;
        let Ok(ToolOutput::Text(pid)) = output else {
            panic!("the call waited for its escaped child: {output:?}");
        };
        if let Ok(pid) = pid.trim().parse::<i32>() {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .ok();
        }
    }

    #[tokio::test]
    async fn a_program_that_floods_stderr_is_not_blocked_and_its_tail_is_kept() {
        // 300 KiB is more than a pipe holds: unread, the program would block until its timeout.
        let flooding = tool(
            &[
                "sh",
                "-c",
                "head -c 300000 /dev/zero | tr '\\0' e >&2; echo done",
            ],
            20.0,
            1000,
        );
        assert_eq!(
            flooding.call(json!({})).await,
            Ok(ToolOutput::Text("done".into()))
        );
        let failing = tool(
            &[
                "sh",
                "-c",
                "head -c 300000 /dev/zero | tr '\\0' e >&2; echo last words >&2; exit 1",
            ],
            20.0,
            1000,
        );
        let err = failing.call(json!({})).await.expect_err("exit 1");
        assert!(err.message().ends_with("eeelast words"), "{err}");
    }

    #[tokio::test]
    async fn the_environment_is_cleared_but_for_a_few_and_the_listed_ones() {
        // cargo sets these for every test run; changing the environment here would race other tests.
        let mut listed = config(&["env"], 5.0, 100_000);
        listed.env = vec!["CARGO_PKG_NAME".into()];
        let output = CommandTool::new(listed)
            .expect("valid")
            .call(json!({}))
            .await
            .expect("runs")
            .into_content();
        assert!(!output.contains("CARGO_MANIFEST_DIR="), "{output}");
        assert!(output.contains("CARGO_PKG_NAME=lllm-runtime"), "{output}");
        assert!(output.contains("PATH="), "{output}");
    }

    #[tokio::test]
    async fn an_argv_template_is_bounded_in_work_and_size() {
        // Quadratic in the model's argument: 10^10 steps for a 100 KB text.
        let looping = tool(
            &[
                "echo",
                "{% for a in text %}{% for b in text %}x{% endfor %}{% endfor %}",
            ],
            20.0,
            1000,
        );
        let err = looping
            .call(json!({"text": "y".repeat(100_000)}))
            .await
            .expect_err("out of fuel");
        assert!(
            err.message().starts_with("cannot build the command line"),
            "{err}"
        );
        let long = tool(&["echo", "{{ text }}"], 20.0, 1000);
        let err = long
            .call(json!({"text": "x".repeat(200_000)}))
            .await
            .expect_err("too long");
        assert!(
            err.message().contains("pass long values on standard input"),
            "{err}"
        );
    }

    #[test]
    fn invalid_configurations_are_refused_not_panicked_on() {
        assert!(CommandTool::new(config(&[], 5.0, 10)).is_err());
        assert!(CommandTool::new(config(&["true"], f64::NAN, 10)).is_err());
        assert!(CommandTool::new(config(&["true"], -1.0, 10)).is_err());
        assert!(CommandTool::new(config(&["{{ text }}"], 1.0, 10)).is_err());
    }
}
