#!/usr/bin/env bash
# The project's test command: formatting, lints, docs, and the whole test suite: unit tests, wire tests
# against a local recording HTTP server, the CLI end to end, and the integration suite against a real
# NVIDIA Dynamo router (started here on 127.0.0.1; installed into a cache on first use, about a minute).
# The payoff benchmark and the trace replay on Dynamo run first and print their figures. Needs the Rust toolchain, Python 3 with
# pip, and curl. LLLM_SKIP_DYNAMO=1 leaves Dynamo out (the Dynamo tests then say so and pass without
# checking anything).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "cargo doc (broken links and missing docs are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --locked --quiet

if [ "${LLLM_SKIP_DYNAMO:-0}" != 1 ]; then
  step "the payoff of session hints on Dynamo (3 legs, about 3 minutes)"
  scripts/bench_payoff.sh

  step "a recorded trace replayed on Dynamo, with and without session identity (about 3 minutes)"
  scripts/bench_replay.sh

  step "starting NVIDIA Dynamo for the integration suite (KV router with session affinity)"
  trap 'scripts/servers/dynamo.sh down' EXIT
  # Affinity is what makes session headers pin a dialog; the queue threshold lets priority reorder.
  LLLM_DYNAMO_URL=$(FRONT_ARGS="--router-session-affinity-ttl-secs 300 --router-queue-threshold 0.5 --router-track-output-blocks" \
    scripts/servers/dynamo.sh up)
  LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log)
  export LLLM_DYNAMO_URL LLLM_DYNAMO_LOG
fi

step "cargo test --workspace"
cargo test --workspace --all-features --locked
