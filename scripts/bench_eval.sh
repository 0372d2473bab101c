#!/usr/bin/env bash
# What `lllm eval` costs: cases per second on replay (100 cases × 5 trials, no server), trials per
# second while recording them against a local stub server, and the time per case of a live eval (one
# trial at a time) next to a plain `lllm run` process per input against the same server, and next to
# a process that only starts (`lllm --version`). Prints the section; never fails on a figure.
#   scripts/bench_eval.sh [--write]    # --write also puts it in BENCHMARKS.md
# The eval's trials are journaled (each in its own journal, as `lllm eval` always does); the `lllm run`
# processes are not.
# LLLM_EVAL_CASES (default 100), LLLM_EVAL_TRIALS (default 5), LLLM_EVAL_RUNS (default 100: the live
# cases and the `lllm run` processes of the overhead comparison), LLLM_EVAL_REPEATS (default 3: replays,
# the best is kept).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_eval.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-cli --bin lllm
cargo build --release --quiet -p lllm-bench --bin stub_server --bin report
work=$(mktemp -d)
stub_pid=
cleanup() {
  [ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# The stub answers every request with `stub answer to: <the last user message>`, at once.
"$bin"/stub_server >"$work/stub.url" &
stub_pid=$!
for _ in $(seq 100); do [ -s "$work/stub.url" ] && break; sleep 0.1; done
[ -s "$work/stub.url" ] || { echo "bench_eval: the stub server did not start" >&2; exit 1; }

python3 - "$bin/lllm" "$(head -1 "$work/stub.url")" "$work" \
  "${LLLM_EVAL_CASES:-100}" "${LLLM_EVAL_TRIALS:-5}" "${LLLM_EVAL_RUNS:-100}" "${LLLM_EVAL_REPEATS:-3}" <<'EOF'
import json, os, subprocess, sys, time

lllm, url, work, cases, trials, runs, repeats = sys.argv[1:3] + [sys.argv[3]] + [int(a) for a in sys.argv[4:]]

def tactic(path, in_flight):
    limit = f", max_in_flight: {in_flight}" if in_flight else ""
    with open(path, "w") as f:
        f.write(f"""global:
  model_name: m
  model_args: {{api_base: "{url}", timeout: 30{limit}}}
agent_configs:
  - name: assistant
    system_prompt: You answer briefly.
""")

def evals(path, count, tactic_name):
    with open(path, "w") as f:
        f.write(f"tactic: {tactic_name}\ncases:\n")
        for n in range(count):
            f.write(f"  - {{id: case-{n}, input: question {n}, expect: {{output: {{contains: 'question {n}'}}, max_requests: 1}}}}\n")

def timed(args):
    start = time.perf_counter()
    out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"bench_eval: {' '.join(args)} exited {out.returncode}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return took

os.chdir(work)
tactic("concurrent.yaml", None)   # trials at once: lllm eval's default (8)
tactic("sequential.yaml", 1)      # one trial at a time, as `lllm run` processes one after another
evals("evals.yaml", cases, "concurrent.yaml")
evals("live.yaml", runs, "sequential.yaml")

record = timed([lllm, "eval", "evals.yaml", "--trials", str(trials), "--record", "tapes"])
replay = min(timed([lllm, "eval", "evals.yaml", "--trials", str(trials), "--replay", "tapes", "--json", "r.json"])
             for _ in range(repeats))
report = json.load(open("r.json"))
assert report["passed"] and sum(c["trials"] for c in report["cases"]) == cases * trials, "every trial replayed and passed"

live = timed([lllm, "eval", "live.yaml"])
run = sum(timed([lllm, "run", "sequential.yaml", "--input", f"question {n}"]) for n in range(runs))
start = sum(timed([lllm, "--version"]) for _ in range(runs))

json.dump({"cases": cases, "trials": trials, "runs": runs, "repeats": repeats,
           "replay_s": replay, "record_s": record, "live_s": live, "run_s": run, "start_s": start},
          open("figures.json", "w"))
EOF
report eval "$work/figures.json"
