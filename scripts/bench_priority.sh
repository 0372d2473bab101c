#!/usr/bin/env bash
# Priority under contention on NVIDIA Dynamo's router queue: waves of multi-agent tactics (a fan-out
# of three forks and a plan/critique/revise chain) against a closed loop of long untagged background
# requests, on one simulated worker at real-time speed (`--speedup-ratio 1 --max-num-seqs 4`) behind
# the frontend's router queue (`--router-queue-threshold 0.0`). Legs, each on a freshly started Dynamo:
# `none` (no priority), `uniform` (`priority: 10` on every agent), `auto` (`priority: auto`,
# interactive); then `none` and `auto` again with `--router-track-output-blocks` added to the
# frontend (the router then uses the `osl` hint); then `none`, `uniform` and `auto` again with the
# background carrying the same hints as the tactics (an `lllm batch` run of the same settings beside
# the interactive runs: `priority: 10` under `uniform`, a batch run's `priority: 1` and no
# `strict_priority` under `auto`). Prints, per leg, the tactics' makespan, the time to first token per
# request class, the background's throughput, reordered requests and errors. About 7 minutes.
#   scripts/bench_priority.sh [--write]
# --write puts the table into BENCHMARKS.md ("Priority under contention"). Dynamo listens on
# DYNAMO_PORT (default 18100, so that it can run beside the test suite's Dynamo on 18000). The
# LLLM_PRIORITY_* variables of the `priority` binary (bench/src/bin/priority.rs) shorten a trial run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
for arg in "$@"; do
  case $arg in
    --write) bench_write_flag --write ;;
    *) echo "usage: scripts/bench_priority.sh [--write]" >&2; exit 2 ;;
  esac
done
export DYNAMO_PORT=${DYNAMO_PORT:-18100}
started=$SECONDS
cargo build --release --quiet -p lllm-bench --bin priority --bin report
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT

mock="--speedup-ratio 1 --max-num-seqs 4"
queue="--router-queue-threshold 0.0"
# setup:leg, in order; each leg gets a fresh Dynamo.
# `hinted`: the queue alone, the background carrying the leg's hints (LLLM_PRIORITY_BG_HINTS=1).
legs=(queue:none queue:uniform queue:auto tracking:none tracking:auto hinted:none hinted:uniform hinted:auto)
files=()
for entry in "${legs[@]}"; do
  setup=${entry%%:*} leg=${entry#*:}
  front=$queue
  [ "$setup" = tracking ] && front="$queue --router-track-output-blocks"
  say "leg $leg on Dynamo with $front"
  url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$front" scripts/servers/dynamo.sh up)
  out=$work/$setup-$leg.json
  bg_hints=0
  [ "$setup" = hinted ] && bg_hints=1
  LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PRIORITY_LEG=$leg \
    LLLM_PRIORITY_SETUP="$front" LLLM_PRIORITY_BG_HINTS=$bg_hints "$bin"/priority >"$out"
  cat "$out"
  files+=("$out")
done
scripts/servers/dynamo.sh down
elapsed=$((SECONDS - started))

report priority "$elapsed" "$mock" "${files[@]}"
