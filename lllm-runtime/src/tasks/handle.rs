//! A started task, as Rust code holds it: check it, send it a message, cancel it, await its answer.

use std::sync::Arc;

use super::TaskRegistry;

/// Where a task is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Its dialog is being answered.
    Running,
    /// It answered with this text.
    Finished(String),
    /// Its respond failed with this problem.
    Failed(String),
    /// It was cancelled.
    Cancelled,
}

impl TaskState {
    /// Whether it still runs.
    pub fn is_running(&self) -> bool {
        matches!(self, TaskState::Running)
    }

    /// `running`, `finished`, `failed` or `cancelled`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskState::Running => "running",
            TaskState::Finished(_) => "finished",
            TaskState::Failed(_) => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// What the model reads about a task in this state.
    pub(crate) fn words(&self, id: &str, subagent: &str) -> String {
        match self {
            TaskState::Running => format!("task {id} ({subagent}) is still running"),
            TaskState::Finished(answer) => {
                format!("task {id} ({subagent}) finished; its answer:\n{answer}")
            }
            TaskState::Failed(problem) => format!("task {id} ({subagent}) failed: {problem}"),
            TaskState::Cancelled => format!("task {id} ({subagent}) was cancelled"),
        }
    }
}

/// A task started by [`Agent::spawn`](crate::Agent::spawn) (or by a model's `task_start`). Dropping
/// the handle does not stop the task; [`cancel`](Self::cancel) does.
#[derive(Debug, Clone)]
pub struct TaskHandle {
    pub(crate) id: String,
    pub(crate) registry: Arc<TaskRegistry>,
}

impl TaskHandle {
    /// The task's id in its run (`t1`, `t2`, ...).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where the task is now.
    pub fn check(&self) -> TaskState {
        self.registry
            .with(&self.id, |e| e.state.borrow().clone())
            .unwrap_or(TaskState::Cancelled)
    }

    /// Sends the task another turn: `text` is answered after its current answer. Refused (with
    /// the reason) once it ended.
    pub fn message(&self, text: impl Into<String>) -> Result<(), String> {
        let text = text.into();
        self.registry
            .with(&self.id, |entry| {
                let state = entry.state.borrow().clone();
                if state.is_running() {
                    entry.inbox.push(text);
                    Ok(())
                } else {
                    Err(format!(
                        "task {} has ended ({}); start a new task instead",
                        entry.id,
                        state.as_str()
                    ))
                }
            })
            .unwrap_or_else(|| Err(format!("unknown task {}", self.id)))
    }

    /// Stops the task (its tools' processes are killed); whether it was still running.
    pub fn cancel(&self) -> bool {
        self.registry.cancel(&self.id).unwrap_or(false)
    }

    /// Waits until the task ends, and gives its final state.
    pub async fn wait(&self) -> TaskState {
        let Some(mut watch) = self.registry.watch(&self.id) else {
            return TaskState::Cancelled;
        };
        let ended = match watch.wait_for(|s| !s.is_running()).await {
            Ok(state) => state.clone(),
            Err(_) => TaskState::Cancelled,
        };
        ended
    }
}

impl std::future::IntoFuture for TaskHandle {
    type Output = TaskState;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = TaskState> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.wait().await })
    }
}
