#!/usr/bin/env bash
# What context compaction saves on NVIDIA Dynamo's KV router: agents run a 200-turn tool-heavy script
# (bench/src/bin/compaction.rs), in legs that differ only in compaction, Dynamo restarted for each:
#   none   no compaction: the dialogs grow for the whole run
#   ride   `context:` compaction (the summary request rides the previous request's prefix)
#   fresh  the same compaction, the summary asked for in a fresh prompt
# with COMPACTION_AGENTS agents at once (default 4: together their grown dialogs outgrow the KV
# cache, as on a shared server), then none and ride with one agent alone (its dialog fits the cache).
# The engines' own counts give the cached and uncached prompt tokens, per 20 turns.
# COMPACTION_TURNS (default 200), COMPACTION_BLOCKS (KV blocks of 16 tokens per simulated worker,
# default 4096; 2 workers).
# Prints a table; with --write, also puts it in BENCHMARKS.md. About a minute after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_compaction.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-bench --bin compaction --bin report
results=$(mktemp)
trap 'scripts/servers/dynamo.sh down; rm -f "$results"' EXIT
mock="--num-workers 2 --num-gpu-blocks-override ${COMPACTION_BLOCKS:-4096} --speedup-ratio 100"
export LLLM_COMPACTION_TURNS=${COMPACTION_TURNS:-200}
many=${COMPACTION_AGENTS:-4}
for leg in none:$many ride:$many fresh:$many none:1 ride:1; do
  agents=${leg#*:} leg=${leg%:*}
  say "leg $leg with $agents agents: restarting Dynamo"
  url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="--router-session-affinity-ttl-secs 300" \
        scripts/servers/dynamo.sh up)
  LLLM_DYNAMO_URL=$url LLLM_COMPACTION_LEG=$leg LLLM_COMPACTION_AGENTS=$agents "$bin"/compaction >>"$results"
done
report compaction "$results" "$mock"
