//! What the console knows of a run's tasks (background subagents): each task's id, the subagent
//! and the agent answering it, who started it from which dialog, its own dialog, its mode and
//! whether it ran in the background, and where it is (`running`, `finished`, `failed`,
//! `cancelled`), folded from the run's `task.started` and `task.ended` events. The console draws a
//! task's dialog under the dialog that started it, an isolated child included (its requests name
//! no parent, but the run knows who started it).

use serde_json::{json, Value};

use crate::events::{cut, RunEvent, StepOutcome, MAX_LABEL};

/// Tasks kept per run: as many as a run may start, so every one is kept.
const MAX_TASKS: usize = crate::tasks::MAX_TASKS_PER_RUN;

/// A run's tasks, in the order they started.
#[derive(Debug, Default)]
pub(crate) struct TaskLog {
    tasks: Vec<TaskEntry>,
}

#[derive(Debug)]
struct TaskEntry {
    id: String,
    subagent: String,
    agent: String,
    parent_agent: String,
    parent_dialog: String,
    dialog: String,
    mode: &'static str,
    background: bool,
    status: &'static str,
}

impl TaskLog {
    /// Takes in a task event; whether it was one.
    pub(crate) fn fold(&mut self, event: &RunEvent) -> bool {
        match event {
            RunEvent::TaskStarted {
                task,
                subagent,
                agent,
                parent_agent,
                parent_dialog,
                dialog,
                mode,
                background,
            } => {
                let entry = TaskEntry {
                    id: cut(task, MAX_LABEL),
                    subagent: cut(subagent, MAX_LABEL),
                    agent: cut(agent, MAX_LABEL),
                    parent_agent: cut(parent_agent, MAX_LABEL),
                    parent_dialog: parent_dialog.to_string(),
                    dialog: dialog.to_string(),
                    mode: mode.as_str(),
                    background: *background,
                    status: "running",
                };
                self.started(entry);
            }
            RunEvent::TaskEnded { task, outcome, .. } => {
                let id = cut(task, MAX_LABEL);
                if let Some(entry) = self.tasks.iter_mut().find(|t| t.id == id) {
                    entry.status = match outcome {
                        StepOutcome::Finished => "finished",
                        StepOutcome::Failed => "failed",
                        StepOutcome::Cancelled => "cancelled",
                    };
                }
            }
            _ => return false,
        }
        true
    }

    fn started(&mut self, entry: TaskEntry) {
        // A resumed run starts its unfinished children again under their ids: one entry each.
        if let Some(known) = self.tasks.iter_mut().find(|t| t.id == entry.id) {
            *known = entry;
        } else if self.tasks.len() < MAX_TASKS {
            self.tasks.push(entry);
        }
    }

    /// How many tasks the run started, and how many of them still run.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let running = self.tasks.iter().filter(|t| t.status == "running").count();
        (self.tasks.len(), running)
    }

    /// `[{"id", "subagent", "agent", "parent_agent", "parent_dialog", "dialog", "mode",
    /// "background", "status"}]`, in the order the tasks started.
    pub(crate) fn to_json(&self) -> Value {
        self.tasks
            .iter()
            .map(|t| {
                json!({
                    "id": t.id,
                    "subagent": t.subagent,
                    "agent": t.agent,
                    "parent_agent": t.parent_agent,
                    "parent_dialog": t.parent_dialog,
                    "dialog": t.dialog,
                    "mode": t.mode,
                    "background": t.background,
                    "status": t.status,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lllm_core::{DialogId, SubagentMode};

    fn started(task: &str, parent: DialogId, dialog: DialogId) -> RunEvent {
        RunEvent::TaskStarted {
            task: task.into(),
            subagent: "researcher".into(),
            agent: "scout".into(),
            parent_agent: "lead".into(),
            parent_dialog: parent,
            dialog,
            mode: SubagentMode::Isolated,
            background: true,
        }
    }

    fn ended(task: &str, outcome: StepOutcome) -> RunEvent {
        RunEvent::TaskEnded {
            task: task.into(),
            agent: "scout".into(),
            outcome,
        }
    }

    #[test]
    fn tasks_are_listed_in_start_order_with_where_each_is() {
        let mut log = TaskLog::default();
        let (lead, a, b) = (DialogId::new(), DialogId::new(), DialogId::new());
        assert!(log.fold(&started("t1", lead, a)));
        assert!(log.fold(&started("t2", lead, b)));
        assert_eq!(log.counts(), (2, 2));
        assert!(log.fold(&ended("t2", StepOutcome::Cancelled)));
        let tasks = log.to_json();
        assert_eq!(
            tasks[0],
            json!({"id": "t1", "subagent": "researcher", "agent": "scout", "parent_agent": "lead",
                   "parent_dialog": lead.to_string(), "dialog": a.to_string(), "mode": "isolated",
                   "background": true, "status": "running"})
        );
        assert_eq!(tasks[1]["status"], "cancelled");
        assert_eq!(log.counts(), (2, 1));
    }

    #[test]
    fn a_task_started_again_after_a_resume_is_one_entry_and_other_events_are_not_tasks() {
        let mut log = TaskLog::default();
        let (lead, child) = (DialogId::new(), DialogId::new());
        log.fold(&started("t1", lead, child));
        log.fold(&ended("t1", StepOutcome::Failed));
        log.fold(&started("t1", lead, child));
        assert_eq!(log.counts(), (1, 1));
        assert!(!log.fold(&RunEvent::Text {
            agent: "lead".into(),
            text: "x".into(),
        }));
        // An end of a task never started (its start was before this server) changes nothing.
        log.fold(&ended("t9", StepOutcome::Finished));
        assert_eq!(log.counts(), (1, 1));
    }

    #[test]
    fn the_tasks_kept_are_bounded() {
        let mut log = TaskLog::default();
        let lead = DialogId::new();
        for n in 0..MAX_TASKS + 5 {
            log.fold(&started(&format!("t{n}"), lead, DialogId::new()));
        }
        assert_eq!(log.counts().0, MAX_TASKS);
    }
}
