#!/usr/bin/env bash
# Records the payoff workload's content-free trace on Dynamo, then replays it twice on a fresh Dynamo:
# with the dynamo profile (session identity, affinity on) and with `--profile openai --no-session`
# (frontend without affinity). Prints, for each, the sessions that stayed on one worker and the share
# of prompt tokens served from cache. It also records the workload's agentic trace (Dynamo's
# dynamo.agentic_mooncake v2, on a fresh Dynamo) and replays it in Dynamo's offline simulator with
# the KV router and with round robin, on as many simulated workers and KV blocks as the live runs
# (scripts/replay_agentic.py --check: every request and dependency must hold); prints, for each
# router, the makespan, TTFT p50/p90 and the prompt tokens reused from the prefix cache. About 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
cargo build --release --quiet -p lllm-bench --bin payoff
cargo build --release --quiet -p lllm-cli
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT
workers=4 blocks=2048
mock="--speedup-ratio 1 --num-workers $workers --num-gpu-blocks-override $blocks"
affinity="--router-session-affinity-ttl-secs 300"

say "recording the trace of the payoff workload"
url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$affinity" scripts/servers/dynamo.sh up)
LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PAYOFF_LEG=family \
  LLLM_PAYOFF_TRACE=$work/trace.jsonl "${CARGO_TARGET_DIR:-target}"/release/payoff >/dev/null
say "trace: $(($(wc -l <"$work/trace.jsonl") - 1)) requests"

say "recording the agentic trace of the payoff workload (dynamo.agentic_mooncake v2)"
url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$affinity" scripts/servers/dynamo.sh up)
LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PAYOFF_LEG=family \
  LLLM_PAYOFF_TRACE=$work/agentic.jsonl LLLM_PAYOFF_TRACE_FORMAT=agentic \
  "${CARGO_TARGET_DIR:-target}"/release/payoff >/dev/null
say "agentic trace: $(($(wc -l <"$work/agentic.jsonl") - 1)) requests"

for leg in dynamo plain; do
  front=$affinity; flags=(--profile dynamo)
  [ "$leg" = plain ] && front="" && flags=(--profile openai --no-session)
  say "replaying with ${flags[*]}"
  url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$front" scripts/servers/dynamo.sh up)
  "${CARGO_TARGET_DIR:-target}"/release/lllm replay "$work/trace.jsonl" --api-base "$url" --model tiny "${flags[@]}" --json \
    >"$work/$leg.out"
  sleep 1
  python3 - "$work/$leg.out" "$(scripts/servers/dynamo.sh log)" "${flags[*]}" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
workers = {}
for line in open(sys.argv[2], errors="replace"):
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)
    if "service::metrics" in line and "request completed" in line:
        rid = re.search(r"request_id=(\S+)", line); wid = re.search(r"decode_worker_id=(\S+)", line)
        if rid and wid:
            workers[rid.group(1)] = wid.group(1)
sessions = {}
for r in rows:
    w = workers.get((r["response_id"] or "").removeprefix("chatcmpl-"))
    sessions.setdefault(r["session_id"], set()).add(w)
pinned = sum(1 for s in sessions.values() if len(s) == 1)
prompt = sum(r["prompt_tokens"] for r in rows); cached = sum(r["cached_tokens"] for r in rows)
errors = sum(1 for r in rows if r["error"])
print(f"replay {sys.argv[3]:<28} {len(rows)} requests, {errors} errors, {pinned}/{len(sessions)} sessions on one worker, "
      f"{100 * cached / max(prompt, 1):.1f} % of prompt tokens cached")
PY
done

# The agentic trace in Dynamo's offline simulator (simulated time: no server, well under a second).
say "replaying the agentic trace in Dynamo's offline simulator ($workers workers x $blocks blocks)"
python=$(scripts/servers/dynamo.sh install)
status=0
"$python" scripts/replay_agentic.py "$work/agentic.jsonl" --router both --check --json \
  --workers "$workers" --kv-blocks "$blocks" >"$work/offline.json" || status=$?
[ -s "$work/offline.json" ] || { say "the offline replay printed nothing (exit status $status)"; exit 1; }
python3 - "$work/offline.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
e = f["engine"]
names = {"kv_router": "KV router", "round_robin": "round robin"}
for r in f["runs"]:
    ratio = r["prefix_cache_reused_ratio"]
    check = r.get("check", {})
    print(f"offline {names.get(r['router_mode'], r['router_mode']):<11} ({e['workers']} workers x {e['kv_blocks']} blocks, "
          f"{e['timing']} timing): {r['requests_completed']}/{r['requests_total']} requests, makespan "
          f"{r['makespan_ms'] / 1e3:.2f} s, TTFT p50 {r['ttft_ms']['p50']:.1f} / p90 {r['ttft_ms']['p90']:.1f} ms, "
          f"{100 * (ratio or 0):.1f} % of prompt tokens reused from the prefix cache"
          f"{'' if check.get('ok', True) else '; check FAILED'}")
    for failure in check.get("failures", [])[:10]:
        print(f"  - {failure}")
PY
exit "$status"
