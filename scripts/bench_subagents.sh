#!/usr/bin/env bash
# Memory of background subagents: 1,000 background `fork` subagents of a 200-message dialog started
# in one process (through Agent::spawn, what task_start does), every child running with its request
# held in flight when the resident set is read; then as many deep copies of the history, what a
# framework that copies a history into each child holds. Prints RSS per fork against the dialog's
# size and a copy's; figures only, no timing.
#   scripts/bench_subagents.sh [--write] [FORKS [MESSAGES]]   # defaults 1000 200
# This benchmark has no section in BENCHMARKS.md yet: --write is accepted (scripts/bench.sh passes it)
# and only says so.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --write ]; then
  echo "scripts/bench_subagents.sh: no BENCHMARKS.md section yet; the figures are printed only" >&2
  shift
fi
case ${1:-} in -*) echo "usage: scripts/bench_subagents.sh [--write] [FORKS [MESSAGES]]" >&2; exit 2 ;; esac
cargo build --release --quiet -p lllm-bench --bin subagent_forks
"${CARGO_TARGET_DIR:-target}"/release/subagent_forks "${1:-1000}" "${2:-200}"
