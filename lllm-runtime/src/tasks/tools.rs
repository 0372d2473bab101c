//! The task tools an agent with subagents is offered: `task_start`, `task_check`, `task_message`,
//! `task_cancel`, `task_list`. Known to the toolbox by their specs (so the model sees them and its
//! arguments are checked against their schemas); the respond loop answers their calls itself,
//! because a call needs the calling dialog (a `fork` child begins where its parent last was).

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::{SubagentSpec, ToolSpec};
use serde_json::{json, Value};

use crate::tools::{Tool, ToolError, ToolOutput};

/// One task tool, known by its spec only.
#[derive(Debug)]
pub(crate) struct TaskTool {
    spec: ToolSpec,
}

#[async_trait]
impl Tool for TaskTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Never reached through an agent (its respond answers task calls); called directly, it says
    /// so.
    async fn call(&self, _arguments: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(format!(
            "not run: `{}` is answered by the agent's respond, which knows the calling dialog",
            self.spec.name
        )))
    }

    fn source(&self) -> String {
        "subagents".to_owned()
    }
}

/// The five task tools for an agent with these subagents.
pub(crate) fn task_tools(subagents: &[SubagentSpec]) -> Vec<Arc<dyn Tool>> {
    let list: Vec<String> = subagents
        .iter()
        .map(|s| {
            let how = if s.background() {
                "runs in the background: task_start returns a task id at once"
            } else {
                "task_start waits for its answer"
            };
            match s.description() {
                Some(d) => format!("`{}` ({how}): {d}", s.name()),
                None => format!("`{}` ({how})", s.name()),
            }
        })
        .collect();
    let names: Vec<&str> = subagents.iter().map(SubagentSpec::name).collect();
    let task_id = json!({"type": "string", "description": "A task id that task_start returned, such as `t1`."});
    let specs = [
        ("task_start", format!("Start a subagent on a task. Subagents: {}. Background tasks run while you go on; check them with task_check. If you answer while tasks still run, you get their answers in one more turn.", list.join("; ")),
         json!({"type": "object", "properties": {
             "subagent": {"type": "string", "enum": names, "description": "Which subagent does the task."},
             "instructions": {"type": "string", "minLength": 1, "maxLength": MAX_INSTRUCTION_CHARS, "description": "What the subagent must do, complete on its own."}},
             "required": ["subagent", "instructions"], "additionalProperties": false})),
        ("task_check", "See whether a task finished, and its answer when it did; without task_id, every task.".to_owned(),
         json!({"type": "object", "properties": {"task_id": task_id}, "additionalProperties": false})),
        ("task_message", "Send a running task another message; it answers it after its current work.".to_owned(),
         json!({"type": "object", "properties": {"task_id": task_id, "text": {"type": "string", "minLength": 1, "maxLength": MAX_INSTRUCTION_CHARS}},
             "required": ["task_id", "text"], "additionalProperties": false})),
        ("task_cancel", "Stop a running task; its answer is not waited for.".to_owned(),
         json!({"type": "object", "properties": {"task_id": task_id}, "required": ["task_id"], "additionalProperties": false})),
        ("task_list", "List the tasks started so far and where each is.".to_owned(),
         json!({"type": "object", "properties": {}, "additionalProperties": false})),
    ];
    specs
        .into_iter()
        .map(|(name, description, parameters)| {
            Arc::new(TaskTool {
                spec: ToolSpec {
                    name: name.to_owned(),
                    description,
                    parameters,
                },
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// Most characters of a task's instructions or message.
pub(crate) const MAX_INSTRUCTION_CHARS: usize = 100_000;

/// Whether `name` is one of the task tools.
pub(crate) fn is_task_tool(name: &str) -> bool {
    lllm_core::TASK_TOOL_NAMES.contains(&name)
}
