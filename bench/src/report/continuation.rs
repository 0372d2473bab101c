//! What continuing a served conversation costs (`serve_continuation`): one JSON object.

use std::path::Path;

use serde::Deserialize;

use super::{cores, machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// Conversations `lllm serve` keeps by default, and their bytes as written (`--keep-conversations`,
/// `--keep-conversation-bytes`).
const KEPT: f64 = 2_048.0;
const KEPT_BYTES: f64 = 256.0 * 1024.0 * 1024.0;

/// What `serve_continuation` prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    requests: u64,
    warm_up: u64,
    depth: u64,
    message_chars: u64,
    latency: Latency,
    bytes: Vec<Stored>,
    resident: Resident,
}

#[derive(Debug, Deserialize)]
struct Latency {
    continued: Leg,
    fresh: Leg,
    continued_state: Leg,
    /// The machine's 1-minute load average before and after the legs.
    load_average: [f64; 2],
}

#[derive(Debug, Deserialize)]
struct Leg {
    p50_ms: f64,
    p99_ms: f64,
}

/// The conversation files at one depth.
#[derive(Debug, Deserialize)]
struct Stored {
    depth: u64,
    conversations: u64,
    bytes_mean: f64,
}

#[derive(Debug, Deserialize)]
struct Resident {
    conversations: u64,
    depth: u64,
    before_mib: f64,
    after_mib: f64,
}

/// The section from the figures in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    let figures: Figures = read_json(path)?;
    Ok(vec![section(&figures)])
}

/// The latency table: each leg, and the differences in bold.
fn latency(f: &Figures) -> String {
    let l = &f.latency;
    let row = |name: &str, p50: f64, p99: f64| {
        vec![
            name.to_owned(),
            format!("{p50:.3} ms"),
            format!("{p99:.3} ms"),
        ]
    };
    let difference = |name: &str, a: &Leg, b: &Leg| {
        vec![
            format!("**{name}**"),
            format!("**{:+.3} ms**", a.p50_ms - b.p50_ms),
            format!("**{:+.3} ms**", a.p99_ms - b.p99_ms),
        ]
    };
    let rows = vec![
        row(
            "continued: the history is a stored transcript (`history`), its dialogs continue",
            l.continued.p50_ms,
            l.continued.p99_ms,
        ),
        row(
            "fresh: as long a history that matches nothing (`minted`), dialogs seeded from it",
            l.fresh.p50_ms,
            l.fresh.p99_ms,
        ),
        difference(
            "continuing costs (continued − fresh)",
            &l.continued,
            &l.fresh,
        ),
        row(
            "continued, conversations written through to `--state`",
            l.continued_state.p50_ms,
            l.continued_state.p99_ms,
        ),
        difference(
            "writing through costs (with `--state` − continued)",
            &l.continued_state,
            &l.continued,
        ),
    ];
    let header = format!("turn {} ({} messages)", f.depth, 2 * f.depth - 1);
    table(&[&header, "p50", "p99"], &rows)
}

/// The sentence on the machine's load while the legs ran.
fn load(f: &Figures) -> String {
    let [before, after] = f.latency.load_average;
    let busy = if before.max(after) > cores() as f64 {
        " More runnable work than cores: turns were preempted by other processes, which shows in \
         p99 (a scheduler slice is milliseconds); read the differences at p50."
    } else {
        ""
    };
    format!("The machine's load average (1 minute) was {before:.2} before the legs and {after:.2} after.{busy}")
}

/// The bytes table, and what the default bounds hold.
fn bytes(f: &Figures) -> String {
    let rows: Vec<Vec<String>> = f
        .bytes
        .iter()
        .map(|s| {
            vec![
                s.depth.to_string(),
                (2 * s.depth).to_string(),
                format!("{} B", thousands(s.bytes_mean, 0)),
                thousands(KEPT_BYTES / s.bytes_mean, 0),
            ]
        })
        .collect();
    let header = [
        "conversation after turn",
        "messages in its transcript",
        "bytes as written (mean)",
        "conversations in the default 256 MiB",
    ];
    table(&header, &rows)
}

/// The sentence on resident memory.
fn resident(f: &Figures) -> String {
    let r = &f.resident;
    let per_kib = (r.after_mib - r.before_mib) * 1024.0 / r.conversations as f64;
    let written = f
        .bytes
        .iter()
        .find(|s| s.depth == r.depth)
        .map(|s| format!(", against {:.1} KiB as written", s.bytes_mean / 1024.0))
        .unwrap_or_default();
    format!(
        "Resident memory, in a server process of its own (this binary with `--serve-only`: the same \
         `Served`, the stand-in server and the client in the parent): **{:.1}** MiB after 1,000 \
         warm-up turns (one conversation, replaced each turn, and the 1,000 request runs the \
         console lists, which later turns replace one for one), **{:.1}** MiB after {} new \
         conversations at turn {}: **about {per_kib:.1} KiB per conversation**{written}. It is \
         approximate: the allocator keeps memory it freed, and what else the process holds moves \
         too. At that size the default {} conversations hold about {:.0} MiB.",
        r.before_mib,
        r.after_mib,
        thousands(r.conversations as f64, 0),
        r.depth,
        thousands(KEPT, 0),
        per_kib * KEPT / 1024.0,
    )
}

/// The section `continuation`.
pub fn section(f: &Figures) -> Section {
    let samples = f.bytes.first().map_or(0, |s| s.conversations);
    let body = format!(
        "Measured {} on {}; command `scripts/bench_continuation.sh --write`. One process holds the \
         testing kit's stand-in server (it answers at once) and two `lllm serve` routers on \
         127.0.0.1 serving a one-agent chat tactic with Dynamo's session hints, one keeping its \
         conversations in memory, one also writing them to a state directory. A stateless client \
         (keep-alive, the whole history in every request) asks turn {} of a conversation: user \
         messages of {} characters, each answered by the stand-in (about {} characters). Legs \
         alternate, {} turns each after {} warm-up turns; every response's \
         `x-lllm-session-source` is checked, so a leg that took another path fails.\n\n{}\n\n{}\n\n\
         Per stored conversation, the files under `STATE/conversations/` after turns asked one by \
         one, each continuing the conversation (mean of {samples} conversations). A conversation \
         is written as its transcript (what the client saw) and the tactic's dialogs (what went \
         downstream), so about twice its text; the bound on bytes counts the same bytes, the \
         bound on count is {}.\n\n{}\n\n{}",
        today(),
        machine(),
        f.depth,
        f.message_chars,
        f.message_chars + 16,
        thousands(f.requests as f64, 0),
        f.warm_up,
        latency(f),
        load(f),
        thousands(KEPT, 0),
        bytes(f),
        resident(f),
    );
    Section {
        name: "continuation",
        heading: "Continuing a served conversation",
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_bytes_and_memory_per_conversation_are_as_benchmarks_md_writes_them() {
        let figures: Figures = serde_json::from_value(serde_json::json!({
            "requests": 1000, "warm_up": 50, "depth": 10, "message_chars": 400,
            "latency": {
                "continued": {"p50_ms": 0.5, "p99_ms": 0.9},
                "fresh": {"p50_ms": 0.4, "p99_ms": 0.7},
                "continued_state": {"p50_ms": 0.6, "p99_ms": 1.4},
                "load_average": [0.5, 0.25]
            },
            "bytes": [{"depth": 1, "conversations": 10, "bytes_mean": 2300.0},
                      {"depth": 10, "conversations": 10, "bytes_mean": 18432.0}],
            "resident": {"conversations": 1000, "depth": 10, "before_mib": 40.0, "after_mib": 60.0}
        }))
        .expect("figures");
        let body = section(&figures).body;
        assert!(
            body.contains("| turn 10 (19 messages) | p50 | p99 |"),
            "{body}"
        );
        assert!(
            body.contains(
                "| **continuing costs (continued − fresh)** | **+0.100 ms** | **+0.200 ms** |"
            ),
            "{body}"
        );
        assert!(body.contains("**+0.100 ms** | **+0.500 ms** |"), "{body}");
        assert!(body.contains("| 10 | 20 | 18,432 B | 14,564 |"), "{body}");
        assert!(
            body.contains("about 20.5 KiB per conversation**, against 18.0 KiB as written"),
            "{body}"
        );
        assert!(body.contains("hold about 41 MiB"), "{body}");
        assert!(
            body.contains("load average (1 minute) was 0.50 before the legs and 0.25 after."),
            "{body}"
        );
    }
}
