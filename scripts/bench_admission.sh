#!/usr/bin/env bash
# Admission by priority: the makespan of N fan-out tactics at once sharing one endpoint under
# `max_in_flight: 4`, released by `priority: auto` against first come, first served
# (bench/src/bin/admission.rs), for 1, 2, 4 and 16 tactics: first on an in-process stub with a fixed
# service time of 40 ms, then on NVIDIA Dynamo's KV router with one simulated worker at real-time
# speed. Prints a table; with --write, also puts it in BENCHMARKS.md. About 3 minutes.
#   scripts/bench_admission.sh [--write]
# Dynamo listens on DYNAMO_PORT (default 18100, beside the test suite's on 18000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_admission.sh [--write]" >&2; exit 2 ;;
esac
export DYNAMO_PORT=${DYNAMO_PORT:-18100}
cargo build --release --quiet -p lllm-bench --bin admission --bin report
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT
say "on the stub"
"$bin"/admission >"$work/stub.jsonl"
mock="--speedup-ratio 1"
say "on Dynamo ($mock)"
url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="--router-session-affinity-ttl-secs 300" \
      scripts/servers/dynamo.sh up)
LLLM_ADMISSION_URL=$url "$bin"/admission >"$work/dynamo.jsonl"
report admission "$mock" "$work/stub.jsonl" "$work/dynamo.jsonl"
