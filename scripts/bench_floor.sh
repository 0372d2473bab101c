#!/usr/bin/env bash
# lllm against the floor of its stack: the release `lllm run` and a bare async-openai client
# (bench/src/bin/bare_client.rs) send the same growing conversation to the same stand-in server, legs
# alternating, in one run. Prints a markdown table: cold 1-turn run, marginal CPU per turn, peak RSS,
# binary size, each against the floor (targets: ≤1.5×, ≤1.15×, ≤2.0×). Never fails on a timing.
#   scripts/bench_floor.sh [--repeats N] [--turns N] [--lllm PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p lllm-cli --bin lllm
cargo build --release --quiet -p lllm-bench --bin floor --bin bare_client --bin rusage
echo "lllm: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d), $(uptime)" >&2
exec "${CARGO_TARGET_DIR:-target}"/release/floor "$@"
