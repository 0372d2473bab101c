#!/usr/bin/env bash
# What a run's journal (`lllm run --journal FILE`) adds to a 100-turn run against the stand-in server
# in the same process: runs with and without a journal alternate (101 each after 3 warm-up runs each;
# LLLM_JOURNAL_REPETITIONS sets another count), for a text answer per turn and for one tool call per
# turn. Prints median and p90 of each leg, the overhead, the journal's size, and the cost of one append
# in a tight loop. The stand-in answers at once: the worst case for the journal's share of a run.
#   scripts/bench_journal.sh [--write]    # --write puts the figures into BENCHMARKS.md
# LLLM_JOURNAL_DIR sets where the journals are written (default target/, on the disk the repository is
# on: a /tmp on tmpfs would make writes cheaper than a journal next to a project's files).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p lllm-bench --bin journal_overhead
dir=${LLLM_JOURNAL_DIR:-${CARGO_TARGET_DIR:-target}}
mkdir -p "$dir"
fstype=$(df --output=fstype "$dir" 2>/dev/null | tail -1 | tr -d ' ' || true)
figures=$(LLLM_JOURNAL_DIR="$dir" "${CARGO_TARGET_DIR:-target}"/release/journal_overhead "${LLLM_JOURNAL_REPETITIONS:-101}")
echo "$figures"
python3 - "$figures" "${fstype:-unknown}" <<'PY'
import json, sys
f = json.loads(sys.argv[1])
for w in f["workloads"]:
    o, j = w["without_journal"], w["with_journal"]
    print(f"{w['workload']:>4}: without {o['median_ms']:.2f} ms (p90 {o['p90_ms']:.2f}), with {j['median_ms']:.2f} ms "
          f"(p90 {j['p90_ms']:.2f}): overhead {w['overhead_median_pct']:+.1f} % of the medians "
          f"({w['overhead_paired_median_pct']:+.1f} % run by run); journal {w['journal_bytes']:,} B in "
          f"{w['journal_lines']} lines, {w['bytes_per_turn']:.0f} B per turn")
a = f["append"]
print(f"one append of a {a['answer_line_bytes']}-byte answer line, tight loop: {a['append_ns'] / 1e3:.2f} us "
      f"(serialising {a['serialise_ns'] / 1e3:.2f} us, one write() {a['write_ns'] / 1e3:.2f} us); "
      f"creating a journal {a['create_median_us']:.0f} us; journal on {sys.argv[2]}")
PY
if [ "${1:-}" = --write ]; then
  python3 - "$figures" "${fstype:-unknown}" <<'PY'
import json, os, platform, re, sys, time
f = json.loads(sys.argv[1])
fstype = sys.argv[2]
names = {"text": "text answer", "tool": "one tool call, then the answer"}
rows = []
for w in f["workloads"]:
    o, j = w["without_journal"], w["with_journal"]
    rows.append(
        f"| {names[w['workload']]} | {w['journal_lines']} | {o['median_ms']:.1f} / {o['p90_ms']:.1f} ms | "
        f"{j['median_ms']:.1f} / {j['p90_ms']:.1f} ms | **{w['overhead_median_pct']:.1f} %** | "
        f"{w['overhead_paired_median_pct']:.1f} % | {w['added_us_per_line']:.1f} µs | "
        f"{w['journal_bytes']:,} B | {w['bytes_per_turn']:.0f} B |"
    )
worst = max(w["overhead_median_pct"] for w in f["workloads"])
a = f["append"]
reps = f["workloads"][0]["repetitions"]
section = (
    "<!-- journal:start -->\n"
    f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores), journal on {fstype}; "
    "command `scripts/bench_journal.sh --write`. One process holds the agent and the testing kit's stand-in "
    "server, which answers at once: the run is as short as a run can be, so this is the worst case for the "
    "journal's share (against a real model, whose answers take milliseconds to seconds, the same writes are a "
    "vanishing share). One run is 100 turns of one dialog (`receive` + `respond`), timed from creating the "
    "journal to recording the run's end; runs with and without a journal (a fresh file each time) alternate, "
    f"{reps} of each after 3 warm-up runs of each.\n\n"
    "| each turn | journal lines per run | without journal, median / p90 | with journal, median / p90 | "
    "overhead (medians) | overhead run by run (median) | added time per line | journal size | per turn |\n"
    "|---|---|---|---|---|---|---|---|---|\n"
    + "\n".join(rows) + "\n\n"
    f"Goal: less than 5 % ({'met' if worst < 5 else 'not met'}: at most {worst:.1f} %). "
    f"One append of a typical answer ({a['answer_line_bytes']}-byte line) in a tight loop takes "
    f"{a['append_ns'] / 1e3:.1f} µs: {a['serialise_ns'] / 1e3:.2f} µs to serialise it and "
    f"{a['write_ns'] / 1e3:.1f} µs for its one `write()`; creating a journal takes {a['create_median_us']:.0f} µs. "
    "Inside a run, between requests, caches are cold and each line costs more (the column \"added time per line\").\n"
    "<!-- journal:end -->"
)
text = open("BENCHMARKS.md").read()
if "<!-- journal:start -->" not in text:
    text = text.rstrip("\n") + "\n\n## Journal overhead\n\n<!-- journal:start -->\n<!-- journal:end -->\n"
text = re.sub(r"<!-- journal:start -->.*<!-- journal:end -->", lambda _: section, text, flags=re.S)
open("BENCHMARKS.md", "w").write(text)
PY
fi
