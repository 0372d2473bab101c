//! Ctrl-C, SIGTERM and SIGHUP: the run stops at once, every process its tools started is killed, and
//! lllm exits with 128 + the signal's number (130, 143, 129), as shells report a command a signal
//! ended.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Work to finish before exiting on a signal (writing what a trace holds, say).
type Hook = Box<dyn Fn() + Send>;

static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
/// Set once a signal arrived: the run's own end (a tool killed by the stop, say) must not decide the
/// exit code.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Takes over SIGINT, SIGTERM and SIGHUP for the rest of the process. A second signal while the first
/// is handled exits at once.
pub(crate) fn install() -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("lllm-signals".into())
        .spawn(move || {
            let mut received = signals.forever();
            if let Some(signal) = received.next() {
                // Stopping runs beside this thread, which keeps listening for an impatient second
                // signal.
                std::thread::spawn(move || stop(signal));
            }
            if let Some(again) = received.next() {
                std::process::exit(128 + again);
            }
        })?;
    Ok(())
}

/// Runs `hook` before exiting on a signal.
pub(crate) fn on_stop(hook: impl Fn() + Send + 'static) {
    lock().push(Box::new(hook));
}

/// Waits for the exit a signal is bringing, if one arrived; returns at once otherwise.
pub(crate) fn yield_to_a_stop() {
    while STOPPING.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Hook>> {
    HOOKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn stop(signal: i32) -> ! {
    STOPPING.store(true, Ordering::SeqCst);
    // First: nothing new leaves, not even the error results of the tools killed next.
    lllm_runtime::events::halt();
    let killed = lllm_runtime::tools::kill_tool_processes();
    for hook in lock().iter() {
        hook();
    }
    let name = match signal {
        SIGINT => "SIGINT (Ctrl-C)",
        SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    };
    let killed = match killed {
        0 => String::new(),
        n => format!("; killed {n} tool process(es)"),
    };
    // The terminal may be gone (SIGHUP): a failed write changes nothing.
    writeln!(std::io::stderr(), "\nlllm: stopped by {name}{killed}").ok();
    std::process::exit(128 + signal)
}
