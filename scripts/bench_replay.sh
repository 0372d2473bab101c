#!/usr/bin/env bash
# Records the payoff workload's content-free trace on Dynamo, then replays it twice on a fresh Dynamo:
# with the dynamo profile (session identity, affinity on) and with `--profile openai --no-session`
# (frontend without affinity). Prints, for each, the sessions that stayed on one worker and the share
# of prompt tokens served from cache. It also records the workload's agentic trace (Dynamo's
# dynamo.agentic_mooncake v2, on a fresh Dynamo) and replays it in Dynamo's offline simulator with
# the KV router and with round robin, on as many simulated workers and KV blocks as the live runs
# (scripts/replay_agentic.py --check: every request and dependency must hold); prints, for each
# router, the makespan, TTFT p50/p90 and the prompt tokens reused from the prefix cache. About 3 minutes.
#   scripts/bench_replay.sh [--write]    # --write puts both tables into BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_replay.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-bench --bin payoff --bin report
cargo build --release --quiet -p lllm-cli
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT
workers=4 blocks=2048
mock="--speedup-ratio 1 --num-workers $workers --num-gpu-blocks-override $blocks"
affinity="--router-session-affinity-ttl-secs 300"

say "recording the trace of the payoff workload"
url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$affinity" scripts/servers/dynamo.sh up)
LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PAYOFF_LEG=family \
  LLLM_PAYOFF_TRACE=$work/trace.jsonl "$bin"/payoff >/dev/null
say "trace: $(($(wc -l <"$work/trace.jsonl") - 1)) requests"

say "recording the agentic trace of the payoff workload (dynamo.agentic_mooncake v2)"
url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$affinity" scripts/servers/dynamo.sh up)
LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PAYOFF_LEG=family \
  LLLM_PAYOFF_TRACE=$work/agentic.jsonl LLLM_PAYOFF_TRACE_FORMAT=agentic \
  "$bin"/payoff >/dev/null
say "agentic trace: $(($(wc -l <"$work/agentic.jsonl") - 1)) requests"

for leg in dynamo plain; do
  front=$affinity; flags=(--profile dynamo)
  [ "$leg" = plain ] && front="" && flags=(--profile openai --no-session)
  say "replaying with ${flags[*]}"
  url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$front" scripts/servers/dynamo.sh up)
  "$bin"/lllm replay "$work/trace.jsonl" --api-base "$url" --model tiny "${flags[@]}" --json \
    >"$work/$leg.out"
  sleep 1
  # The frontend's log names the worker of each request; the next start replaces it.
  cp "$(scripts/servers/dynamo.sh log)" "$work/$leg.log"
done

# The agentic trace in Dynamo's offline simulator (simulated time: no server, well under a second).
say "replaying the agentic trace in Dynamo's offline simulator ($workers workers x $blocks blocks)"
python=$(scripts/servers/dynamo.sh install)
status=0
"$python" scripts/replay_agentic.py "$work/agentic.jsonl" --router both --check --json \
  --workers "$workers" --kv-blocks "$blocks" >"$work/offline.json" || status=$?
[ -s "$work/offline.json" ] || { say "the offline replay printed nothing (exit status $status)"; exit 1; }
[ "$status" = 0 ] || { say "the offline replay's check failed (exit status $status)"; exit "$status"; }
report replay "$work"
