//! lllm-runtime's integration tests, one module per former `tests/*.rs` file, in one test binary:
//! one link instead of thirteen (linking many debug binaries was a large share of the test
//! command's time). Run one module with `cargo test -p lllm-runtime --all-features --test it --
//! dynamo::` (a filter on the module's name).

mod admission;
mod agent_loop;
mod api;
mod compaction;
mod confirm;
mod console_api;
mod dynamo;
mod engine;
mod fallback;
mod fuzz_response;
mod hostile_server;
mod journal_api;
mod mcp_api;
mod mcp_tasks;
mod priority_auto;
mod queue;
mod replay_agentic;
mod run_context;
mod serve;
mod skills;
mod subagents;
mod support;
mod tactics;
mod trace;
mod wire;
