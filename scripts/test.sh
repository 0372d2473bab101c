#!/usr/bin/env bash
# The project's test command: formatting, lints, docs, then the whole test suite with no Dynamo running
# (unit tests, wire tests against a local recording HTTP server, the CLI end to end, MCP servers from
# npm and PyPI installed into a cache here), then what lllm adds to an MCP tool call and what a journal
# adds to a 100-turn run, then the
# integration suite against a real NVIDIA Dynamo router (started here on 127.0.0.1; installed from PyPI
# into a cache on first use, about a minute), then the payoff benchmark and the trace replay on Dynamo.
# The benchmarks print their figures. Needs the Rust toolchain, Python 3 with pip, and nothing from the
# system's package manager (Node.js for the MCP reference server comes from PyPI when the machine has
# none). LLLM_SKIP_DYNAMO=1 leaves Dynamo out (its tests then say so and pass without checking).
# The last line printed is "N passed, M failed", the sum of every cargo test run here; the exit status is
# non-zero if any step failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# This script decides whether the Dynamo suite runs and against what: ignore the caller's settings.
unset LLLM_DYNAMO_URL LLLM_DYNAMO_LOG LLLM_REQUIRE_DYNAMO
unset LLLM_MCP_EVERYTHING LLLM_MCP_TIME LLLM_MCP_PYTHON LLLM_REQUIRE_MCP
unset LLLM_PHOENIX_URL LLLM_REQUIRE_PHOENIX LLLM_DYNAMO_PYTHON LLLM_REQUIRE_DYNAMO_REPLAY
skip_dynamo=${LLLM_SKIP_DYNAMO:-0}
results=$(mktemp)   # the output of every cargo test, for the summary line
failed=()           # the steps that failed
current=""          # the step running now (named in the report if `set -e` stops the script there)

step() { current=$*; printf '\n== %s\n' "$*" >&2; }

# run_tests NAME COMMAND...: a cargo test step; its output also goes to $results. A failure is recorded
# and the script goes on, so that the summary covers every suite.
run_tests() {
  local name=$1; shift
  step "$name"
  "$@" | tee -a "$results" || failed+=("$name")
}

# On every exit (success, a failed step, an interrupt): stop Dynamo, then report. The summary line is the
# last thing printed.
finish() {
  local status=$?
  trap - EXIT
  [ "$skip_dynamo" = 1 ] || scripts/servers/dynamo.sh down || failed+=("stopping Dynamo")
  scripts/servers/phoenix.sh down || failed+=("stopping Phoenix")
  [ -n "${phoenix_out:-}" ] && rm -f "$phoenix_out"
  [ "$status" -ne 0 ] && [ -n "$current" ] && ! printf '%s\n' "${failed[@]}" | grep -qxF "$current" &&
    failed+=("$current")
  local f
  for f in "${failed[@]}"; do printf 'lllm: FAILED: %s\n' "$f" >&2; done
  awk '{ gsub(/\033\[[0-9;]*m/, "") }
       /^test result: / { for (i = 2; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i - 1); if ($i ~ /^failed;?$/) n += $(i - 1) } }
       END { printf "%d passed, %d failed\n", p, n }' "$results"
  rm -f "$results"
  if [ "$status" -eq 0 ] && [ ${#failed[@]} -gt 0 ]; then status=1; fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Arize Phoenix, the OpenTelemetry backend the observability suite exports to, starts in the background
# (installed from PyPI on first use, about 2 minutes; then about 20 s) while the code is checked.
phoenix_out=$(mktemp)
scripts/servers/phoenix.sh up >"$phoenix_out" &
phoenix_pid=$!

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "cargo doc (broken links and missing docs are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --locked --quiet

# The MCP servers the MCP suite talks to, from npm and PyPI into the cache (about 20 s the first time):
# with LLLM_REQUIRE_MCP=1 a missing server fails that suite instead of skipping it.
step "installing the MCP test servers (server-everything, mcp-server-time, the Python MCP SDK)"
if mcp_env=$(scripts/servers/mcp.sh install); then
  eval "$mcp_env"
  export LLLM_MCP_EVERYTHING LLLM_MCP_TIME LLLM_MCP_PYTHON
else
  failed+=("installing the MCP test servers")
fi
export LLLM_REQUIRE_MCP=1

step "waiting for Arize Phoenix (OpenTelemetry backend)"
if wait "$phoenix_pid"; then
  LLLM_PHOENIX_URL=$(cat "$phoenix_out")
  export LLLM_PHOENIX_URL
else
  failed+=("starting Phoenix")
fi
export LLLM_REQUIRE_PHOENIX=1

# Dynamo's offline simulator replays the agentic trace of a fork tree (no server needed).
if [ "$skip_dynamo" != 1 ]; then
  step "installing NVIDIA Dynamo (its offline simulator replays agentic traces)"
  if LLLM_DYNAMO_PYTHON=$(scripts/servers/dynamo.sh install); then
    export LLLM_DYNAMO_PYTHON LLLM_REQUIRE_DYNAMO_REPLAY=1
  else
    failed+=("installing Dynamo")
  fi
fi

# No Dynamo yet: the Dynamo tests skip themselves here and run below, against a running one.
run_tests "cargo test --workspace" cargo test --workspace --all-features --locked

step "what lllm adds to an MCP tool call (about a minute)"
scripts/bench_mcp.sh || failed+=("the MCP benchmark")

step "what a journal adds to a 100-turn run (about 20 seconds)"
LLLM_JOURNAL_REPETITIONS=${LLLM_JOURNAL_REPETITIONS:-31} scripts/bench_journal.sh || failed+=("the journal benchmark")

step "what OpenTelemetry export adds to a 100-turn run (about 10 seconds)"
LLLM_OTEL_REPETITIONS=${LLLM_OTEL_REPETITIONS:-31} scripts/bench_otel.sh || failed+=("the OpenTelemetry export benchmark")

if [ "$skip_dynamo" != 1 ]; then
  step "starting NVIDIA Dynamo for the integration suite (KV router with session affinity)"
  # Affinity is what makes session headers pin a dialog; the queue threshold lets priority reorder.
  if url=$(FRONT_ARGS="--router-session-affinity-ttl-secs 300 --router-queue-threshold 0.5 --router-track-output-blocks" \
    scripts/servers/dynamo.sh up); then
    LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log)
    export LLLM_DYNAMO_URL LLLM_DYNAMO_LOG
  else
    # The suite still runs: with LLLM_REQUIRE_DYNAMO=1 and no URL every Dynamo test fails and says why.
    failed+=("starting Dynamo")
  fi
  # LLLM_REQUIRE_DYNAMO=1: a missing or unreachable Dynamo fails the suite instead of skipping it.
  # `--workspace --test dynamo` runs only lllm-runtime's tests/dynamo.rs, with the features resolved as
  # for the run above, so nothing is rebuilt (`-p lllm-runtime` alone would resolve clap, log and
  # tracing-core with fewer features and recompile much of the dependency graph).
  run_tests "the Dynamo integration suite" \
    env LLLM_REQUIRE_DYNAMO=1 cargo test --workspace --all-features --locked --test dynamo
  step "stopping Dynamo"
  scripts/servers/dynamo.sh down || failed+=("stopping Dynamo")
  unset LLLM_DYNAMO_URL LLLM_DYNAMO_LOG

  if [ ${#failed[@]} -eq 0 ]; then
    step "the payoff of session hints on Dynamo (3 legs, about 3 minutes)"
    scripts/bench_payoff.sh || failed+=("the payoff benchmark")

    step "a recorded trace replayed on Dynamo, with and without session identity (about 3 minutes)"
    scripts/bench_replay.sh || failed+=("the trace replay")
  else
    printf 'lllm: the benchmarks on Dynamo are left out because a step failed\n' >&2
  fi
fi
current=""
