#!/usr/bin/env bash
# 1,000 concurrent dialogs × 10 turns against a local stand-in server in the same process: throughput,
# peak RSS (client and stub server together), and a check that no message was lost.
#   scripts/bench_concurrency.sh [--write]    # --write puts the figures into BENCHMARKS.md
# LLLM_DIALOGS sets another number of dialogs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_concurrency.sh [--write]" >&2; exit 2 ;;
esac
# Each dialog in flight holds a client and a server socket.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 8192
cargo build --release --quiet -p lllm-bench --bin concurrency --bin report
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin"/concurrency >"$work/figures.json"
report concurrency "$work/figures.json"
