#!/usr/bin/env bash
# What lllm adds to an MCP tool call: the reference server (server-everything, over stdio) called
# through lllm's MCP tool and through the bare SDK client, in alternating blocks; the difference of
# the medians is lllm's own time per call (argument check, timeout, result conversion). Two message
# sizes: 43 bytes (2,000 calls) and 32 KiB (500 calls; LLLM_MCP_CALLS sets both counts). Installs the
# server into the cache first (scripts/servers/mcp.sh).
#   scripts/bench_mcp.sh [--write]    # --write puts the figures into BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_mcp.sh [--write]" >&2; exit 2 ;;
esac
eval "$(scripts/servers/mcp.sh install)"
cargo build --release --quiet -p lllm-bench --bin mcp_overhead --bin report
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin"/mcp_overhead "${LLLM_MCP_CALLS:-2000}" 43 -- "$LLLM_MCP_EVERYTHING" stdio >"$work/small.json"
"$bin"/mcp_overhead "${LLLM_MCP_CALLS:-500}" 32768 -- "$LLLM_MCP_EVERYTHING" stdio >"$work/large.json"
report mcp "$work/small.json" "$work/large.json"
