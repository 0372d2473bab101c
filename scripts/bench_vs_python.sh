#!/usr/bin/env bash
# lllm against Python lllm (lllm-core 0.2.1 with its LiteLLM invoker, installed into a throwaway
# virtualenv in the cache) on the same conversation and the same local stand-in server.
#   scripts/bench_vs_python.sh [--write]    # --write puts the table and chart into BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_vs_python.sh [--write]" >&2; exit 2 ;;
esac
VENV=$LLLM_CACHE_DIR/pylllm/venv
if ! "$VENV/bin/python" -c 'import lllm.runtimes.native.core.agent' 2>/dev/null; then
  say "installing Python lllm 0.2.1 with its native runtime into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'lllm-core[native]==0.2.1'
fi
cargo build --release --quiet -p lllm-bench --bin stub_server --bin turns --bin vs_python --bin report
work=$(mktemp -d)
"$bin"/stub_server >"$work/stub.url" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 50); do [ -s "$work/stub.url" ] && break; sleep 0.1; done
"$bin"/vs_python "$(head -1 "$work/stub.url")" "$VENV/bin/python" scripts/bench/python_lllm_turns.py \
  "$bin"/turns >"$work/figures.json"
report python "$work/figures.json"
