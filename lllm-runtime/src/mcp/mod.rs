//! MCP tool servers: agents call the tools of Model Context Protocol servers, reached over stdio (a
//! child process) or streamable HTTP, through the official Rust SDK (`rmcp`).
//!
//! An [`McpServer`] is started once and shared: every agent given a handle (with
//! [`AgentBuilder::mcp`](crate::AgentBuilder::mcp)) offers the server's tools to its model, filtered
//! and prefixed as configured. [`McpServers`] starts a tactic file's servers in parallel and hands each
//! agent its tools. Shutting a stdio server down ends its whole process group; a handle dropped
//! without [`McpServer::shutdown`] kills the group too.
//!
//! ```no_run
//! use std::sync::Arc;
//! use lllm_runtime::{Agent, McpServer, OpenAiInvoker, ToolFilter};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let time = McpServer::stdio("time", ["mcp-server-time", "--local-timezone", "UTC"])
//!     .start()
//!     .await?;
//! let agent = Agent::builder()
//!     .name("clock")
//!     .system_prompt("You tell the time.")
//!     .model("openai/gpt-4o-mini")
//!     .invoker(Arc::new(OpenAiInvoker::new()))
//!     .mcp_filtered(&time, ToolFilter::Include(vec!["get_current_time".into()]))
//!     .build()?;
//! # let _ = agent;
//! time.shutdown().await;
//! # Ok(()) }
//! ```

mod child;
mod connect;
mod content;
mod error;
mod server;
mod servers;
mod tool;

pub use error::McpError;
pub use server::{McpServer, McpServerBuilder};
pub use servers::McpServers;
