#!/usr/bin/env bash
# Regenerates lllm-cli/hot_text.ld, the list of functions a run executes, which release builds of
# `lllm` place side by side (lllm-cli/build.rs; why: BENCHMARKS.md, floor section). Run it after a
# toolchain or dependency upgrade, or a change to what a run does: a stale list still links, it only
# places fewer functions. Needs valgrind and python3; takes one release build.
#   scripts/hot_text.sh
# It profiles, with callgrind, the release `lllm run` of a one-agent tactic against a stand-in server
# (scripts/hot_text/server.py): one turn answered at once, and three turns each answered after 0.2 s,
# so that the code that waits on the network is listed too.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "scripts/hot_text.sh: needs valgrind" >&2; exit 1; }
cargo build --release --quiet -p lllm-cli --bin lllm
lllm=${CARGO_TARGET_DIR:-target}/release/lllm
work=$(mktemp -d)
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# profile NAME PORT HOLD TURNS: one callgrind profile of `lllm run`, against a server on PORT that
# answers after HOLD seconds, of a tactic of TURNS steps.
profile() {
  local name=$1 port=$2 hold=$3 turns=$4
  python3 scripts/hot_text/server.py "$port" "$hold" &
  servers+=($!)
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  {
    echo "agent_configs:"
    echo "  - name: hot"
    echo "    model_name: hosted_vllm/stub"
    echo "    system_prompt: You are a concise assistant."
    echo "    model_args: {api_base: \"http://127.0.0.1:$port/v1\", max_tokens: 16}"
    echo "steps:"
    for turn in $(seq 0 $((turns - 1))); do
      echo "  - {agent: hot, receive: \"turn $turn: say something short\"}"
    done
  } >"$work/$name.yaml"
  env -u LLLM_LOG valgrind --quiet --tool=callgrind --demangle=no \
    --callgrind-out-file="$work/$name.out" "$lllm" run "$work/$name.yaml" >/dev/null
}

profile once 18961 0 1
profile held 18962 0.2 3
python3 scripts/hot_text/order.py "$lllm" "$work/once.out" "$work/held.out" >lllm-cli/hot_text.ld
echo "wrote lllm-cli/hot_text.ld" >&2
