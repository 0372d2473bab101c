#!/usr/bin/env bash
# The project's test command: formatting, lints, and the whole test suite (unit, wire tests against a
# local recording HTTP server, CLI end to end). Needs only the Rust toolchain; no network server, no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "cargo doc (broken links and missing docs are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --locked --quiet

step "cargo test --workspace"
cargo test --workspace --all-features --locked
