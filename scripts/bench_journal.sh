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
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_journal.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-bench --bin journal_overhead --bin report
dir=${LLLM_JOURNAL_DIR:-${CARGO_TARGET_DIR:-target}}
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
LLLM_JOURNAL_DIR="$dir" "$bin"/journal_overhead "${LLLM_JOURNAL_REPETITIONS:-101}" >"$work/figures.json"
report journal "$work/figures.json"
