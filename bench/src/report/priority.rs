//! Priority under contention on Dynamo's router queue (`priority`): one JSON object per leg.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// The setup of the legs whose background carries the tactics' hints.
const HINTED: &str = "queue, background with the same hints";
/// The request classes, in the table's order.
const CLASSES: [&str; 5] = ["lead", "fork", "join", "chain", "background"];

/// What one `priority` leg prints.
#[derive(Debug, Deserialize)]
pub struct Leg {
    leg: String,
    setup: String,
    #[serde(default)]
    background_hints: bool,
    workload: Workload,
    errors: u64,
    makespan_s: Makespans,
    ttft_ms: BTreeMap<String, Summary>,
    background_in_tactic_window: Throughput,
    background_in_fixed_window: Throughput,
    reordered: Reordered,
    carried: Vec<Carried>,
}

#[derive(Debug, Deserialize)]
struct Workload {
    tactic_runs: u64,
    background_clients: u64,
    background_prompt_words: u64,
    background_max_tokens: [u64; 2],
    warmup_s: f64,
    waves: u64,
    wave_gap_s: f64,
    runs_per_wave: u64,
    stagger_ms: u64,
    tactic_max_tokens: u64,
    fixed_window_s: f64,
}

#[derive(Debug, Deserialize)]
struct Makespans {
    all: Summary,
}

#[derive(Debug, Deserialize)]
struct Summary {
    n: u64,
    p50: Option<f64>,
    p90: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Throughput {
    requests_per_s: f64,
    output_tokens_per_s: f64,
}

#[derive(Debug, Deserialize)]
struct Reordered {
    tactic_reordered: u64,
    tactic_requests: u64,
    background_reordered: u64,
    background_requests: u64,
}

/// The requests of one kind that carried the same priority fields.
#[derive(Debug, Deserialize)]
struct Carried {
    kind: String,
    priority: Option<i64>,
    strict_priority: Option<i64>,
    requests: u64,
}

/// How one run of the benchmark went: its legs, how long it took, the simulated engine's flags.
pub struct Run {
    /// The legs, in the order they ran.
    pub legs: Vec<Leg>,
    /// The whole benchmark's wall time in seconds.
    pub elapsed_s: u64,
    /// The mocker's flags (`--speedup-ratio 1 --max-num-seqs 4`).
    pub mock: String,
}

/// The section from the legs in the files at `paths`.
pub fn report(paths: &[&Path], elapsed_s: u64, mock: &str) -> Result<Vec<Section>, ReportError> {
    let legs = paths
        .iter()
        .map(|path| read_json(path))
        .collect::<Result<Vec<Leg>, _>>()?;
    let run = Run {
        legs,
        elapsed_s,
        mock: mock.to_owned(),
    };
    Ok(vec![section(&run)?])
}

impl Leg {
    fn setup_name(&self) -> &'static str {
        if self.background_hints {
            HINTED
        } else if self.setup.contains("track-output") {
            "queue + output tracking"
        } else {
            "queue"
        }
    }

    fn makespan_p50(&self) -> Option<f64> {
        self.makespan_s.all.p50
    }

    fn ttft(&self, class: &str, p90: bool) -> Option<f64> {
        let summary = self.ttft_ms.get(class)?;
        if p90 {
            summary.p90
        } else {
            summary.p50
        }
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| thousands(v, 0))
}

fn s(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
}

fn dash(v: Option<i64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| v.to_string())
}

fn row(d: &Leg) -> Vec<String> {
    let (m, r) = (&d.makespan_s.all, &d.reordered);
    let (w, f) = (
        &d.background_in_tactic_window,
        &d.background_in_fixed_window,
    );
    let ttfts = |p90| {
        CLASSES
            .iter()
            .map(|c| ms(d.ttft(c, p90)))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let throughput = |t: &Throughput| {
        format!(
            "{:.2} req/s, {:.0} tok/s",
            t.requests_per_s, t.output_tokens_per_s
        )
    };
    vec![
        d.setup_name().to_owned(),
        format!("`{}`", d.leg),
        format!("{}/{}", m.n, d.workload.tactic_runs),
        format!("{} / {} s", s(m.p50), s(m.p90)),
        ttfts(false),
        ttfts(true),
        throughput(w),
        throughput(f),
        format!(
            "{}/{}, {}/{}",
            r.tactic_reordered, r.tactic_requests, r.background_reordered, r.background_requests
        ),
        d.errors.to_string(),
    ]
}

/// The tactic requests' (kind, priority, strict_priority) × requests.
fn carried(d: &Leg) -> String {
    d.carried
        .iter()
        .filter(|c| c.kind != "background")
        .map(|c| {
            format!(
                "{} ({}, {}) ×{}",
                c.kind,
                dash(c.priority),
                dash(c.strict_priority),
                c.requests
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The background's (priority, strict_priority) × requests, its osl aside; `none` if untagged.
fn background_carried(d: &Leg) -> String {
    let mut counts: BTreeMap<(Option<i64>, Option<i64>), u64> = BTreeMap::new();
    for c in d.carried.iter().filter(|c| c.kind == "background") {
        *counts.entry((c.priority, c.strict_priority)).or_default() += c.requests;
    }
    if counts.keys().all(|(p, t)| p.is_none() && t.is_none()) {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|((p, t), n)| format!("({}, {}) ×{n}", dash(*p), dash(*t)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The section `priority`.
pub fn section(run: &Run) -> Result<Section, ReportError> {
    let first = run
        .legs
        .first()
        .ok_or_else(|| ReportError::Figures("priority: no leg".into()))?;
    let by = |setup: &str, leg: &str| {
        run.legs
            .iter()
            .find(|d| d.setup_name() == setup && d.leg == leg)
    };
    let header = [
        "Dynamo",
        "leg",
        "runs done",
        "tactic makespan p50 / p90",
        "TTFT p50, ms: lead / fork / join / chain / background",
        "TTFT p90, ms",
        "background while tactics ran",
        "background, fixed window",
        "reordered: tactic, background",
        "errors",
    ];
    let rows: Vec<Vec<String>> = run.legs.iter().map(row).collect();
    let mut body = format!(
        "{}\n\n{}\n\n",
        method(run, &first.workload),
        table(&header, &rows)
    );
    if let Some(auto) = by("queue", "auto") {
        body.push_str(&format!(
            "What the `auto` leg's tactic requests carried, as (kind, `priority`, `strict_priority`) \
             × requests: {}; background requests carried none",
            carried(auto)
        ));
        if let (Some(hu), Some(ha)) = (by(HINTED, "uniform"), by(HINTED, "auto")) {
            body.push_str(&format!(
                "; with the same hints, as (`priority`, `strict_priority`) × requests, {} under \
                 `uniform` and {} under `auto`",
                background_carried(hu),
                background_carried(ha)
            ));
        }
        body.push_str(".\n\n");
    }
    body.push_str(&conclusions(run).join(" "));
    Ok(Section {
        name: "priority",
        heading: "Priority under contention",
        body,
    })
}

/// The paragraph that says how the legs were run.
fn method(run: &Run, w: &Workload) -> String {
    format!(
        "Measured {} on {}, NVIDIA Dynamo 1.6.1; command `scripts/bench_priority.sh --write` ({} min \
         {} s). One simulated worker (`{}`: real-time speed, four sequences at a time) behind the \
         frontend's router queue (`--router-queue-threshold 0.0`), started afresh for each leg. \
         Background: a closed loop of {} clients sending, back to back and without any hint, prompts \
         of {} fresh random words with `max_tokens` {}–{}, so that requests always wait in the \
         router queue; it warms up {:.0} s, then runs through the tactics. Tactics: {} waves, {:.0} s \
         apart, of {} concurrent `steps` runs started {} ms apart, alternately a fan-out (lead turn, \
         three forks of its dialog in `parallel`, a join that reads their answers) and a chain (plan, \
         critique by a second agent, revise), `max_tokens` {}, each run with its own team and session \
         prefix, all with `profile: dynamo` (so `osl` is sent); the legs differ only in `priority`. \
         Makespan: a run's start to its answer. TTFT: the frontend's `ttft_ms` for each request (the \
         simulated engine streams no text, so no client-side first piece arrives). Background \
         throughput: completed background requests and their output tokens per second, inside the \
         window in which tactics ran, and inside the same fixed {:.0} s window from the first \
         tactic's start in every leg. Reordered: requests whose first token came before that of some \
         request sent at least 10 ms earlier, which was then still waiting (tactic requests of all \
         kinds, then background requests). The last three rows (\"queue, background with the same \
         hints\") rerun `none`, `uniform` and `auto` with the background carrying the hints the \
         tactics' agents carry in that leg, as an `lllm batch` run of the same settings beside the \
         interactive runs (`profile: dynamo`, its own session prefix, each request a lone request of \
         a batch run): nothing under `none`, `priority: 10` under `uniform`, the batch class's \
         `priority: 1` (the weight of a lone request) and no `strict_priority` under `auto`.",
        today(),
        machine(),
        run.elapsed_s / 60,
        run.elapsed_s % 60,
        run.mock,
        w.background_clients,
        thousands(w.background_prompt_words as f64, 0),
        w.background_max_tokens[0],
        w.background_max_tokens[1],
        w.warmup_s,
        w.waves,
        w.wave_gap_s,
        w.runs_per_wave,
        w.stagger_ms,
        w.tactic_max_tokens,
        w.fixed_window_s,
    )
}

/// What the legs show, one sentence or more per comparison that the run allows.
fn conclusions(run: &Run) -> Vec<String> {
    let by = |setup: &str, leg: &str| {
        run.legs
            .iter()
            .find(|d| d.setup_name() == setup && d.leg == leg)
    };
    let (none, uniform, auto) = (
        by("queue", "none"),
        by("queue", "uniform"),
        by("queue", "auto"),
    );
    let mut out = Vec::new();
    if let (Some(auto), Some(none)) = (auto, none) {
        out.extend(auto_against_none(auto, none));
    }
    if let (Some(auto), Some(uniform)) = (auto, uniform) {
        out.extend(auto_against_uniform(auto, uniform, none));
    }
    let tracking = (
        by("queue + output tracking", "auto"),
        by("queue + output tracking", "none"),
    );
    if let ((Some(ta), Some(tn)), Some(auto), Some(none)) = (tracking, auto, none) {
        out.extend(output_tracking(ta, tn, auto, none));
    }
    if let (Some(hn), Some(hu), Some(ha)) = (
        by(HINTED, "none"),
        by(HINTED, "uniform"),
        by(HINTED, "auto"),
    ) {
        out.extend(hinted_background(hn, hu, ha, uniform, auto));
    }
    out
}

fn tokens_per_s(t: &Throughput) -> f64 {
    t.output_tokens_per_s
}

fn auto_against_none(auto: &Leg, none: &Leg) -> Option<String> {
    let (n, a) = (none.makespan_p50()?, auto.makespan_p50()?);
    let ratio = n / a;
    let tw = tokens_per_s(&auto.background_in_tactic_window)
        / tokens_per_s(&none.background_in_tactic_window)
        - 1.0;
    let fw = tokens_per_s(&auto.background_in_fixed_window)
        / tokens_per_s(&none.background_in_fixed_window)
        - 1.0;
    let met = ratio >= 1.5 && tw.abs() <= 0.15;
    Some(format!(
        "`auto` against `none`: tactic makespan p50 **{ratio:.2}× shorter** ({n:.1} s → {a:.1} s); \
         background output throughput {:+.1} % while the tactics ran, {:+.1} % over the fixed \
         window. Goal (≥ 1.5× with the background within 15 %): {}.",
        tw * 100.0,
        fw * 100.0,
        if met { "met" } else { "not met" }
    ))
}

fn auto_against_uniform(auto: &Leg, uniform: &Leg, none: Option<&Leg>) -> Option<String> {
    let (u, a) = (uniform.makespan_p50()?, auto.makespan_p50()?);
    let ra = a / u;
    let mut line = format!(
        "`uniform` (`priority: 10` on every agent): makespan p50 {u:.1} s, `auto` {a:.1} s (auto's \
         is {ra:.2}× uniform's)."
    );
    if (ra - 1.0).abs() <= 0.15 {
        let waits = s(none
            .and_then(|n| n.ttft("background", false))
            .map(|ms| ms / 1e3));
        line.push_str(&format!(
            " `auto` ties `uniform` here: the gain comes from jumping the background queue, which \
             both do (`auto` by the `strict_priority: 1` tier, `uniform` by a head start of 10 s \
             under the `fcfs` policy, more than `none`'s waits of about {waits} s); the weights only \
             order tactic requests among themselves, which are short and few at a time, and across \
             runs they favour starting runs (lead 5, plan 3) over finishing ones (join and revise \
             1): join TTFT p50 {} ms under `auto` against {} ms under `uniform`, which does not \
             shorten the median run.",
            ms(auto.ttft("join", false)),
            ms(uniform.ttft("join", false))
        ));
    }
    Some(line)
}

fn output_tracking(ta: &Leg, tn: &Leg, auto: &Leg, none: &Leg) -> Option<String> {
    let ca = ta.makespan_p50()? / auto.makespan_p50()? - 1.0;
    let cn = tn.makespan_p50()? / none.makespan_p50()? - 1.0;
    let ct = tokens_per_s(&ta.background_in_fixed_window)
        / tokens_per_s(&auto.background_in_fixed_window)
        - 1.0;
    let mut line = format!(
        "With `--router-track-output-blocks` (the router then tracks output blocks, which the `osl` \
         every leg sends shapes): makespan p50 `none` {} s ({:+.0} %), `auto` {} s ({:+.0} %), \
         background throughput {:+.1} % for `auto`.",
        s(tn.makespan_p50()),
        cn * 100.0,
        s(ta.makespan_p50()),
        ca * 100.0,
        ct * 100.0
    );
    if ca.abs() <= 0.15 && cn.abs() <= 0.15 {
        line.push_str(
            " `osl` changes nothing measurable here: with one worker the router has no choice of \
             worker to make with the load it predicts, and the queue's threshold is a fraction of \
             the worker's prefill-token capacity (`max_num_batched_tokens`), not of its KV blocks.",
        );
    }
    Some(line)
}

fn hinted_background(
    hn: &Leg,
    hu: &Leg,
    ha: &Leg,
    uniform: Option<&Leg>,
    auto: Option<&Leg>,
) -> Option<String> {
    let (pn, pu, pa) = (hn.makespan_p50()?, hu.makespan_p50()?, ha.makespan_p50()?);
    let tput = |d: &Leg| tokens_per_s(&d.background_in_fixed_window);
    let ru = pu / pa;
    let untagged = match (
        uniform.and_then(Leg::makespan_p50),
        auto.and_then(Leg::makespan_p50),
    ) {
        (Some(u), Some(a)) => {
            format!(" (against an untagged background: `uniform` {u:.1} s, `auto` {a:.1} s)")
        }
        _ => String::new(),
    };
    let mut line = format!(
        "With the background carrying the same hints (an `lllm batch` run of the same settings \
         beside the interactive runs): tactic makespan p50 `none` {pn:.1} s, `uniform` {pu:.1} s, \
         `auto` {pa:.1} s, so `auto`'s is **{ru:.2}× shorter** than `uniform`'s{untagged}; \
         background output throughput over the fixed window {:+.1} % under `uniform` and {:+.1} % \
         under `auto`, against `none`.",
        (tput(hu) / tput(hn) - 1.0) * 100.0,
        (tput(ha) / tput(hn) - 1.0) * 100.0
    );
    if ru >= 1.5 && (pu / pn - 1.0).abs() <= 0.25 {
        line.push_str(
            " A written number separates nothing when the background writes it too: every request \
             carries `priority: 10`, the same head start, so the tactics wait behind the background \
             in arrival order as under `none`. `auto` keeps its gain because the class, not the \
             number, separates them: the interactive runs' requests are in the `strict_priority: 1` \
             tier, and the batch run's send only their weight (`priority: 1`) with no tier, so the \
             router queue serves every waiting tactic request before any background request.",
        );
    }
    Some(line)
}

#[cfg(test)]
mod tests;
