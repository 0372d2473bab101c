//! lllm-cli's end-to-end tests, one module per former `tests/*.rs` file, in one test binary: one
//! link instead of five (linking many debug binaries was a large share of the test command's time).
//! The adversarial suite stays a binary of its own (`tests/adversarial/`). Run one module with
//! `cargo test -p lllm-cli --test it -- mcp::`.

mod batch;
mod browser;
mod cli;
mod console;
mod eval;
mod journal;
mod mcp;
mod mcp_asks;
mod mcp_elicit;
mod mcp_oauth;
mod mcp_resources;
mod mcp_tasks;
mod observability;
mod queue;
mod serve;
mod serve_clients;
mod serve_retry;
mod serve_startup;
mod skills;
mod subagents;
mod tls;

/// The adversarial suite's bounded runner and fixtures, which `batch`, `journal` and `mcp` use too.
#[path = "../adversarial/support.rs"]
mod support;
