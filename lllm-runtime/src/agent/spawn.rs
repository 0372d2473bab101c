//! Starting a task: the child's dialog (a fork of the calling dialog, or a new root), its entry in
//! the run's registry, and the respond that answers it on a task of its own.

use std::sync::Arc;

use lllm_core::{Dialog, DialogId, PromptVars, SubagentMode, SubagentSpec};

use super::{Agent, AgentError, AgentErrorKind};
use crate::events::{RunEvent, StepOutcome};
use crate::tasks::{Entry, TaskHandle, TaskState};

/// What a task starts from.
pub(crate) struct Start<'a> {
    pub(crate) subagent: &'a SubagentSpec,
    pub(crate) instructions: String,
    /// The calling dialog as its parent last sent it (a `fork` child begins with it).
    pub(crate) from: &'a mut Dialog,
    /// Unique within the calling dialog (the tool call's id): names the child's dialog, so a
    /// resumed run finds the same child in its journal.
    pub(crate) key: &'a str,
}

impl Agent {
    /// Starts the subagent `subagent` of this agent on `instructions`, beside dialog `alias`: a
    /// `fork` subagent's dialog is an O(1) fork of `alias` as it is now, an `isolated` one's a new
    /// dialog with the instructions only. The task runs on the Tokio runtime until it answers (or
    /// is cancelled through its handle); it counts against the run's limits like any dialog.
    pub fn spawn(
        &self,
        alias: &str,
        subagent: &str,
        instructions: impl Into<String>,
    ) -> Result<TaskHandle, AgentError> {
        let fail = |problem: String| self.error(Some(alias), AgentErrorKind::Task(problem));
        let subagents = self
            .subagents
            .as_ref()
            .ok_or_else(|| fail(format!("the agent has no subagents, so no `{subagent}`")))?;
        let spec = subagents
            .spec(subagent)
            .ok_or_else(|| fail(format!("the agent has no subagent `{subagent}`")))?;
        let mut from = self.dialog(alias)?;
        let key = format!("spawn-{}", lllm_core::DialogId::new());
        let start = Start {
            subagent: spec,
            instructions: instructions.into(),
            from: &mut from,
            key: &key,
        };
        self.start_task(start).map_err(fail)
    }

    /// Starts a task: reserves its id (within `max_background_tasks`), makes its dialog in the
    /// agent that answers it, records it, and runs it.
    pub(crate) fn start_task(&self, start: Start<'_>) -> Result<TaskHandle, String> {
        let subagents = self
            .subagents
            .as_ref()
            .ok_or("the agent has no subagents")?;
        tokio::runtime::Handle::try_current()
            .map_err(|_| "a task runs on a Tokio runtime, and none is running".to_owned())?;
        let sub = start.subagent;
        let child = subagents.child(sub.agent(), &self.run)?;
        let registry = self.run.tasks.clone();
        let limit = sub.background().then_some(subagents.max_background);
        let id = registry.reserve(&self.name, limit)?;
        let parent = start.from.id();
        let alias = format!("task:{parent}:{}", start.key);
        let dialog = match sub.mode() {
            SubagentMode::Fork => start.from.fork(),
            SubagentMode::Isolated => {
                let system = child
                    .system_text(&PromptVars::new())
                    .map_err(|e| lllm_core::full_message(&e))?;
                Dialog::with_system(system)
            }
        };
        let dialog_id = child
            .insert(&alias, dialog)
            .map_err(|e| lllm_core::full_message(&e))?;
        if let Some(trace) = &self.run.trace {
            // An isolated child shares no prefix, but the trace still records who started it.
            trace.forked(parent, dialog_id);
        }
        let (state, _) = tokio::sync::watch::channel(TaskState::Running);
        registry.insert(Entry {
            id: id.clone(),
            subagent: sub.name().to_owned(),
            parent_agent: self.name.clone(),
            background: sub.background(),
            inbox: Vec::new(),
            state,
            abort: None,
        });
        self.notify_started(&id, sub, parent, dialog_id);
        let run = run_task(
            child,
            alias,
            id.clone(),
            start.instructions,
            self.run.clone(),
        );
        let abort = tokio::spawn(run).abort_handle();
        registry.with(&id, |entry| {
            if entry.state.borrow().is_running() {
                entry.abort = Some(abort);
            }
        });
        Ok(TaskHandle { id, registry })
    }

    fn notify_started(&self, id: &str, sub: &SubagentSpec, parent: DialogId, dialog: DialogId) {
        if let Some(observer) = &self.run.observer {
            observer.notify(&RunEvent::TaskStarted {
                task: id.to_owned(),
                subagent: sub.name().to_owned(),
                agent: sub.agent().to_owned(),
                parent_agent: self.name.clone(),
                parent_dialog: parent,
                dialog,
                mode: sub.mode(),
                background: sub.background(),
            });
        }
    }
}

/// Answers the task's dialog: the instructions, then each message sent to it meanwhile; its last
/// answer (or failure) is its end. The dialog is closed then: the answer is in the registry.
async fn run_task(
    child: Arc<Agent>,
    alias: String,
    id: String,
    instructions: String,
    run: crate::RunContext,
) {
    let mut ended = Ended {
        observer: run.observer.clone(),
        task: id.clone(),
        agent: child.name.clone(),
        outcome: StepOutcome::Cancelled,
    };
    let mut text = instructions;
    let end = loop {
        let end = match child.respond_to(&alias).message(text).await {
            Ok(answer) => TaskState::Finished(answer.text().to_owned()),
            Err(error) => TaskState::Failed(lllm_core::full_message(&error)),
        };
        match run.tasks.next_message_or_end(&id, end.clone()) {
            Some(next) => text = next,
            None => break end,
        }
    };
    let _ = child.close(&alias);
    ended.outcome = match end {
        TaskState::Finished(_) => StepOutcome::Finished,
        _ => StepOutcome::Failed,
    };
}

/// Tells the run's observer that a task ended, however it ends: answered, failed, or dropped when
/// cancelled (then `cancelled`).
struct Ended {
    observer: Option<crate::events::RunObserver>,
    task: String,
    agent: String,
    outcome: StepOutcome,
}

impl Drop for Ended {
    fn drop(&mut self) {
        if let Some(observer) = &self.observer {
            observer.notify(&RunEvent::TaskEnded {
                task: std::mem::take(&mut self.task),
                agent: std::mem::take(&mut self.agent),
                outcome: self.outcome,
            });
        }
    }
}
