#!/usr/bin/env bash
# The criterion micro-benchmarks inside lllm: building one request (lllm-runtime's `request`), forks
# and dialog (de)serialisation (lllm-core's `fork` and `dialog_serde`). Prints each median.
#   scripts/bench_criterion.sh [--write]    # --write puts the table into BENCHMARKS.md
# LLLM_CRITERION_ARGS passes options to criterion (`--quick` for a trial run).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh
case ${1:-} in
  "") ;;
  --write) bench_write_flag --write ;;
  *) echo "usage: scripts/bench_criterion.sh [--write]" >&2; exit 2 ;;
esac
cargo build --release --quiet -p lllm-bench --bin report
# shellcheck disable=SC2086 # LLLM_CRITERION_ARGS is a list of options.
cargo bench --quiet -p lllm-runtime --bench request -- ${LLLM_CRITERION_ARGS:-}
# shellcheck disable=SC2086
cargo bench --quiet -p lllm-core --bench fork --bench dialog_serde -- ${LLLM_CRITERION_ARGS:-}
report criterion "${CARGO_TARGET_DIR:-target}/criterion"
