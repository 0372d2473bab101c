//! What continuing a conversation costs a request: the same turn at the same depth, legs
//! alternating, (a) continuing a stored conversation (the client's history is its transcript),
//! (b) fresh (a history as long and as large that matches nothing, so the dialogs are seeded from
//! it), (c) continuing on a server that writes its conversations through to a state directory.

use std::path::Path;

use lllm_bench::percentile;
use lllm_runtime::testing::StubServer;
use serde_json::{json, Value};

use crate::chat::{self, Client};
use crate::server;

/// Turns of each leg not counted.
pub(crate) const WARM_UP: usize = 50;

/// Milliseconds per turn of each leg, sorted.
pub(crate) struct Legs {
    pub(crate) continued: Vec<f64>,
    pub(crate) fresh: Vec<f64>,
    pub(crate) continued_state: Vec<f64>,
    /// The machine's load average (1 minute) before and after the legs: other work on the machine
    /// preempts turns, and shows in p99.
    load: [f64; 2],
}

/// The 1-minute load average (0 where `/proc/loadavg` cannot be read).
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Runs `requests` turns of each leg (after [`WARM_UP`]) at turn `depth` of their conversations.
pub(crate) async fn run(
    stub: &StubServer,
    tactic: &Path,
    state: &Path,
    requests: usize,
    depth: usize,
) -> anyhow::Result<Legs> {
    anyhow::ensure!(
        depth >= 2,
        "--depth {depth}: a continued turn has an earlier turn, so the depth is at least 2"
    );
    let memory = Client::new(&server::start(tactic, None).await?);
    let written = Client::new(&server::start(tactic, Some(state)).await?);
    let mut rng = fastrand::Rng::with_seed(32);
    let mut legs = Legs {
        continued: Vec::new(),
        fresh: Vec::new(),
        continued_state: Vec::new(),
        load: [load_average(), 0.0],
    };
    for i in 0..WARM_UP + requests {
        let a = continued(&memory, &mut rng, depth).await?;
        let b = memory
            .turn(&chat::history(&mut rng, depth), None, "minted")
            .await?
            .ms;
        let c = continued(&written, &mut rng, depth).await?;
        // The stand-in server records every request: forgotten, its memory stays flat.
        stub.clear_requests();
        if i >= WARM_UP {
            legs.continued.push(a);
            legs.fresh.push(b);
            legs.continued_state.push(c);
        }
    }
    legs.load[1] = load_average();
    for leg in [
        &mut legs.continued,
        &mut legs.fresh,
        &mut legs.continued_state,
    ] {
        leg.sort_by(f64::total_cmp);
    }
    Ok(legs)
}

/// A conversation stored at turn `depth - 1` (untimed), then its turn `depth`, timed.
async fn continued(client: &Client, rng: &mut fastrand::Rng, depth: usize) -> anyhow::Result<f64> {
    let mut messages = chat::history(rng, depth - 1);
    let answer = client.turn(&messages, None, "minted").await?.text;
    chat::next_turn(rng, &mut messages, answer);
    Ok(client.turn(&messages, None, "history").await?.ms)
}

impl Legs {
    /// The figures: p50 and p99 of each leg.
    pub(crate) fn figures(&self) -> Value {
        let leg = |sorted: &[f64]| json!({"p50_ms": percentile(sorted, 0.50), "p99_ms": percentile(sorted, 0.99)});
        json!({
            "continued": leg(&self.continued),
            "fresh": leg(&self.fresh),
            "continued_state": leg(&self.continued_state),
            "load_average": self.load,
        })
    }
}
