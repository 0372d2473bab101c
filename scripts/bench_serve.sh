#!/usr/bin/env bash
# What `lllm serve` adds: the latency of a chat turn over HTTP against the same turn in process (p50,
# p99; target at most 2 ms added at p50), requests per second with 16 clients, and the RSS of a
# `lllm serve` process holding 100 conversations. Never fails on a figure.
#   scripts/bench_serve.sh [--write]    # --write puts the figures into BENCHMARKS.md
# LLLM_SERVE_REQUESTS sets the turns per leg (default 2000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_serve.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-cli --bin lllm
cargo build --release --quiet -p lllm-bench --bin serve_overhead --bin report
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin"/serve_overhead --lllm "$bin/lllm" --requests "${LLLM_SERVE_REQUESTS:-2000}" >"$work/figures.json"
report serve "$work/figures.json"
