//! The one place a blocking caller gets a Tokio runtime.

use std::future::Future;

/// Owns the Tokio runtime that runs an engine's work for a caller that is not async itself (the
/// `lllm` command), with timers and I/O.
#[derive(Debug)]
pub struct Host {
    runtime: tokio::runtime::Runtime,
}

impl Host {
    /// A runtime on the calling thread: what one run (or a batch of them) needs. A run waits on the
    /// network and its tools, and on one thread it spends no CPU handing work between threads
    /// (measured by `bench floor`: a third of a turn's CPU on a multi-threaded runtime).
    pub fn new() -> std::io::Result<Host> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Host { runtime })
    }

    /// A runtime with a worker thread per core, for a process that serves many runs at once.
    pub fn multi_thread() -> std::io::Result<Host> {
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
