#!/usr/bin/env bash
# lllm against Python lllm (lllm-core 0.2.1 with its LiteLLM invoker, installed into a throwaway
# virtualenv in the cache) on the same conversation and the same local stand-in server.
#   scripts/bench_vs_python.sh [--write]    # --write puts the table and chart into BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
VENV=$LLLM_CACHE_DIR/pylllm/venv
if ! "$VENV/bin/python" -c 'import lllm.runtimes.native.core.agent' 2>/dev/null; then
  say "installing Python lllm 0.2.1 with its native runtime into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'lllm-core[native]==0.2.1'
fi
cargo build --release --quiet -p lllm-bench --bin stub_server --bin turns
url_file=$(mktemp)
"${CARGO_TARGET_DIR:-target}"/release/stub_server >"$url_file" &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$url_file"' EXIT
for _ in $(seq 1 50); do [ -s "$url_file" ] && break; sleep 0.1; done
python3 scripts/bench/compare.py "$(head -1 "$url_file")" "$VENV/bin/python" "${CARGO_TARGET_DIR:-target}"/release/turns "${1:-}"
