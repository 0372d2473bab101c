//! The model's calls of the task tools, answered inside its respond: `task_start` needs the calling
//! dialog as the parent last sent it, and the tasks a respond starts end with it.

use std::sync::Mutex;

use lllm_core::Dialog;
use serde_json::{json, Value};

use super::spawn::Start;
use super::Agent;
use crate::tasks::{Children, TaskHandle, TaskState};

/// What one tool round's task calls share.
pub(crate) struct TaskCalls<'a> {
    pub(crate) agent: &'a Agent,
    /// The calling dialog before the answer that holds the calls: what the parent last sent.
    pub(crate) from: Mutex<Dialog>,
    /// The tasks this respond started.
    pub(crate) children: &'a Children,
}

impl TaskCalls<'_> {
    /// Answers a call of a task tool (arguments already checked against its schema): what the
    /// model reads, and whether it is an error.
    pub(crate) async fn answer(&self, tool: &str, args: &Value, call_id: &str) -> (String, bool) {
        let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
        let result = match tool {
            "task_start" => {
                self.start(text("subagent"), text("instructions"), call_id)
                    .await
            }
            "task_check" => match args.get("task_id").and_then(Value::as_str) {
                Some(id) => self
                    .handle(id)
                    .map(|h| h.check().words(id, &self.subagent(id))),
                None => Ok(self.list()),
            },
            "task_message" => self.handle(text("task_id")).and_then(|h| {
                h.message(text("text"))?;
                Ok(format!(
                    "task {} will answer the message after its current work",
                    h.id()
                ))
            }),
            "task_cancel" => self.handle(text("task_id")).map(|h| {
                let state = h.check();
                if h.cancel() {
                    format!("task {} was cancelled", h.id())
                } else {
                    format!("task {} had already ended ({})", h.id(), state.as_str())
                }
            }),
            _ => Ok(self.list()),
        };
        match result {
            Ok(text) => (text, false),
            Err(problem) => (format!("error: {problem}"), true),
        }
    }

    async fn start(&self, subagent: &str, instructions: &str, key: &str) -> Result<String, String> {
        let subagents = self.agent.subagents.as_ref().ok_or("no subagents")?;
        let spec = subagents
            .spec(subagent)
            .ok_or_else(|| format!("there is no subagent `{subagent}`"))?;
        let handle = {
            let mut from = self.from.lock().unwrap_or_else(|p| p.into_inner());
            let start = Start {
                subagent: spec,
                instructions: instructions.to_owned(),
                from: &mut from,
                key,
            };
            self.agent.start_task(start)?
        };
        self.children.add(handle.id().to_owned());
        if !spec.background() {
            return match handle.wait().await {
                TaskState::Finished(answer) => Ok(answer),
                other => Err(other.words(handle.id(), subagent)),
            };
        }
        Ok(json!({
            "task_id": handle.id(),
            "status": format!("task {} ({subagent}) runs in the background; task_check shows its answer once it finishes", handle.id()),
        })
        .to_string())
    }

    /// Task `id` of this run.
    fn handle(&self, id: &str) -> Result<TaskHandle, String> {
        let registry = self.children.registry();
        registry
            .with(id, |_| ())
            .map(|()| TaskHandle {
                id: id.to_owned(),
                registry: registry.clone(),
            })
            .ok_or_else(|| {
                let shown: String = id.chars().take(64).collect();
                format!("unknown task `{shown}` in this run; task_list shows this run's tasks")
            })
    }

    fn subagent(&self, id: &str) -> String {
        self.children
            .registry()
            .with(id, |e| e.subagent.clone())
            .unwrap_or_default()
    }

    fn list(&self) -> String {
        let tasks = self.children.registry().list();
        if tasks.is_empty() {
            return "no tasks were started in this run".to_owned();
        }
        tasks
            .iter()
            .map(|(id, subagent, state)| match state {
                TaskState::Running => state.words(id, subagent),
                // The answers themselves are for task_check: a list stays short.
                _ => format!("task {id} ({subagent}): {}", state.as_str()),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The answers of this respond's background tasks that were still running when the model answered,
/// once they all ended; `None` when none was running (cancelled ones are not waited for).
pub(crate) async fn wait_for_children(children: &Children) -> Option<String> {
    let registry = children.registry();
    let running: Vec<(String, String)> = children
        .ids()
        .into_iter()
        .filter_map(|id| {
            registry.with(&id, |e| {
                (e.background && e.state.borrow().is_running())
                    .then(|| (id.clone(), e.subagent.clone()))
            })?
        })
        .collect();
    if running.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Your background tasks were still running when you answered. They have ended:",
    );
    for (id, subagent) in running {
        let handle = TaskHandle {
            id: id.clone(),
            registry: registry.clone(),
        };
        let state = handle.wait().await;
        text.push_str("\n\n");
        text.push_str(&state.words(&id, &subagent));
    }
    text.push_str("\n\nGive your final answer with their results.");
    Some(text)
}
