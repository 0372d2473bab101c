//! lllm and Python lllm side by side (`vs_python`): one JSON object, and a chart of the ratios.

use std::path::Path;

use serde::Deserialize;

use super::{machine, read_json, table, thousands, today, ReportError};
use crate::splice::Section;

/// Where the chart goes, beside BENCHMARKS.md.
pub const CHART: &str = "docs/bench_vs_python.svg";

/// What `vs_python` prints.
#[derive(Debug, Deserialize)]
pub struct Figures {
    python_version: String,
    python: Client,
    rust: Client,
}

/// One client's figures.
#[derive(Debug, Deserialize)]
struct Client {
    one_turn_wall_s: f64,
    cpu_per_turn_ms: f64,
    peak_rss_mib: f64,
}

/// A measure: its label, how a value is written, and the goal for the ratio.
struct Measure {
    label: &'static str,
    value: fn(&Client) -> f64,
    show: fn(f64) -> String,
    goal: f64,
}

const MEASURES: [Measure; 3] = [
    Measure {
        label: "whole-process wall time, 1 turn",
        value: |c| c.one_turn_wall_s,
        show: |v| format!("{v:.3} s"),
        goal: 300.0,
    },
    Measure {
        label: "client CPU time per turn, 100 turns",
        value: |c| c.cpu_per_turn_ms,
        show: |v| format!("{v:.2} ms"),
        goal: 100.0,
    },
    Measure {
        label: "peak RSS, 100 turns",
        value: |c| c.peak_rss_mib,
        show: |v| format!("{v:.1} MiB"),
        goal: 30.0,
    },
];

impl Figures {
    fn ratio(&self, m: &Measure) -> f64 {
        (m.value)(&self.python) / (m.value)(&self.rust)
    }
}

/// Reads the figures in the file at `path`.
pub fn read(path: &Path) -> Result<Figures, ReportError> {
    read_json(path)
}

/// The section `python`.
pub fn section(f: &Figures) -> Section {
    let rows: Vec<Vec<String>> = MEASURES
        .iter()
        .map(|m| {
            let ratio = f.ratio(m);
            vec![
                m.label.to_owned(),
                (m.show)((m.value)(&f.python)),
                (m.show)((m.value)(&f.rust)),
                format!("**{}×**", thousands(ratio, 0)),
                format!(
                    "≥{}× ({})",
                    m.goal,
                    if ratio >= m.goal { "met" } else { "not met" }
                ),
            ]
        })
        .collect();
    let header = ["measure", "Python lllm 0.2.1", "lllm", "ratio", "goal"];
    Section {
        name: "python",
        heading: "lllm and Python lllm, side by side",
        body: format!(
            "Measured {} on {}, Linux, Python {}; command `scripts/bench_vs_python.sh --write`. Both \
             clients run the same conversation against the same local stand-in server \
             (`bench/src/bin/stub_server.rs`); the 1-turn time is the median of 5 whole-process \
             runs, CPU and RSS of 3 runs of 100 turns.\n\n{}\n\n![ratios]({CHART})",
            today(),
            machine(),
            f.python_version,
            table(&header, &rows)
        ),
    }
}

/// A bar chart of the three ratios on a log scale, with each goal, as SVG.
pub fn chart(f: &Figures) -> String {
    let (width, height, left, bar) = (640.0, 220.0, 260.0, 28.0);
    let top = MEASURES.iter().map(|m| f.ratio(m)).fold(10.0_f64, f64::max);
    let scale = (width - left - 80.0) / top.log10();
    let mut bars = String::new();
    for (i, m) in MEASURES.iter().enumerate() {
        let ratio = f.ratio(m);
        let y = 40.0 + i as f64 * 55.0;
        let length = (scale * ratio.max(1.0).log10()).max(2.0);
        let goal_x = left + scale * m.goal.log10();
        bars.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\">{}</text>\
             <rect x=\"{left}\" y=\"{y}\" width=\"{length:.1}\" height=\"{bar}\" fill=\"#3b6fb6\"/>\
             <text x=\"{:.1}\" y=\"{}\" font-size=\"13\">{}×</text>\
             <line x1=\"{goal_x:.1}\" x2=\"{goal_x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#c0392b\" stroke-dasharray=\"3,2\"/>",
            left - 10.0,
            y + 19.0,
            m.label,
            left + length + 6.0,
            y + 19.0,
            thousands(ratio, 0),
            y - 4.0,
            y + bar + 4.0,
        ));
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\"><text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">lllm \
         vs Python lllm: how many times better (log scale; red: goal)</text>{bars}</svg>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> Figures {
        serde_json::from_str(
            r#"{"python_version": "3.11.7",
                "python": {"one_turn_wall_s": 3.42, "cpu_per_turn_ms": 42.76, "peak_rss_mib": 263.2},
                "rust": {"one_turn_wall_s": 0.004186, "cpu_per_turn_ms": 0.1645, "peak_rss_mib": 8.3}}"#,
        )
        .expect("figures")
    }

    #[test]
    fn rows_are_as_benchmarks_md_writes_them() {
        let body = section(&figures()).body;
        assert!(
            body.contains(", Linux, Python 3.11.7; command `scripts/bench_vs_python.sh --write`.")
        );
        assert!(body.contains(
            "| whole-process wall time, 1 turn | 3.420 s | 0.004 s | **817×** | ≥300× (met) |\n\
             | client CPU time per turn, 100 turns | 42.76 ms | 0.16 ms | **260×** | ≥100× (met) |\n\
             | peak RSS, 100 turns | 263.2 MiB | 8.3 MiB | **32×** | ≥30× (met) |\n\n\
             ![ratios](docs/bench_vs_python.svg)"
        ), "{body}");
    }

    #[test]
    fn the_chart_has_a_bar_and_a_goal_per_measure() {
        let svg = chart(&figures());
        assert!(svg
            .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"220\""));
        assert_eq!(svg.matches("<rect ").count(), 3);
        assert_eq!(svg.matches("stroke=\"#c0392b\"").count(), 3);
        assert!(svg.contains(">817×</text>"), "{svg}");
        assert!(svg.ends_with("</svg>\n"));
    }
}
