//! The one place a blocking caller gets a Tokio runtime.

use std::future::Future;

/// Owns the Tokio runtime that runs an engine's work for a caller that is not async itself (the
/// `lllm` command): one multi-threaded runtime with timers and I/O.
#[derive(Debug)]
pub struct Host {
    runtime: tokio::runtime::Runtime,
}

impl Host {
    /// Starts the runtime.
    pub fn new() -> std::io::Result<Host> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        Ok(Host { runtime })
    }

    /// Runs `future` to its end on the runtime, blocking this thread.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The runtime's handle, to spawn work on it.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime.handle()
    }
}
