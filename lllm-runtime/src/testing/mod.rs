//! Test helpers for code built on lllm (feature `testing`): a scripted invoker that records every call,
//! a stub OpenAI-compatible HTTP server that records every request it receives, a hostile server that
//! answers with scripted bytes, the answer parsers, for fuzzing, and a NATS server of a test's own.
#![doc = include_str!("../../../docs/testing.md")]
#![doc = include_str!("../../../docs/servers.md")]

mod capture;
mod hostile_server;
mod nats;
mod scripted;
mod stub_server;

pub use capture::{dynamo_ttfts, dynamo_workers, dynamo_workers_for, SharedBuffer};
pub use hostile_server::{parse_completion, parse_event_stream, HostileReply, HostileServer};
pub use nats::NatsServer;
pub use scripted::{RecordedCall, ScriptedInvoker};
pub use stub_server::{RecordedRequest, StubReply, StubServer, TOGETHER_LIMIT};
