//! What a stored conversation costs: its bytes as written (the files under
//! `STATE/conversations/`, one a conversation, after turns asked one by one, each continuing the
//! last), and the resident memory of a server process before and after it stored many (divided:
//! approximate, since the allocator keeps what it freed and the process's other memory moves too).

use std::path::Path;

use serde_json::{json, Value};

use crate::chat::{self, Client};
use crate::server::{self, ChildServer};

/// Requests before the memory is read first: the server keeps its latest 1,000 request runs listed
/// (the console), so after these, each later request replaces one and only the conversations grow.
const RSS_WARM_UP: usize = 1_000;

/// The mean bytes of a conversation file after `depth` turns, over `sample` conversations.
pub(crate) async fn bytes_at(
    tactic: &Path,
    state: &Path,
    depth: usize,
    sample: usize,
) -> anyhow::Result<Value> {
    let client = Client::new(&server::start(tactic, Some(state)).await?);
    let mut rng = fastrand::Rng::with_seed(depth as u64);
    for _ in 0..sample {
        let mut messages = chat::history(&mut rng, 1);
        let mut answer = client.turn(&messages, None, "minted").await?.text;
        for _ in 2..=depth {
            chat::next_turn(&mut rng, &mut messages, answer);
            answer = client.turn(&messages, None, "history").await?.text;
        }
    }
    let mut sizes = Vec::new();
    for entry in std::fs::read_dir(state.join("conversations"))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") && !name.starts_with('.') {
            sizes.push(entry.metadata()?.len());
        }
    }
    anyhow::ensure!(
        sizes.len() == sample,
        "{} conversation files under {} after {sample} conversations",
        sizes.len(),
        state.display()
    );
    let mean = sizes.iter().sum::<u64>() as f64 / sample as f64;
    Ok(json!({"depth": depth, "conversations": sample, "bytes_mean": mean}))
}

/// The RSS (MiB) of a server process of its own before and after `count` new conversations of
/// `depth` turns each (a request each, of `2 * depth - 1` messages).
pub(crate) async fn resident(tactic: &Path, count: usize, depth: usize) -> anyhow::Result<Value> {
    let child = ChildServer::start(tactic)?;
    let client = Client::new(&child.base);
    let mut rng = fastrand::Rng::with_seed(1000);
    // The warm-up's turns are of one conversation (named by a header), each replacing the last.
    for _ in 0..RSS_WARM_UP {
        let messages = chat::history(&mut rng, depth);
        client.turn(&messages, Some("warm-up"), "header").await?;
    }
    let before = child.rss_mib()?;
    for _ in 0..count {
        let messages = chat::history(&mut rng, depth);
        client.turn(&messages, None, "minted").await?;
    }
    let after = child.rss_mib()?;
    Ok(json!({
        "conversations": count,
        "depth": depth,
        "before_mib": before,
        "after_mib": after,
    }))
}
