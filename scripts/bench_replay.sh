#!/usr/bin/env bash
# Records the payoff workload's content-free trace on Dynamo, then replays it twice on a fresh Dynamo:
# with the dynamo profile (session identity, affinity on) and with `--profile openai --no-session`
# (frontend without affinity). Prints, for each, the sessions that stayed on one worker and the share
# of prompt tokens served from cache. About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
cargo build --release --quiet -p lllm-bench --bin payoff
cargo build --release --quiet -p lllm-cli
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT
mock="--speedup-ratio 1 --num-workers 4 --num-gpu-blocks-override 2048"
affinity="--router-session-affinity-ttl-secs 300"

say "recording the trace of the payoff workload"
url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$affinity" scripts/servers/dynamo.sh up)
LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PAYOFF_LEG=family \
  LLLM_PAYOFF_TRACE=$work/trace.jsonl "${CARGO_TARGET_DIR:-target}"/release/payoff >/dev/null
say "trace: $(($(wc -l <"$work/trace.jsonl") - 1)) requests"

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
