#!/usr/bin/env bash
# 1,000 concurrent dialogs × 10 turns against a local stand-in server in the same process: throughput,
# peak RSS (client and stub server together), and a check that no message was lost.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each dialog in flight holds a client and a server socket.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 8192
cargo build --release --quiet -p lllm-runtime --example concurrency
target/release/examples/concurrency
