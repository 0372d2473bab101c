//! What continuing a served conversation costs (issue 32): per request, the latency of a chat turn
//! whose history is a stored conversation's transcript (its dialogs continue) against the same turn
//! seeded fresh, and with conversations written through to a state directory (p50, p99); per stored
//! conversation, its bytes as written at depths 1, 10 and 50, and the resident memory of a server
//! process per conversation. Everything against the testing kit's stand-in server in this process;
//! every request checks `x-lllm-session-source`, so a leg that took the wrong path fails.
//!
//! ```text
//! serve_continuation [--requests N] [--depth D] [--conversations N] [--sample N]
//!   # prints one JSON object (`report continuation` renders it)
//! ```
//! `--requests` turns per latency leg (default 1,000, after 50 warm-up turns), at turn `--depth` of
//! their conversations (default 10: 19 messages of about 400 characters); `--conversations` new
//! conversations for the memory figure (default 1,000, at most the server's 2,048); `--sample`
//! conversations per depth for the bytes (default 10).
#![allow(clippy::print_stdout)]

mod chat;
mod legs;
mod server;
mod stored;

use std::path::PathBuf;

use anyhow::Context as _;
use lllm_runtime::testing::StubServer;
use serde_json::json;

/// The depths whose conversations' bytes are measured.
const BYTE_DEPTHS: [usize; 3] = [1, 10, 50];
/// The depth of the conversations of the memory figure.
const RSS_DEPTH: usize = 10;
/// Conversations a server keeps by default: more would forget the first ones.
const KEPT: usize = 2_048;

/// The command line.
struct Settings {
    requests: usize,
    depth: usize,
    conversations: usize,
    sample: usize,
}

fn settings(args: &[String]) -> anyhow::Result<Settings> {
    let number = |name: &str, default: usize| -> anyhow::Result<usize> {
        match args.iter().position(|a| a == name) {
            None => Ok(default),
            Some(i) => {
                let value = args
                    .get(i + 1)
                    .with_context(|| format!("{name} needs a number"))?;
                value
                    .parse()
                    .with_context(|| format!("{name}: `{value}` is not a count"))
            }
        }
    };
    let settings = Settings {
        requests: number("--requests", 1_000)?,
        depth: number("--depth", 10)?,
        conversations: number("--conversations", 1_000)?,
        sample: number("--sample", 10)?,
    };
    anyhow::ensure!(
        (1..=KEPT).contains(&settings.conversations),
        "--conversations: 1 to {KEPT} (a server keeps {KEPT} by default)"
    );
    anyhow::ensure!(
        settings.requests > 0 && settings.sample > 0,
        "--requests and --sample: at least 1"
    );
    Ok(settings)
}

/// A folder of its own under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve-only") {
        let tactic = args.get(i + 1).context("--serve-only needs a tactic")?;
        return server::serve_only(tactic.as_ref());
    }
    let settings = settings(&args)?;
    let dir = TempDir(
        std::env::temp_dir().join(format!("lllm-serve-continuation-{}", std::process::id())),
    );
    std::fs::create_dir_all(&dir.0)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let stub = runtime.block_on(StubServer::start())?;
    let tactic = server::write_tactic(&dir.0, &stub.base_url())?;
    // The memory first, while the stand-in server has recorded few requests (it keeps them all).
    let rss = runtime.block_on(stored::resident(&tactic, settings.conversations, RSS_DEPTH))?;
    stub.clear_requests();
    let mut bytes = Vec::new();
    for depth in BYTE_DEPTHS {
        let state = dir.0.join(format!("bytes-{depth}"));
        bytes.push(runtime.block_on(stored::bytes_at(&tactic, &state, depth, settings.sample))?);
        stub.clear_requests();
    }
    let legs = runtime.block_on(legs::run(
        &stub,
        &tactic,
        &dir.0.join("legs"),
        settings.requests,
        settings.depth,
    ))?;
    let figures = json!({
        "requests": settings.requests,
        "warm_up": legs::WARM_UP,
        "depth": settings.depth,
        "message_chars": chat::MESSAGE_CHARS,
        "latency": legs.figures(),
        "bytes": bytes,
        "resident": rss,
    });
    println!("{figures}");
    Ok(())
}
