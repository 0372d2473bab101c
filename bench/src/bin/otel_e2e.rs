//! What OpenTelemetry export adds to whole `lllm run` processes: one request each against a
//! stand-in server (`stub_server`), without export and exporting to a collector process
//! (`otel_overhead --sink`, which must receive each run's 3 spans), alternating, then 3 runs
//! exporting to 127.0.0.1:9, where nothing listens. Prints one JSON object (for `report otel`).
//!
//! ```text
//! otel_e2e LLLM STUB_URL SINK_URL [RUNS]    # RUNS of each leg, default 21
//! ```
#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context as _};
use lllm_bench::percentile;
use serde_json::json;

/// The three ways a run is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leg {
    None,
    Export,
    Dead,
}

struct Setup {
    lllm: PathBuf,
    tactic: PathBuf,
    sink: String,
    client: reqwest::Client,
}

impl Setup {
    /// The spans the collector has received so far.
    async fn spans(&self) -> anyhow::Result<u64> {
        let stats = self
            .client
            .get(format!("{}/stats", self.sink))
            .send()
            .await?
            .text()
            .await?;
        let stats: serde_json::Value = serde_json::from_str(&stats)?;
        stats["spans"]
            .as_u64()
            .context("the collector's /stats has no `spans`")
    }

    /// One `lllm run` of `leg`: its wall time in ms and its stderr.
    async fn once(&self, leg: Leg) -> anyhow::Result<(f64, String)> {
        let before = self.spans().await?;
        let mut command = Command::new(&self.lllm);
        command
            .args(["run", &self.tactic.display().to_string(), "--input", "hi"])
            .stdin(Stdio::null());
        // The caller's exporter settings would change the legs.
        for (key, _) in std::env::vars() {
            if key.starts_with("OTEL_")
                || key.starts_with("LLLM_LOG")
                || key.starts_with("TRACEPARENT")
            {
                command.env_remove(key);
            }
        }
        match leg {
            Leg::None => {}
            Leg::Export => {
                command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &self.sink);
            }
            Leg::Dead => {
                command.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9");
            }
        }
        let started = Instant::now();
        let out = command.output().context("cannot start lllm")?;
        let wall = started.elapsed().as_secs_f64() * 1e3;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        if !out.status.success() || !stdout.contains("stub answer to") {
            bail!(
                "lllm run failed ({}): {stdout:.300} {stderr:.300}",
                out.status
            );
        }
        let spans = self.spans().await? - before;
        let expected = if leg == Leg::Export { 3 } else { 0 };
        if spans != expected {
            bail!("the collector received {spans} spans of a run, expected {expected}");
        }
        Ok((wall, stderr))
    }
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

fn median(values: &[f64]) -> f64 {
    let v = sorted(values.to_vec());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The tactic every run answers: one agent of `stub` at `stub_url`.
fn write_tactic(dir: &Path, stub_url: &str) -> anyhow::Result<PathBuf> {
    let tactic = dir.join("solo.yaml");
    std::fs::write(
        &tactic,
        format!(
            "global:\n  model_name: openai/stub\n  model_args: {{api_base: \"{stub_url}\", max_tokens: 8}}\n\
             agent_configs:\n  - name: solo\n    system_prompt: Be brief.\n"
        ),
    )?;
    Ok(tactic)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (lllm, stub, sink, runs) = match args.as_slice() {
        [lllm, stub, sink] => (lllm, stub, sink, 21),
        [lllm, stub, sink, runs] => (lllm, stub, sink, runs.parse()?),
        _ => bail!("usage: otel_e2e LLLM STUB_URL SINK_URL [RUNS]"),
    };
    let dir = std::env::temp_dir().join(format!("lllm-otel-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let setup = Setup {
        lllm: PathBuf::from(lllm),
        tactic: write_tactic(&dir, stub)?,
        sink: sink.clone(),
        client: reqwest::Client::new(),
    };
    for leg in [Leg::None, Leg::Export, Leg::None, Leg::Export] {
        setup.once(leg).await?; // Warms the page cache.
    }
    let (mut none, mut export) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let order = if i % 2 == 0 {
            [Leg::None, Leg::Export]
        } else {
            [Leg::Export, Leg::None]
        };
        for leg in order {
            let (ms, _) = setup.once(leg).await?;
            if leg == Leg::None {
                &mut none
            } else {
                &mut export
            }
            .push(ms);
        }
    }
    let (mut dead, mut warnings) = (Vec::new(), BTreeSet::new());
    for _ in 0..3 {
        let (ms, stderr) = setup.once(Leg::Dead).await?;
        dead.push(ms);
        warnings.extend(
            stderr
                .lines()
                .filter(|l| l.contains("OpenTelemetry"))
                .map(|l| l.trim().to_owned()),
        );
    }
    std::fs::remove_dir_all(&dir).ok();
    let paired: Vec<f64> = export.iter().zip(&none).map(|(e, n)| e - n).collect();
    println!(
        "{}",
        json!({
            "runs": runs,
            "none_median_ms": median(&none), "none_p90_ms": percentile(&sorted(none.clone()), 0.9),
            "export_median_ms": median(&export), "export_p90_ms": percentile(&sorted(export.clone()), 0.9),
            "added_median_ms": median(&paired),
            "dead_runs": dead.len(), "dead_median_ms": median(&dead),
            "dead_max_ms": dead.iter().copied().fold(0.0, f64::max),
            "dead_warning": warnings.into_iter().next(),
        })
    );
    Ok(())
}
