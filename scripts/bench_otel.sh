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
# the first time). --write puts the figures into BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
e2e=0 write=0
for arg in "$@"; do
  case $arg in
    --e2e) e2e=1 ;;
    --write) write=1 ;;
    *) echo "usage: scripts/bench_otel.sh [--e2e] [--write]" >&2; exit 2 ;;
  esac
done
bin=${CARGO_TARGET_DIR:-target}/release
if [ "$e2e" = 1 ]; then
  cargo build --release --quiet -p lllm-bench --bin otel_overhead --bin stub_server
  cargo build --release --quiet -p lllm-cli
else
  cargo build --release --quiet -p lllm-bench --bin otel_overhead
fi
figures=$("$bin"/otel_overhead "${LLLM_OTEL_REPETITIONS:-101}")
echo "$figures"

whole=null
if [ "$e2e" = 1 ]; then
  work=$(mktemp -d)
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
  "$bin"/stub_server >"$work/stub.url" & pids+=($!)
  "$bin"/otel_overhead --sink >"$work/sink.url" & pids+=($!)
  for _ in $(seq 1 50); do [ -s "$work/stub.url" ] && [ -s "$work/sink.url" ] && break; sleep 0.1; done
  whole=$(python3 - "$bin/lllm" "$(head -1 "$work/stub.url")" "$(head -1 "$work/sink.url")" "$work" \
    "${LLLM_OTEL_E2E_RUNS:-21}" <<'PY'
import json, os, statistics, subprocess, sys, time, urllib.request
lllm, stub, sink, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
tactic = os.path.join(work, "solo.yaml")
with open(tactic, "w") as f:
    f.write(f"global:\n  model_name: openai/stub\n  model_args: {{api_base: \"{stub}\", max_tokens: 8}}\n"
            "agent_configs:\n  - name: solo\n    system_prompt: Be brief.\n")
base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LLLM_LOG", "TRACEPARENT"))}
legs = {"none": base, "export": dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=sink),
        "dead": dict(base, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")}

def stats():
    with urllib.request.urlopen(f"{sink}/stats") as r:
        return json.load(r)

def once(leg):
    before = stats()["spans"]
    start = time.perf_counter()
    out = subprocess.run([lllm, "run", tactic, "--input", "hi"], env=legs[leg], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0 or "stub answer to" not in out.stdout:
        sys.exit(f"lllm run ({leg}) failed with {out.returncode}: {out.stdout[-300:]} {out.stderr[-300:]}")
    spans = stats()["spans"] - before
    if spans != (3 if leg == "export" else 0):
        sys.exit(f"lllm run ({leg}): the collector received {spans} spans, expected {3 if leg == 'export' else 0}")
    return wall * 1e3, out.stderr

for leg in ("none", "export", "none", "export"):  # warm the page cache
    once(leg)
times = {"none": [], "export": []}
for i in range(runs):
    for leg in (("none", "export") if i % 2 == 0 else ("export", "none")):
        times[leg].append(once(leg)[0])
dead, warnings = [], set()
for _ in range(3):
    ms, stderr = once("dead")
    dead.append(ms)
    warnings.update(line.strip() for line in stderr.splitlines() if "OpenTelemetry" in line)
paired = [e - n for e, n in zip(times["export"], times["none"])]
q = lambda v, p: sorted(v)[round((len(v) - 1) * p)]
print(json.dumps({
    "runs": runs,
    "none_median_ms": statistics.median(times["none"]), "none_p90_ms": q(times["none"], 0.9),
    "export_median_ms": statistics.median(times["export"]), "export_p90_ms": q(times["export"], 0.9),
    "added_median_ms": statistics.median(paired),
    "dead_runs": len(dead), "dead_median_ms": statistics.median(dead), "dead_max_ms": max(dead),
    "dead_warning": sorted(warnings)[0] if warnings else None,
}))
PY
)
  echo "$whole"
fi

python3 - "$figures" "$whole" <<'PY'
import json, sys
f, w = json.loads(sys.argv[1]), json.loads(sys.argv[2])
l, e, d = f["legs"], f["export"], f["dead"]
print(f"{f['turns']}-turn runs, {f['repetitions']} of each leg:")
for name, label in (("none", "no subscriber"), ("export", "exporting to a collector"), ("dead", "exporting to 127.0.0.1:9")):
    print(f"  {label:<26} median {l[name]['median_ms']:.2f} ms, p90 {l[name]['p90_ms']:.2f} ms")
print(f"export adds {e['added_us_per_request_median']:.1f} us per request (run by run; p90 {e['added_us_per_request_p90']:.1f} us; "
      f"{e['added_us_per_request_of_medians']:.1f} us from the medians; {e['overhead_paired_median_pct']:+.1f} %)")
ops = ", ".join(f"{n} {c // f['repetitions']}" for n, c in e["spans_by_operation"].items())
print(f"  the collector received {e['spans_per_run']:.0f} spans per run ({ops}) in {e['posts_per_run']:.0f} POST, "
      f"{e['bytes_per_run']:,.0f} B: {e['bytes_per_span']:.0f} B per span")
print(f"  the flush after each run (the export itself, on the batch thread): {e['flush_median_ms']:.2f} ms, "
      f"{e['flush_us_per_span']:.1f} us per span")
print(f"a dead collector adds {d['added_us_per_request_median']:.1f} us per request (p90 {d['added_us_per_request_p90']:.1f} us); "
      f"one flush to it takes {d['flush_median_ms']:.0f} ms (the exporter's retries)")
if w:
    print(f"whole `lllm run` processes, one request each, {w['runs']} of each: without export {w['none_median_ms']:.1f} ms "
          f"(p90 {w['none_p90_ms']:.1f}), exporting {w['export_median_ms']:.1f} ms (p90 {w['export_p90_ms']:.1f}): "
          f"+{w['added_median_ms']:.1f} ms run by run; to 127.0.0.1:9 {w['dead_median_ms']:.0f} ms (max {w['dead_max_ms']:.0f})")
PY

if [ "$write" = 1 ]; then
  python3 - "$figures" "$whole" <<'PY'
import json, os, platform, re, sys, time
f, w = json.loads(sys.argv[1]), json.loads(sys.argv[2])
l, e, d = f["legs"], f["export"], f["dead"]
reps = f["repetitions"]
rows = [
    f"| no subscriber | {l['none']['median_ms']:.1f} / {l['none']['p90_ms']:.1f} ms | – | – | – | – |",
    f"| exporting to a collector on 127.0.0.1 | {l['export']['median_ms']:.1f} / {l['export']['p90_ms']:.1f} ms | "
    f"**{e['added_us_per_request_median']:.1f} µs** / {e['added_us_per_request_p90']:.0f} µs | "
    f"{e['spans_per_run']:.0f} ({e['posts_per_run']:.0f} POST) | {e['bytes_per_span']:.0f} B | "
    f"{e['flush_median_ms']:.2f} ms ({e['flush_us_per_span']:.1f} µs per span) |",
    f"| exporting to 127.0.0.1:9 (nothing listens) | {l['dead']['median_ms']:.1f} / {l['dead']['p90_ms']:.1f} ms | "
    f"{d['added_us_per_request_median']:.1f} µs / {d['added_us_per_request_p90']:.0f} µs | 0 | – | "
    f"{d['flush_median_ms']:.0f} ms (fails after the exporter's 3 retries) |",
]
section = (
    "<!-- otel:start -->\n"
    f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores); command "
    f"`scripts/bench_otel.sh{' --e2e' if w else ''} --write`. One process holds the agent, the testing kit's stand-in server (which answers "
    "at once: the worst case for export's share of a run) and an OTLP collector on 127.0.0.1 that counts the "
    "requests, bytes and spans it receives. One run is a workflow span around 100 turns of one dialog "
    "(`receive` + `respond`): 201 spans (1 `invoke_workflow`, 100 `invoke_agent`, 100 `chat`). The "
    "exporting legs use the subscriber `lllm` sets up when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (a "
    "`tracing-opentelemetry` layer on the `lllm::gen_ai` spans, a batch processor with a queue of 4,096, "
    "the OTLP HTTP/protobuf exporter of opentelemetry-otlp 0.33), without its `warn` log layer. The legs "
    f"alternate, {reps} runs of each after 3 warm-up runs of each; after each exporting run the provider is "
    "flushed (timed apart: the batch processor exports on a thread of its own, every 5 s or per 512 spans, "
    "never on the run's path) and the run's spans are counted at the collector.\n\n"
    "| subscriber | run of 100 requests, median / p90 | added per request, median / p90 (run by run) | "
    "spans received per run | bytes per span | flush after the run |\n"
    "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
    f"Export adds {e['overhead_paired_median_pct']:.1f} % to a run against a server that answers at once "
    "(the p90 of the run-by-run difference is the machine's noise: runs of the same leg differ by more; "
    "from one run of the script to the next the median moves by a few µs). The cost is making the spans "
    "and handing them to the batch queue, not sending them: a dead collector costs the run no more than a "
    "live one. It costs the exit: a batch that cannot be sent is given up only after the exporter's retries "
    "(3, backing off from 100 ms), and `lllm` waits for the last flush at most 3 s."
)
if w:
    section += (
        f" Whole `lllm run` processes (one request each, against `stub_server`; {w['runs']} of each, "
        f"alternating): {w['none_median_ms']:.1f} ms without export, {w['export_median_ms']:.1f} ms "
        f"exporting to a collector process on 127.0.0.1 (+{w['added_median_ms']:.1f} ms run by run: "
        f"setting up the exporter and the flush at exit), {w['dead_median_ms']:.0f} ms exporting to 127.0.0.1:9."
    )
section += "\n<!-- otel:end -->"
text = open("BENCHMARKS.md").read()
if "<!-- otel:start -->" not in text:
    text = text.rstrip("\n") + "\n\n## Observability\n\n<!-- otel:start -->\n<!-- otel:end -->\n"
text = re.sub(r"<!-- otel:start -->.*<!-- otel:end -->", lambda _: section, text, flags=re.S)
open("BENCHMARKS.md", "w").write(text)
PY
fi
