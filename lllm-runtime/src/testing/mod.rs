//! Test helpers for code built on lllm (feature `testing`): a scripted invoker that records every call,
//! and a stub OpenAI-compatible HTTP server that records every request it receives.

mod capture;
mod scripted;
mod stub_server;

pub use capture::{dynamo_workers, dynamo_workers_for, SharedBuffer};
pub use scripted::{RecordedCall, ScriptedInvoker};
pub use stub_server::{RecordedRequest, StubReply, StubServer, TOGETHER_LIMIT};
