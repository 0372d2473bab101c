//! One rule per value: every number of seconds, run limit, server URL and header lllm takes is read
//! by one parser with one range, wherever it is written (a tactic file, a flag such as `--limit`, a
//! Rust builder), so that the same value means the same thing everywhere.
//!
//! | value | rule |
//! |---|---|
//! | `tools[].timeout_s`, `mcp_servers.*.timeout_s` / `startup_timeout_s` | [`SecondsRange::TOOL`] |
//! | `model_args.timeout` / `deadline`, `limits.max_seconds` | [`SecondsRange::RUN`] |
//! | `limits.max_requests` / `max_total_tokens` / `max_tool_calls` | [`RunLimits::set_limit`](crate::RunLimits::set_limit) |
//! | `context.window` / `compact_at` / `keep_last` / `session` | [`ContextPolicy`](crate::ContextPolicy) (one rule each, also for [`ContextPolicy::with`](crate::ContextPolicy::with)) |
//! | `model_args.api_base`, `mcp_servers.*.url` | [`check_http_url`] |
//! | `model_args.extra_headers`, `mcp_servers.*.headers` | [`check_header`] |

mod error;
mod header;
mod http_url;
mod seconds;
mod written;

pub use error::ValueError;
pub use header::{check_header, typed_header};
pub use http_url::check_http_url;
pub use seconds::SecondsRange;
pub use written::Written;
pub(crate) use written::{shown_number, Number};
