//! The tasks of one run: ids (`t1`, `t2`, ... per run, so another run's id is unknown here), each
//! task's state, the messages waiting for it, and how to stop it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::TaskState;

/// One task as the run knows it.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) subagent: String,
    /// The agent that started it (`max_background_tasks` counts per agent).
    pub(crate) parent_agent: String,
    pub(crate) background: bool,
    /// Messages sent to it (`task_message`) not yet answered.
    pub(crate) inbox: Vec<String>,
    pub(crate) state: watch::Sender<TaskState>,
    pub(crate) abort: Option<AbortHandle>,
}

/// The run's tasks, shared by its agents through their [`RunContext`](crate::RunContext).
#[derive(Debug, Default)]
pub(crate) struct TaskRegistry {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    tasks: HashMap<String, Entry>,
    order: Vec<String>,
}

/// Most tasks one run keeps: past it, `task_start` is refused (a model starting tasks in a loop
/// cannot grow the run's memory without bound).
pub(crate) const MAX_TASKS_PER_RUN: usize = 1024;

impl TaskRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every update is one assignment or push: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new task id, unless the run has [`MAX_TASKS_PER_RUN`] tasks, or `agent` already runs
    /// `running_limit` background tasks.
    pub(crate) fn reserve(
        &self,
        parent_agent: &str,
        running_limit: Option<u32>,
    ) -> Result<String, String> {
        let mut inner = self.lock();
        if inner.order.len() >= MAX_TASKS_PER_RUN {
            return Err(format!("a run starts at most {MAX_TASKS_PER_RUN} tasks"));
        }
        if let Some(limit) = running_limit {
            let running = inner
                .tasks
                .values()
                .filter(|e| e.background && e.parent_agent == parent_agent)
                .filter(|e| e.state.borrow().is_running())
                .count();
            if running >= limit as usize {
                return Err(format!(
                    "{running} background tasks are running, the most this agent may run at once \
                     (max_background_tasks: {limit}); wait for one with task_check or stop one \
                     with task_cancel"
                ));
            }
        }
        inner.next += 1;
        Ok(format!("t{}", inner.next))
    }

    /// Records a started task.
    pub(crate) fn insert(&self, entry: Entry) {
        let mut inner = self.lock();
        inner.order.push(entry.id.clone());
        inner.tasks.insert(entry.id.clone(), entry);
    }

    /// Runs `f` on task `id`, if this run has it.
    pub(crate) fn with<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> Option<T> {
        self.lock().tasks.get_mut(id).map(f)
    }

    /// The next message waiting for task `id`; when none waits, the task's state becomes `end`
    /// (one lock, so a message sent meanwhile is never lost).
    pub(crate) fn next_message_or_end(&self, id: &str, end: TaskState) -> Option<String> {
        self.with(id, |entry| {
            if entry.inbox.is_empty() {
                entry.state.send_replace(end);
                entry.abort = None;
                None
            } else {
                Some(entry.inbox.remove(0))
            }
        })
        .flatten()
    }

    /// A watch of task `id`'s state.
    pub(crate) fn watch(&self, id: &str) -> Option<watch::Receiver<TaskState>> {
        self.with(id, |entry| entry.state.subscribe())
    }

    /// Stops task `id` if it runs: its respond is dropped, which kills its tools' processes and
    /// stops the tasks it started. Whether it was running.
    pub(crate) fn cancel(&self, id: &str) -> Option<bool> {
        self.with(id, |entry| {
            let running = entry.state.borrow().is_running();
            if running {
                if let Some(abort) = entry.abort.take() {
                    abort.abort();
                }
                entry.inbox.clear();
                entry.state.send_replace(TaskState::Cancelled);
            }
            running
        })
    }

    /// Every task, in the order they started: id, subagent and state.
    pub(crate) fn list(&self) -> Vec<(String, String, TaskState)> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .filter_map(|id| inner.tasks.get(id))
            .map(|e| (e.id.clone(), e.subagent.clone(), e.state.borrow().clone()))
            .collect()
    }
}

/// Stops, when dropped, the tasks of one respond that still run: a respond that ends (its answer
/// given, an error, or its future dropped when the run is cancelled) leaves no child behind.
#[derive(Debug)]
pub(crate) struct Children {
    registry: Arc<TaskRegistry>,
    ids: Mutex<Vec<String>>,
}

impl Children {
    pub(crate) fn new(registry: Arc<TaskRegistry>) -> Self {
        Children {
            registry,
            ids: Mutex::default(),
        }
    }

    pub(crate) fn add(&self, id: String) {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).push(id);
    }

    /// The ids started so far.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn registry(&self) -> &Arc<TaskRegistry> {
        &self.registry
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for id in self.ids() {
            self.registry.cancel(&id);
        }
    }
}
