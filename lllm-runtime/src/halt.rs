//! Stopping every run of the process at once, for a program about to exit on a signal.

use std::sync::atomic::{AtomicBool, Ordering};

static HALTED: AtomicBool = AtomicBool::new(false);

/// From now on, no agent of this process sends another model request or starts another tool call:
/// each fails at once instead. A program about to exit on a signal calls it before killing the tool
/// processes, so that the error results of the calls it kills are not sent to the model. It cannot
/// be undone.
pub fn halt() {
    HALTED.store(true, Ordering::SeqCst);
}

/// Whether [`halt`] was called.
pub(crate) fn halted() -> bool {
    HALTED.load(Ordering::SeqCst)
}
