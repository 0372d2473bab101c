use serde_json::json;

use super::*;

/// A leg as `priority` prints it (fields the report does not read left out).
fn leg(
    setup: &str,
    leg: &str,
    makespan: (f64, f64),
    ttft_p50: [f64; 5],
    tokens: (f64, f64),
) -> Leg {
    let ttft: serde_json::Map<String, serde_json::Value> = CLASSES
        .iter()
        .zip(ttft_p50)
        .map(|(c, p50)| (c.to_string(), json!({"n": 9, "p50": p50, "p90": p50 * 1.2})))
        .collect();
    let carried = json!([
        {"kind": "lead", "priority": 5, "strict_priority": 1, "osl": 32, "requests": 9},
        {"kind": "fork", "priority": 2, "strict_priority": 1, "osl": 32, "requests": 27},
        {"kind": "background", "priority": null, "strict_priority": null, "osl": 300, "requests": 40},
        {"kind": "background", "priority": null, "strict_priority": null, "osl": 200, "requests": 28},
    ]);
    serde_json::from_value(json!({
        "leg": leg,
        "setup": setup,
        "background_hints": false,
        "workload": {"background_clients": 8, "background_prompt_words": 1500,
                     "background_max_tokens": [200, 400], "tactic_runs": 18, "runs_per_wave": 6,
                     "waves": 3, "wave_gap_s": 12.0, "stagger_ms": 300, "tactic_max_tokens": 32,
                     "warmup_s": 5.0, "fixed_window_s": 40.0},
        "errors": 0,
        "first_errors": [],
        "makespan_s": {"all": {"n": 18, "p50": makespan.0, "p90": makespan.1, "mean": 1.0, "max": 1.0}},
        "ttft_ms": ttft,
        "background_in_tactic_window": {"seconds": 20.0, "requests_per_s": 1.58, "output_tokens_per_s": tokens.0},
        "background_in_fixed_window": {"seconds": 40.0, "requests_per_s": 1.55, "output_tokens_per_s": tokens.1},
        "reordered": {"tactic_reordered": 0, "tactic_requests": 72, "background_reordered": 0,
                      "background_requests": 68, "pairs_tactic_over_background": 0,
                      "pairs_background_over_tactic": 0},
        "carried": carried,
    }))
    .expect("a leg")
}

fn run() -> Run {
    Run {
        legs: vec![
            leg(
                "--router-queue-threshold 0.0",
                "none",
                (10.6, 10.9),
                [2934.0, 3479.0, 3500.0, 3296.0, 2904.0],
                (466.0, 459.0),
            ),
            leg(
                "--router-queue-threshold 0.0",
                "uniform",
                (2.6, 3.2),
                [1012.0, 615.0, 364.0, 543.0, 2629.0],
                (441.0, 457.0),
            ),
            leg(
                "--router-queue-threshold 0.0",
                "auto",
                (2.542, 3.0),
                [289.0, 966.0, 469.0, 484.0, 2572.0],
                (456.2, 460.8),
            ),
        ],
        elapsed_s: 385,
        mock: "--speedup-ratio 1 --max-num-seqs 4".into(),
    }
}

#[test]
fn rows_are_as_benchmarks_md_writes_them() {
    let body = section(&run()).expect("section").body;
    assert!(body.contains("command `scripts/bench_priority.sh --write` (6 min 25 s). One simulated worker (`--speedup-ratio 1 --max-num-seqs 4`: real-time speed"), "{body}");
    assert!(body.contains("Background: a closed loop of 8 clients sending, back to back and without any hint, prompts of 1,500 fresh random words with `max_tokens` 200–400"));
    assert!(body.contains(
        "Tactics: 3 waves, 12 s apart, of 6 concurrent `steps` runs started 300 ms apart"
    ));
    assert!(body.contains(
        "| queue | `none` | 18/18 | 10.6 / 10.9 s | 2,934 / 3,479 / 3,500 / 3,296 / 2,904 | 3,521 / 4,175 / 4,200 / 3,955 / 3,485 | 1.58 req/s, 466 tok/s | 1.55 req/s, 459 tok/s | 0/72, 0/68 | 0 |"
    ), "{body}");
    assert!(
        body.contains("| queue | `auto` | 18/18 | 2.5 / 3.0 s | 289 / 966 / 469 / 484 / 2,572 |")
    );
}

#[test]
fn what_was_carried_and_the_conclusions_follow_the_table() {
    let body = section(&run()).expect("section").body;
    assert!(body.contains(
        "What the `auto` leg's tactic requests carried, as (kind, `priority`, `strict_priority`) × requests: lead (5, 1) ×9, fork (2, 1) ×27; background requests carried none."
    ), "{body}");
    assert!(body.contains(
        "`auto` against `none`: tactic makespan p50 **4.17× shorter** (10.6 s → 2.5 s); background output throughput -2.1 % while the tactics ran, +0.4 % over the fixed window. Goal (≥ 1.5× with the background within 15 %): met."
    ), "{body}");
    assert!(body.contains(
        "`uniform` (`priority: 10` on every agent): makespan p50 2.6 s, `auto` 2.5 s (auto's is 0.98× uniform's). `auto` ties `uniform` here"
    ), "{body}");
    assert!(body.contains("more than `none`'s waits of about 2.9 s)"));
    assert!(body.contains("join TTFT p50 469 ms under `auto` against 364 ms under `uniform`"));
    // Without the tracking and hinted legs, their sentences are left out.
    assert!(!body.contains("--router-track-output-blocks"));
    assert!(!body.contains("With the background carrying the same hints"));
}

#[test]
fn a_hinted_background_is_counted_by_its_fields() {
    let mut hinted = leg(
        "--router-queue-threshold 0.0",
        "uniform",
        (10.8, 11.2),
        [1.0; 5],
        (459.0, 464.0),
    );
    hinted.background_hints = true;
    hinted.carried = serde_json::from_value(json!([
        {"kind": "background", "priority": 10, "strict_priority": null, "osl": 300, "requests": 40},
        {"kind": "background", "priority": 10, "strict_priority": null, "osl": 200, "requests": 29},
    ]))
    .expect("carried");
    assert_eq!(hinted.setup_name(), HINTED);
    assert_eq!(background_carried(&hinted), "(10, –) ×69");
    assert_eq!(background_carried(&run().legs[0]), "none");
}

#[test]
fn no_leg_is_an_error() {
    let empty = Run {
        legs: Vec::new(),
        elapsed_s: 0,
        mock: String::new(),
    };
    assert!(section(&empty).is_err());
}
