//! lllm-core's integration tests, one module per former `tests/*.rs` file, in one test binary:
//! one link instead of one per file (linking many debug binaries was a large share of the test
//! command's time). Run one module with `cargo test -p lllm-core --test it -- fuzz_loader::`.

mod docs_tactics;
mod fuzz_loader;
