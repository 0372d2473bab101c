//! The served tactic and its servers: a one-agent chat tactic with Dynamo's session hints against
//! the stand-in server, served by `Served` on 127.0.0.1, in this process or in a child process of
//! its own (this binary with `--serve-only`), whose memory then holds nothing but the server's.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;

use anyhow::Context as _;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::serve::Served;
use lllm_runtime::{load_tactic, Engine, OpenAiInvoker, TacticRegistry};

/// Writes the tactic, asking the stand-in server at `api_base`, into `dir`; returns its path.
pub(crate) fn write_tactic(dir: &Path, api_base: &str) -> anyhow::Result<PathBuf> {
    let tactic = dir.join("helper.yaml");
    std::fs::write(
        &tactic,
        format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{api_base}\", timeout: 30}}\n  inference_hints: {{profile: dynamo}}\nagent_configs:\n  - name: helper\n    system_prompt: You help.\n"
        ),
    )?;
    Ok(tactic)
}

/// Serves `tactic` as the model `helper` on a free port of 127.0.0.1, keeping conversations under
/// `state` when given; returns `http://ADDRESS`.
pub(crate) async fn start(tactic: &Path, state: Option<&Path>) -> anyhow::Result<String> {
    let engine = Engine::new(TacticRegistry::new()).with_invoker(Arc::new(
        OpenAiInvoker::with_defaults(ServerDefaults::none()),
    ));
    let prepared = engine.prepare(load_tactic(tactic)?).await?;
    let mut builder = Served::builder(engine).tactic("helper", prepared);
    if let Some(state) = state {
        builder = builder.state_dir(state);
    }
    let served = builder.build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { served.serve(listener, std::future::pending()).await.ok() });
    Ok(base)
}

/// `--serve-only TACTIC`: serves the tactic, prints `http://ADDRESS` and serves until standard
/// input closes (the parent ended, or is done measuring).
pub(crate) fn serve_only(tactic: &Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let base = start(tactic, None).await?;
        println!("{base}");
        tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await??;
        Ok(())
    })
}

/// A child process serving the tactic: it ends when dropped (its standard input closes).
pub(crate) struct ChildServer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// `http://ADDRESS`.
    pub(crate) base: String,
}

impl ChildServer {
    /// Starts this binary with `--serve-only tactic` and reads the address it serves on.
    pub(crate) fn start(tactic: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg("--serve-only")
            .arg(tactic)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("the child has no stdout")?;
        let mut base = String::new();
        BufReader::new(stdout).read_line(&mut base)?;
        let base = base.trim().to_owned();
        anyhow::ensure!(
            base.starts_with("http://"),
            "the child server printed `{base}`, not its address"
        );
        Ok(ChildServer { child, stdin, base })
    }

    /// Its resident set (VmRSS), MiB.
    pub(crate) fn rss_mib(&self) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|l| l.split_whitespace().next())
            .context("no VmRSS in /proc/PID/status")?
            .parse()?;
        Ok(kib / 1024.0)
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        self.child.wait().ok();
    }
}
