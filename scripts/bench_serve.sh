#!/usr/bin/env bash
# What `lllm serve` adds: the latency of a chat turn over HTTP against the same turn in process (p50,
# p99; target ≤ 2 ms added at p50), requests per second with 16 clients, and the RSS of a `lllm
# serve` process holding 100 conversations. Prints a markdown table; never fails on a figure.
#   scripts/bench_serve.sh [--requests N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p lllm-cli --bin lllm
cargo build --release --quiet -p lllm-bench --bin serve_overhead
echo "lllm: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d), $(uptime)" >&2
exec "${CARGO_TARGET_DIR:-target}"/release/serve_overhead --lllm "${CARGO_TARGET_DIR:-target}/release/lllm" "$@"
