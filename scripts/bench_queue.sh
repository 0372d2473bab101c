#!/usr/bin/env bash
# A batch on NATS JetStream against a local batch (bench/src/bin/queue.rs): items per second with 1,
# 2 and 4 workers of 8 items at a time against a stub with a fixed service time of 20 ms, and what
# the queue and the JetStream journal add per item when items run one at a time. Installs
# nats-server (scripts/servers/nats.sh) into the cache on first use. About a minute.
#   scripts/bench_queue.sh [--write]    # --write puts the figures into BENCHMARKS.md
# LLLM_QUEUE_ITEMS sets the items per leg (default 400).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_queue.sh [--write]" >&2; exit 2 ;;
esac
eval "$(scripts/servers/nats.sh install)"
export LLLM_NATS_SERVER
cargo build --release --quiet -p lllm-bench --bin queue --bin report
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin"/queue >"$work/figures.json"
report queue "$work/figures.json"
