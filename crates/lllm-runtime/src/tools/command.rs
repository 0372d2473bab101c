//! Command tools: run a program with the model's arguments, without a shell.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use lllm_core::{CommandToolConfig, ToolSpec};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::{Tool, ToolError, ToolOutput};

/// Most bytes of a failed program's standard error shown to the model.
const STDERR_TAIL_BYTES: usize = 1_000;

/// Runs a program for each call: the arguments go to its standard input as JSON and may be inserted into
/// argv items written as `{{ arg }}`. No shell is involved, so arguments cannot inject commands. A
/// non-zero exit, a timeout or output over the limit is an error the model reads.
#[derive(Debug, Clone)]
pub struct CommandTool {
    config: CommandToolConfig,
    spec: ToolSpec,
}

impl CommandTool {
    /// A tool from its (validated) configuration.
    pub fn new(config: CommandToolConfig) -> Self {
        CommandTool {
            spec: config.spec(),
            config,
        }
    }

    fn argv(&self, arguments: &Value) -> Result<Vec<String>, ToolError> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        // Values go in as written: no HTML escaping, no shell quoting (there is no shell).
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        self.config
            .command
            .iter()
            .map(|item| {
                env.render_str(item, arguments).map_err(|e| {
                    ToolError::new(format!(
                        "cannot build the command line from the arguments: {e}"
                    ))
                })
            })
            .collect()
    }

    async fn run(&self, argv: Vec<String>, stdin: Vec<u8>) -> Result<ToolOutput, ToolError> {
        let mut command = Command::new(&argv[0]);
        if let Some(dir) = self
            .config
            .working_dir
            .as_deref()
            .filter(|d| !d.as_os_str().is_empty())
        {
            command.current_dir(dir);
        }
        let mut child = command
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ToolError::new(format!("cannot start `{}`: {e}", argv[0])))?;
        let mut input = child.stdin.take();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let limit = self.config.max_output_bytes;
        let write = async move {
            if let Some(pipe) = input.as_mut() {
                // A program that does not read its input closes the pipe early; that is fine.
                pipe.write_all(&stdin).await.ok();
            }
            drop(input);
        };
        let read_out = async {
            let mut buffer = Vec::new();
            if let Some(pipe) = stdout.as_mut() {
                pipe.take(limit as u64 + 1)
                    .read_to_end(&mut buffer)
                    .await
                    .ok();
            }
            if buffer.len() > limit {
                // Stop it now: it may go on writing (and keep stderr open) forever.
                child.start_kill().ok();
            }
            buffer
        };
        let read_err = async {
            let mut buffer = Vec::new();
            if let Some(pipe) = stderr.as_mut() {
                pipe.take(64 * 1024).read_to_end(&mut buffer).await.ok();
            }
            buffer
        };
        let ((), out, err) = tokio::join!(write, read_out, read_err);
        if out.len() > limit {
            child.wait().await.ok();
            return Err(ToolError::new(format!(
                "the output is longer than the {limit}-byte limit"
            )));
        }
        let status = child
            .wait()
            .await
            .map_err(|e| ToolError::new(format!("cannot wait for `{}`: {e}", argv[0])))?;
        if !status.success() {
            let tail = String::from_utf8_lossy(&err[err.len().saturating_sub(STDERR_TAIL_BYTES)..])
                .trim()
                .to_owned();
            let code = status
                .code()
                .map_or("a signal".to_owned(), |c| format!("status {c}"));
            return Err(ToolError::new(if tail.is_empty() {
                format!("`{}` exited with {code}", argv[0])
            } else {
                format!("`{}` exited with {code}: {tail}", argv[0])
            }));
        }
        Ok(ToolOutput::Text(
            String::from_utf8_lossy(&out).trim_end().to_owned(),
        ))
    }
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
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

    fn tool(command: &[&str], timeout_s: f64, max_output_bytes: usize) -> CommandTool {
        CommandTool::new(CommandToolConfig {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            timeout_s,
            max_output_bytes,
            working_dir: None,
        })
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
    }

    #[tokio::test]
    async fn failures_become_errors_for_the_model() {
        let failing = tool(&["sh", "-c", "echo broken >&2; exit 3"], 5.0, 1000);
        let err = failing.call(json!({})).await.expect_err("non-zero");
        assert_eq!(err.0, "`sh` exited with status 3: broken");
        let slow = tool(&["sleep", "5"], 0.2, 1000);
        let err = slow.call(json!({})).await.expect_err("timeout");
        assert!(err.0.contains("did not finish within 0.2 s"), "{err}");
        let chatty = tool(&["yes"], 5.0, 100);
        let err = chatty.call(json!({})).await.expect_err("too long");
        assert!(err.0.contains("100-byte limit"), "{err}");
        let missing = tool(&["/nonexistent/program"], 5.0, 100);
        assert!(missing
            .call(json!({}))
            .await
            .expect_err("spawn")
            .0
            .starts_with("cannot start"));
        let undefined = tool(&["echo", "{{ text }}"], 5.0, 100);
        assert!(undefined.call(json!({})).await.is_err());
    }
}
