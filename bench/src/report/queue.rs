//! A batch on NATS JetStream against a local batch (`queue`): one JSON object.

use std::path::Path;

use serde::Deserialize;

use super::{read_json, table, today, ReportError};
use crate::splice::Section;

/// What the `queue` binary prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    items: u64,
    service_ms: u64,
    concurrency: u64,
    local_items_per_second: f64,
    workers: Vec<Workers>,
    serial_items: u64,
    local_ms_per_item: f64,
    queue_ms_per_item: f64,
}

/// One leg of workers.
#[derive(Debug, Deserialize)]
pub struct Workers {
    workers: u64,
    items_per_second: f64,
}

/// The section from the figures in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    Ok(vec![section(&read_json(path)?)])
}

/// The section `queue`.
pub fn section(f: &Figures) -> Section {
    let mut rows = vec![vec![
        "local batch (`lllm batch`)".to_owned(),
        format!("{:.0}", f.local_items_per_second),
    ]];
    rows.extend(f.workers.iter().map(|w| {
        vec![
            format!(
                "queue, {} worker{}",
                w.workers,
                if w.workers == 1 { "" } else { "s" }
            ),
            format!("{:.0}", w.items_per_second),
        ]
    }));
    let body = format!(
        "Measured {} on {}, Linux, command `scripts/bench_queue.sh --write`: {} one-turn items, a \
         stub server answering each request after {} ms, {} items at a time per worker (and in \
         the local batch), nats-server 2.15.1 with JetStream on loopback, the workers as tasks of \
         one process.\n\n{}\n\nOne item at a time ({} items): {:.1} ms per item locally, {:.1} ms \
         through the queue: **{:+.1} ms per item** for the queue, the result and the journal \
         copied into JetStream.\n",
        today(),
        std::env::consts::ARCH,
        f.items,
        f.service_ms,
        f.concurrency,
        table(&["how", "items per second"], &rows),
        f.serial_items,
        f.local_ms_per_item,
        f.queue_ms_per_item,
        f.queue_ms_per_item - f.local_ms_per_item
    );
    Section {
        name: "queue",
        heading: "A batch on NATS JetStream",
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_overhead_are_as_benchmarks_md_writes_them() {
        let figures: Figures = serde_json::from_value(serde_json::json!({
            "items": 400, "service_ms": 20, "concurrency": 8, "local_items_per_second": 350.2,
            "workers": [{"workers": 1, "items_per_second": 300.4, "seconds": 1.3},
                        {"workers": 2, "items_per_second": 580.0, "seconds": 0.7}],
            "serial_items": 100, "local_ms_per_item": 21.0, "queue_ms_per_item": 23.5
        }))
        .expect("figures");
        let body = section(&figures).body;
        assert!(
            body.contains("| local batch (`lllm batch`) | 350 |"),
            "{body}"
        );
        assert!(body.contains("| queue, 2 workers | 580 |"), "{body}");
        assert!(body.contains("**+2.5 ms per item**"), "{body}");
    }
}
