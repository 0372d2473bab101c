#!/usr/bin/env bash
# The payoff of session hints on NVIDIA Dynamo's KV router: the same fixed-seed agent workload (48 root
# dialogs arriving over 10 s, 300-2,000-token system prompts, 4-8 turns of tool results after 0.2-2 s
# waits, 30 % of roots forking 1-2 subagents) in three legs, Dynamo restarted for each:
#   family  hints with fork_session: family, frontend with session affinity
#   own     hints with fork_session: own (forks send their own id and name their parent), affinity on
#   none    session: false, frontend without the affinity flag (what a client without hints gets)
# PAYOFF_WORKERS sets the simulated workers (default 4, each with 2,048 KV blocks of 16 tokens; with 2,
# the active context of the 48 dialogs does not fit, and every leg loses cache to eviction).
# Prints a table; with --write, also puts it in BENCHMARKS.md. About 2-3 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_payoff.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-bench --bin payoff --bin report
results=$(mktemp)
trap 'scripts/servers/dynamo.sh down; rm -f "$results"' EXIT
workers=${PAYOFF_WORKERS:-4}
for leg in family own none; do
  front="--router-session-affinity-ttl-secs 300"
  [ "$leg" = none ] && front=""
  say "leg $leg: restarting Dynamo"
  url=$(DYNAMO_WORKERS=1 MOCK_ARGS="--speedup-ratio 1 --num-workers $workers --num-gpu-blocks-override 2048" \
        FRONT_ARGS="$front" scripts/servers/dynamo.sh up)
  LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PAYOFF_LEG=$leg \
    "$bin"/payoff >>"$results"
done
report payoff "$results" "$workers"
