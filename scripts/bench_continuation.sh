#!/usr/bin/env bash
# What continuing a served conversation costs: the latency of a chat turn whose history is a stored
# conversation's transcript (its dialogs continue) against the same turn seeded fresh, and with
# conversations written through to a state directory (p50, p99); the bytes of a stored conversation
# as written at depths 1, 10 and 50; and a server process's resident memory per conversation.
# Never fails on a figure; fails if a request took another path than its leg measures.
#   scripts/bench_continuation.sh [--write]    # --write puts the figures into BENCHMARKS.md
# LLLM_CONTINUATION_REQUESTS sets the turns per leg (default 1000); LLLM_CONTINUATION_DEPTH the turn
# of the conversation they ask (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_continuation.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-bench --bin serve_continuation --bin report
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin"/serve_continuation --requests "${LLLM_CONTINUATION_REQUESTS:-1000}" \
  --depth "${LLLM_CONTINUATION_DEPTH:-10}" >"$work/figures.json"
report continuation "$work/figures.json"
