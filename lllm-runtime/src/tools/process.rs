//! Keeping track of every process a command tool starts, so that none outlives its call or the run.
//!
//! A tool runs in a process group of its own, and the group is killed when the call ends. A child
//! that leaves the group (`setsid`, a daemonising double fork) escapes that kill, so every call also
//! marks its program's environment with `LLLM_TOOL_CALL=<pid>.<n>`: the variable is inherited by
//! everything the tool starts, and the processes that carry it are found in `/proc` and killed when
//! the call ends. A program could still clear its environment; for that case a host program (the
//! `lllm` command) calls [`contain_tool_processes`] once, so that orphans are re-parented to it
//! instead of to init, and [`kill_tool_processes`] before it exits.
//!
//! All of this is Linux-specific; elsewhere only the process group is killed.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The environment variable that marks a tool call's processes.
pub(crate) const MARKER_VAR: &str = "LLLM_TOOL_CALL";

/// Numbers the calls of this process.
static CALLS: AtomicU64 = AtomicU64::new(0);
/// Whether this process adopts orphaned descendants (see [`contain_tool_processes`]).
static SUBREAPER: AtomicBool = AtomicBool::new(false);
/// Tool programs started and not yet waited for: tokio reaps those, so the sweep must not.
static LIVE: Mutex<Option<HashSet<u32>>> = Mutex::new(None);
/// Process groups of running MCP servers: killed whole by [`kill_tool_processes`].
static GROUPS: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// The marker of one tool call: `<this process's id>.<call number>`.
pub(crate) fn new_marker() -> String {
    format!(
        "{}.{}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes this process the adopter of every orphaned descendant (Linux's child subreaper), so that a
/// tool's child that left its group and cleared its environment still ends up where
/// [`kill_tool_processes`] finds it. Meant for a program that runs tools on behalf of a user (the
/// `lllm` command calls it at start); a library does not change such a process-wide setting itself.
///
/// # Errors
/// When the operating system refuses; on systems other than Linux this does nothing.
pub fn contain_tool_processes() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)?;
        SUBREAPER.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Kills every process started by this process's tool calls that is still running, and (after
/// [`contain_tool_processes`]) every descendant adopted since, then reaps them. Returns how many
/// processes were signalled. Call it before exiting on a signal; it gives up after about two seconds.
pub fn kill_tool_processes() -> usize {
    let groups = kill_server_groups();
    let prefix = format!("{}.", std::process::id());
    groups + sweep(&Target::AllOf(&prefix), Duration::from_secs(2))
}

/// Whether a tool program or an MCP server was ever started here: until then no process carries
/// this process's marker, so a sweep has only adopted children to look for.
fn started_any() -> bool {
    CALLS.load(Ordering::SeqCst) > 0
}

/// Kills every registered server's process group; returns how many groups were signalled.
fn kill_server_groups() -> usize {
    let groups: Vec<u32> = groups().iter().flatten().copied().collect();
    groups.iter().filter(|&&group| kill_group(group)).count()
}

/// Sends SIGKILL to the process group `group`; whether one was there to signal.
pub(crate) fn kill_group(group: u32) -> bool {
    #[cfg(unix)]
    {
        use nix::sys::signal::{killpg, Signal};
        i32::try_from(group)
            .is_ok_and(|g| killpg(nix::unistd::Pid::from_raw(g), Signal::SIGKILL).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = group;
        false
    }
}

/// Sends SIGTERM to the process group `group`.
pub(crate) fn terminate_group(group: u32) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{killpg, Signal};
        if let Ok(g) = i32::try_from(group) {
            killpg(nix::unistd::Pid::from_raw(g), Signal::SIGTERM).ok();
        }
    }
    #[cfg(not(unix))]
    let _ = group;
}

/// A server's process group, registered while the server runs so that a signal's
/// [`kill_tool_processes`] kills it too.
#[derive(Debug)]
pub(crate) struct GroupRegistration(u32);

impl GroupRegistration {
    pub(crate) fn new(group: u32) -> Self {
        groups().get_or_insert_with(HashSet::new).insert(group);
        GroupRegistration(group)
    }
}

impl Drop for GroupRegistration {
    fn drop(&mut self) {
        if let Some(set) = groups().as_mut() {
            set.remove(&self.0);
        }
    }
}

fn groups() -> MutexGuard<'static, Option<HashSet<u32>>> {
    GROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills what is left of one call: the processes carrying its marker. Waits (a bounded time) until
/// none is running, so that pipes they held are closed when this returns.
pub(crate) fn kill_call(marker: &str) -> usize {
    sweep(&Target::Call(marker), Duration::from_secs(2))
}

/// Registers a started tool program until it is waited for. Spawning happens under the registry's
/// lock so that a sweep never mistakes a just-started, already-exited program for an orphan.
pub(crate) struct Registration(Option<u32>);

impl Registration {
    /// Runs `spawn` under the registry lock and registers what it started.
    pub(crate) fn spawn<T>(
        spawn: impl FnOnce() -> std::io::Result<T>,
        id: impl Fn(&T) -> Option<u32>,
    ) -> std::io::Result<(T, Registration)> {
        let mut live = live();
        let started = spawn()?;
        let pid = id(&started);
        if let Some(pid) = pid {
            live.get_or_insert_with(HashSet::new).insert(pid);
        }
        Ok((started, Registration(pid)))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let (Some(pid), Some(set)) = (self.0, live().as_mut()) {
            set.remove(&pid);
        }
    }
}

fn live() -> MutexGuard<'static, Option<HashSet<u32>>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Which processes a sweep kills.
enum Target<'a> {
    /// Those whose marker is exactly this call's.
    Call(&'a str),
    /// Those whose marker starts with this prefix, and every adopted child.
    AllOf(&'a str),
}

/// Kills the target's processes until none runs or `patience` has passed; reaps adopted ones.
fn sweep(target: &Target<'_>, patience: Duration) -> usize {
    #[cfg(target_os = "linux")]
    {
        linux::sweep(target, patience)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (target, patience);
        0
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io::Read;

    use nix::sys::signal::{kill, Signal};
    use nix::sys::wait::{waitpid, WaitPidFlag};
    use nix::unistd::Pid;

    use super::{live, Duration, Instant, Ordering, Target, MARKER_VAR, SUBREAPER};

    /// Most bytes of a process's environment read to look for the marker.
    const ENVIRON_READ_BYTES: u64 = 1024 * 1024;

    /// What `/proc` says about one process.
    struct Process {
        pid: i32,
        parent: i32,
        zombie: bool,
    }

    pub(super) fn sweep(target: &Target<'_>, patience: Duration) -> usize {
        // A run that started no tool program and no server (most runs) has nothing marked out
        // there: it looks at its own children, not at every process of the machine (reading each
        // one's environment cost more than the rest of a one-turn run's exit).
        let only_children = matches!(target, Target::AllOf(_)) && !super::started_any();
        if only_children && !SUBREAPER.load(Ordering::SeqCst) {
            return 0;
        }
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let deadline = Instant::now() + patience;
        let mut signalled = 0;
        loop {
            let mut running = 0;
            let candidates = if only_children {
                children().unwrap_or_else(processes)
            } else {
                processes()
            };
            for process in candidates {
                if process.pid == me {
                    continue;
                }
                let adopted = process.parent == me;
                if process.zombie {
                    if adopted {
                        reap(process.pid);
                    }
                    continue;
                }
                let hit = match target {
                    Target::Call(marker) => carries(process.pid, marker, true),
                    Target::AllOf(prefix) => {
                        (adopted && SUBREAPER.load(Ordering::SeqCst))
                            || carries(process.pid, prefix, false)
                    }
                };
                if hit {
                    kill(Pid::from_raw(process.pid), Signal::SIGKILL).ok();
                    signalled += 1;
                    running += 1;
                }
            }
            if running == 0 || Instant::now() >= deadline {
                return signalled;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Reaps an adopted child that has ended, unless it is a tool program tokio waits for.
    fn reap(pid: i32) {
        let registered = live()
            .as_ref()
            .is_some_and(|set| u32::try_from(pid).is_ok_and(|p| set.contains(&p)));
        if !registered {
            waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)).ok();
        }
    }

    /// Whether the process's environment holds `LLLM_TOOL_CALL=<value>` (`exact`) or a value that
    /// starts with `value`.
    fn carries(pid: i32, value: &str, exact: bool) -> bool {
        let Ok(file) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let mut environ = Vec::new();
        if file
            .take(ENVIRON_READ_BYTES)
            .read_to_end(&mut environ)
            .is_err()
        {
            return false;
        }
        let wanted = format!("{MARKER_VAR}={value}");
        environ.split(|b| *b == 0).any(|entry| {
            if exact {
                entry == wanted.as_bytes()
            } else {
                entry.starts_with(wanted.as_bytes())
            }
        })
    }

    /// Every process visible in `/proc` (those that vanish while being read are skipped).
    fn processes() -> Vec<Process> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| process(entry.ok()?.file_name().to_str()?.parse().ok()?))
            .collect()
    }

    /// This process's children, adopted ones included, from each thread's
    /// `/proc/self/task/<tid>/children`; `None` when the kernel does not offer those files.
    fn children() -> Option<Vec<Process>> {
        let mut children = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").ok()? {
            let task = task.ok()?;
            let list = std::fs::read_to_string(task.path().join("children")).ok()?;
            children.extend(
                list.split_whitespace()
                    .filter_map(|pid| process(pid.parse().ok()?)),
            );
        }
        Some(children)
    }

    /// What `/proc/<pid>/stat` says, if the process is still there.
    fn process(pid: i32) -> Option<Process> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name may contain anything, `)` included: the fields follow the last `)`.
        let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
        let state = fields.next()?;
        let parent = fields.next()?.parse().ok()?;
        Some(Process {
            pid,
            parent,
            zombie: state == "Z" || state == "X",
        })
    }
}
