#!/usr/bin/env bash
# lllm against the floor of its stack: the release `lllm run` and a bare async-openai client
# (bench/src/bin/bare_client.rs) send the same growing conversation to the same stand-in server, legs
# alternating, in one run. Prints a markdown table: cold 1-turn run, marginal CPU per turn, peak RSS,
# binary size, each against the floor (targets: cold ≤1.3×, CPU per turn ≤1.0× from each leg's least
# runs, peak RSS ≤2.0×).
# Never fails on a figure.
#   scripts/bench_floor.sh [--write] [--repeats N] [--turns N] [--lllm PATH]
# --write puts the table into BENCHMARKS.md's floor section; LLLM_FLOOR_REPEATS sets the repeats
# (default 31).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
args=()
for arg in "$@"; do
  if ! bench_write_flag "$arg"; then args+=("$arg"); fi
done
cargo build --release --quiet -p lllm-cli --bin lllm
cargo build --release --quiet -p lllm-bench --bin floor --bin bare_client --bin rusage --bin report
echo "lllm: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d), $(uptime)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin"/floor --repeats "${LLLM_FLOOR_REPEATS:-31}" "${args[@]}" >"$work/floor.md"
report floor "$work/floor.md"
