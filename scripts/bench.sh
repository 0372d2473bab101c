#!/usr/bin/env bash
# The project's benchmark command: every benchmark, one after the other, each by its own script
# (scripts/bench_NAME.sh), which builds its release binaries, starts the servers it needs (NVIDIA
# Dynamo, the MCP reference server, a stand-in server; installed into the cache on first use) and
# prints its section of BENCHMARKS.md. With --write each section also goes into BENCHMARKS.md,
# between its markers, through the bench crate's `report` binary (the one splicer).
#   scripts/bench.sh [--write] [--quick] [NAME...]
# NAMEs (default: all, in this order): criterion concurrency journal otel mcp serve continuation queue
# floor python payoff replay priority compaction admission subagents eval. The whole run takes about 30 minutes on 2
# cores after the first builds and installs; payoff, replay, priority, compaction and admission run on
# Dynamo (about 3, 3, 7, 1 and 3 minutes), and so does subagents' makespan (about a minute).
# --quick runs each benchmark in its shortest form (fewer runs, calls and waves; payoff, replay and
# python have none), to try the command: its figures are not worth keeping, so with --write it
# needs LLLM_BENCHMARKS to name another file than BENCHMARKS.md.
# A failed benchmark does not stop the others; the exit status is non-zero if one failed.
set -euo pipefail
cd "$(dirname "$0")/.."
all=(criterion concurrency journal otel mcp serve continuation queue floor python payoff replay priority compaction admission subagents eval)
write=() quick=0 names=()
for arg in "$@"; do
  case $arg in
    --write) write=(--write) ;;
    --quick) quick=1 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: scripts/bench.sh [--write] [--quick] [NAME...]" >&2; exit 2 ;;
    *)
      [[ " ${all[*]} " == *" $arg "* ]] || { echo "scripts/bench.sh: no benchmark \`$arg\` (${all[*]})" >&2; exit 2; }
      names+=("$arg") ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")

if [ "$quick" = 1 ]; then
  if [ ${#write[@]} -gt 0 ] && [ "${LLLM_BENCHMARKS:-BENCHMARKS.md}" -ef BENCHMARKS.md ]; then
    echo "scripts/bench.sh: --quick --write would put trial figures into BENCHMARKS.md; set LLLM_BENCHMARKS to another file" >&2
    exit 2
  fi
  export LLLM_CRITERION_ARGS=--quick LLLM_DIALOGS=100 LLLM_JOURNAL_REPETITIONS=3 LLLM_OTEL_REPETITIONS=3
  export LLLM_OTEL_E2E_RUNS=3 LLLM_MCP_CALLS=100 LLLM_SERVE_REQUESTS=200 LLLM_CONTINUATION_REQUESTS=100 COMPACTION_TURNS=40 LLLM_ADMISSION_RUNS=1 LLLM_ADMISSION_TACTICS=1,4 LLLM_QUEUE_ITEMS=40 LLLM_FLOOR_REPEATS=3
  export LLLM_EVAL_CASES=20 LLLM_EVAL_TRIALS=2 LLLM_EVAL_RUNS=10 LLLM_EVAL_REPEATS=1 SUBAGENTS_ROUNDS=1
  export LLLM_PRIORITY_WAVES=1 LLLM_PRIORITY_RUNS=2 LLLM_PRIORITY_WARMUP=2 LLLM_PRIORITY_WINDOW=15
fi

failed=() times=()
for name in "${names[@]}"; do
  args=("${write[@]}")
  [ "$name" = otel ] && args+=(--e2e)   # BENCHMARKS.md's figures include whole `lllm run` processes
  printf '\n== %s: scripts/bench_%s.sh %s\n' "$name" "$name" "${args[*]}" >&2
  started=$SECONDS
  "scripts/bench_$name.sh" "${args[@]}" || failed+=("$name")
  times+=("$(printf '%5d s  %s' $((SECONDS - started)) "$name")")
done
printf '\nbenchmark times:\n' >&2
printf '%s\n' "${times[@]}" >&2
if [ ${#failed[@]} -gt 0 ]; then
  printf 'lllm: FAILED: the benchmark %s\n' "${failed[@]}" >&2
  exit 1
fi
