# shellcheck shell=bash
# Shared by the benchmark scripts (scripts/bench_*.sh): where the release binaries are, and `report`,
# the bench crate's binary that turns a benchmark's figures (JSON) into its section of BENCHMARKS.md,
# prints it, and with --write puts it between the section's markers (the one splicer, in Rust).
# A script calls `bench_write_flag "$1"` for its --write argument; LLLM_BENCHMARKS names the file that
# --write writes (default BENCHMARKS.md), for a trial run that must not touch the real one.
bin=$(realpath -m "${CARGO_TARGET_DIR:-target}/release")  # absolute: benchmarks run the binaries from temporary directories
write=()

# bench_write_flag ARG: true if ARG is --write (then `report` writes), false otherwise.
bench_write_flag() {
  [ "${1:-}" = --write ] || return 1
  write=(--write --file "${LLLM_BENCHMARKS:-BENCHMARKS.md}")
}

# report BENCHMARK INPUT...: prints the benchmark's section; writes it with --write.
report() {
  "$bin"/report "${write[@]}" "$@"
}
