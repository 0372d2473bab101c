//! What `lllm replay` accepts: every number a trace or the options give is checked against these
//! before anything is allocated from it or waited for, so a trace is safe to read whoever wrote it.

/// Largest trace file read, in bytes (256 MiB).
pub const MAX_TRACE_BYTES: u64 = 256 * 1024 * 1024;
/// Longest line, in bytes (16 MiB): room for a row of [`MAX_PROMPT_TOKENS`] one-token blocks.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Most requests (rows) in one trace.
pub const MAX_ROWS: usize = 1_000_000;
/// Tokens per block: from 1 to this (the same bound as `lllm run --trace-block-size`).
pub const MAX_BLOCK_TOKENS: usize = 65_536;
/// Most tokens of one synthetic prompt: `hash_ids` × block size (2^20, about 5 MB of text).
pub const MAX_PROMPT_TOKENS: u64 = 1 << 20;
/// Largest token count a row may give (`input_length`, `output_length`, `cached_tokens`, `osl`): 2^24.
pub const MAX_TOKENS: u64 = 1 << 24;
/// Largest block id: 2^53 − 1, the largest integer every JSON reader holds exactly.
pub const MAX_HASH_ID: u64 = (1 << 53) - 1;
/// Largest time in a row (`timestamp`, `delay`, `tool_wait_ms`, `latency_ms`, `ttft_ms`), and the
/// longest schedule of one session (its first `timestamp` plus all its `delay`s): 7 days, in ms.
pub const MAX_SCHEDULE_MS: u64 = 7 * 24 * 60 * 60 * 1000;
/// Slowest replay speed (`--speed`).
pub const MIN_SPEED: f64 = 0.001;
/// Fastest replay speed (`--speed`).
pub const MAX_SPEED: f64 = 1_000_000.0;
/// Most requests in flight at once; later ones wait for a free slot.
pub const MAX_IN_FLIGHT: usize = 256;
/// Most synthetic prompt text in flight at once, in bytes (32 MiB, counted at its upper bound);
/// later requests wait until earlier ones are answered. One prompt always fits.
pub const MAX_IN_FLIGHT_PROMPT_BYTES: u64 = 32 * 1024 * 1024;
