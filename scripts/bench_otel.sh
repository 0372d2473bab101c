#!/usr/bin/env bash
# What OpenTelemetry export (`OTEL_EXPORTER_OTLP_ENDPOINT`) adds to a run. A 100-turn run of one agent
# against the stand-in server in the same process, under three subscribers that alternate (101 runs
# each after 3 warm-up runs each; LLLM_OTEL_REPETITIONS sets another count): none; the stack `lllm`
# sets up to export (tracing-opentelemetry layer on lllm::gen_ai spans, batch processor, OTLP
# HTTP/protobuf) sending to a collector in the same process on 127.0.0.1, which counts what arrives;
# and the same sending to 127.0.0.1:9, where nothing listens. Prints each leg's median and p90, the
# time export adds per request, the spans and bytes the collector received, and what a flush costs.
#   scripts/bench_otel.sh [--e2e] [--write]
# --e2e also times whole `lllm run` processes (one request each, against bench's stub_server) without
# export, exporting to a collector process, and exporting to 127.0.0.1:9 (builds lllm; a few minutes
# the first time; LLLM_OTEL_E2E_RUNS runs of each, default 21). --write puts the figures into
# BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
e2e=0
for arg in "$@"; do
  case $arg in
    --e2e) e2e=1 ;;
    --write) bench_write_flag --write ;;
    *) echo "usage: scripts/bench_otel.sh [--e2e] [--write]" >&2; exit 2 ;;
  esac
done
if [ "$e2e" = 1 ]; then
  cargo build --release --quiet -p lllm-bench --bin otel_overhead --bin otel_e2e --bin stub_server --bin report
  cargo build --release --quiet -p lllm-cli
else
  cargo build --release --quiet -p lllm-bench --bin otel_overhead --bin report
fi
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin"/otel_overhead "${LLLM_OTEL_REPETITIONS:-101}" >"$work/figures.json"
processes=()
if [ "$e2e" = 1 ]; then
  "$bin"/stub_server >"$work/stub.url" & pids+=($!)
  "$bin"/otel_overhead --sink >"$work/sink.url" & pids+=($!)
  for _ in $(seq 1 50); do [ -s "$work/stub.url" ] && [ -s "$work/sink.url" ] && break; sleep 0.1; done
  "$bin"/otel_e2e "$bin/lllm" "$(head -1 "$work/stub.url")" "$(head -1 "$work/sink.url")" \
    "${LLLM_OTEL_E2E_RUNS:-21}" >"$work/processes.json"
  processes=("$work/processes.json")
fi
report otel "$work/figures.json" "${processes[@]}"
