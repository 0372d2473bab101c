//! Background subagents: tasks an agent's model starts with `task_start` (or Rust code with
//! [`Agent::spawn`](crate::Agent::spawn)), each a dialog of its own answered beside its parent.

mod handle;
mod registry;
pub(crate) mod tools;

pub use handle::{TaskHandle, TaskState};
pub use lllm_core::{SubagentMode, SubagentSpec};
pub(crate) use registry::{Children, Entry, TaskRegistry, MAX_TASKS_PER_RUN};
