//! Agents: a model, a system prompt, hints, and the dialogs the agent owns.
#![doc = include_str!("../../../docs/context.md")]

mod answer;
mod builder;
mod compact;
mod demand;
mod error;
mod request;
mod respond;
mod roster;
mod sample;
mod skill_reload;
mod spawn;
mod task_calls;
mod tool_round;
mod tools_now;
mod turn;

#[cfg(test)]
mod tests;

pub mod tasks {
    //! Background subagents: tasks an agent's model starts with `task_start` (or Rust code with
    //! [`Agent::spawn`](crate::Agent::spawn)), each a dialog of its own answered beside its parent.
    #![doc = include_str!("../../../docs/subagents.md")]
    pub use crate::tasks::{SubagentMode, SubagentSpec, TaskHandle, TaskState};
}

use std::sync::{Arc, Mutex, MutexGuard};

use lllm_core::{
    CarriedHints, Dialog, DialogId, InferenceHints, Message, ModelArgs, Prompt, PromptVars,
    RunClass,
};

use answer::OutputSchema;
pub use builder::{AgentBuilder, PromptArg};
pub use compact::{ContextStats, Summarizer, SUMMARY_HEADING, SUMMARY_INSTRUCTION};
pub use demand::DemandSource;
pub use error::{AgentError, AgentErrorKind};
pub use respond::{EventSink, Respond, RespondStructured, StreamEvent};
pub(crate) use roster::{Recipe, Roster};

// The namespace's names defined elsewhere.
pub use crate::retry::RetryPolicy;
pub use lllm_core::{DialogTree, MessageLog, NamedDialog, Role, Usage};

use crate::endpoints::{CallCounter, CallStats};
use crate::events::RunEvent;
use crate::layers::Stack;
use crate::run_context::RunContext;
use crate::tools::calls::ToolPipeline;
use crate::tools::Toolbox;

/// An agent: it owns named dialogs (aliases such as `main`), answers them with its model, and sends the
/// dialog's identity as inference hints with every call.
///
/// The verbs: [`open`](Self::open) a dialog, [`receive`](Self::receive) a message,
/// [`respond`](Self::respond) (or [`respond_to`](Self::respond_to) with options), [`fork`](Self::fork)
/// a dialog, [`close`](Self::close) it.
///
/// Every method takes `&self`, so one agent can answer several of its dialogs at once (for example from
/// `futures::join!`); two responds on the same dialog at once are refused.
#[derive(Debug)]
pub struct Agent {
    name: String,
    system_prompt: Prompt,
    model: String,
    /// The invoker inside its budget, journal, retry, trace and timeout layers.
    invoker: Stack,
    /// The retry settings of that stack.
    retry: RetryPolicy,
    /// What every tool call goes through: the halt, the budget, the journal, the confirmation.
    tool_calls: ToolPipeline,
    model_args: Arc<ModelArgs>,
    hints: Option<InferenceHints>,
    /// What its run shares with its other agents. Besides its layers and tool calls, the agent reads
    /// the class its requests rank in when a respond says nothing else, the journal (which gives a
    /// resumed run's dialogs back their ids), the trace (told about forks), the observer (the tool
    /// calls and results, and the answers' text when a respond streams) and the caller's
    /// conversation (which names its root dialogs).
    run: RunContext,
    /// `hints` as each endpoint of `model_args.fallback` carries them, in order (empty without
    /// hints).
    fallback_hints: Vec<CarriedHints>,
    /// Its tools; replaced between requests when a server's list changed.
    toolbox: std::sync::RwLock<Arc<Toolbox>>,
    /// When and how its dialogs' windows are compacted (`context:`).
    compaction: Option<compact::Compaction>,
    output_schema: Option<OutputSchema>,
    max_tool_rounds: u32,
    max_answer_retries: u32,
    /// Tool calls of one answer run at the same time (`max_parallel_tools`).
    max_parallel_tools: usize,
    /// Which endpoints answered its calls, the fallbacks taken and the waits for a slot.
    calls: Arc<CallCounter>,
    usage: Mutex<Usage>,
    table: Mutex<DialogTable>,
    /// The subagents its model may start as tasks (`subagents:`), with the agents that answer them.
    subagents: Option<roster::Subagents>,
    /// Its skills, when it has any: their index ends every system prompt, and a loaded one's
    /// `allowed-tools` holds its calls.
    skills: Option<Arc<crate::tools::skills::SkillSet>>,
}

/// The agent's dialogs in the order they were opened, and which one is active.
#[derive(Debug, Default)]
struct DialogTable {
    slots: Vec<Slot>,
    active: Option<String>,
}

#[derive(Debug)]
struct Slot {
    alias: String,
    dialog: Dialog,
    busy: bool,
}

impl DialogTable {
    fn aliases(&self) -> Vec<String> {
        self.slots.iter().map(|s| s.alias.clone()).collect()
    }

    fn position(&self, alias: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.alias == alias)
    }
}

impl Agent {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configured model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The model arguments.
    pub fn model_args(&self) -> &ModelArgs {
        &self.model_args
    }

    /// The inference hints, when configured.
    pub fn inference_hints(&self) -> Option<&InferenceHints> {
        self.hints.as_ref()
    }

    /// How the agent's requests rank under `priority: auto` (default interactive).
    pub fn run_class(&self) -> RunClass {
        self.run.class
    }

    /// The retry settings.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// An error about this agent and, when given, the dialog `alias`.
    fn error(&self, alias: Option<&str>, kind: AgentErrorKind) -> AgentError {
        AgentError::new(&self.name, alias, kind)
    }

    fn table(&self) -> MutexGuard<'_, DialogTable> {
        // A panic while the lock was held cannot leave the table half-updated: every update is one
        // assignment or push. So a poisoned lock is still safe to use.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn unknown(&self, table: &DialogTable, alias: &str) -> AgentError {
        let known = table.aliases();
        self.error(Some(alias), AgentErrorKind::UnknownDialog { known })
    }

    fn active_alias_in(&self, table: &DialogTable) -> Result<String, AgentError> {
        table
            .active
            .clone()
            .ok_or_else(|| self.error(None, AgentErrorKind::NoActiveDialog))
    }

    /// Opens a root dialog `alias` whose first message is the system prompt, and makes it active.
    pub fn open(&self, alias: &str) -> Result<DialogId, AgentError> {
        self.open_with(alias, &PromptVars::new())
    }

    /// Like [`open`](Self::open), rendering the system prompt with `vars`.
    pub fn open_with(&self, alias: &str, vars: &PromptVars) -> Result<DialogId, AgentError> {
        let system = self
            .system_text(vars)
            .map_err(|e| self.error(Some(alias), AgentErrorKind::Prompt(e)))?;
        let mut dialog = Dialog::with_system(system);
        if let Some(conversation) = &self.run.conversation {
            let claim = conversation.claim(&self.name, alias);
            dialog = dialog
                .with_session(claim.session)
                .in_conversation(conversation.id());
            if let Some(parent) = claim.parent {
                dialog = dialog.with_parent_session(parent);
            }
            for message in claim.seed {
                dialog.push(message.clone());
            }
        }
        self.insert(alias, dialog)
    }

    /// The system prompt rendered with `vars`, followed by the skills' index (fixed for the run:
    /// loading a skill never changes it).
    fn system_text(&self, vars: &PromptVars) -> Result<String, lllm_core::PromptError> {
        let mut system = self.system_prompt.render(vars)?;
        if let Some(skills) = &self.skills {
            system.push_str(&skills.index());
        }
        Ok(system)
    }

    fn insert(&self, alias: &str, dialog: Dialog) -> Result<DialogId, AgentError> {
        let dialog = match &self.run.journal {
            Some(journal) => {
                if self.has_dialog(alias) {
                    return Err(self.error(Some(alias), AgentErrorKind::AliasTaken));
                }
                let id = journal
                    .dialog_id(&self.name, alias, dialog.id())
                    .map_err(|e| self.error(Some(alias), AgentErrorKind::Journal(e)))?;
                dialog.with_id(id)
            }
            None => dialog,
        };
        let mut table = self.table();
        if table.position(alias).is_some() {
            return Err(self.error(Some(alias), AgentErrorKind::AliasTaken));
        }
        let id = dialog.id();
        table.slots.push(Slot {
            alias: alias.to_owned(),
            dialog,
            busy: false,
        });
        table.active = Some(alias.to_owned());
        Ok(id)
    }

    /// Appends a user message to the active dialog.
    pub fn receive(&self, text: impl Into<String>) -> Result<(), AgentError> {
        let mut table = self.table();
        let alias = self.active_alias_in(&table)?;
        self.push_in(&mut table, &alias, Message::user(text))
    }

    /// Appends a user message to dialog `alias`.
    pub fn receive_in(&self, alias: &str, text: impl Into<String>) -> Result<(), AgentError> {
        let mut table = self.table();
        self.push_in(&mut table, alias, Message::user(text))
    }

    fn push_in(
        &self,
        table: &mut DialogTable,
        alias: &str,
        message: Message,
    ) -> Result<(), AgentError> {
        let index = table
            .position(alias)
            .ok_or_else(|| self.unknown(table, alias))?;
        let slot = &mut table.slots[index];
        // A message received while an answer is on the way would land before that answer.
        if slot.busy {
            return Err(self.error(Some(alias), AgentErrorKind::DialogBusy));
        }
        slot.dialog.push(message);
        Ok(())
    }

    /// Creates `child` as a fork of `parent` (sharing its messages, naming it as parent) and makes the
    /// child active. O(1) in the parent's length.
    pub fn fork(&self, parent: &str, child: &str) -> Result<DialogId, AgentError> {
        let (parent_id, forked) = {
            let mut table = self.table();
            let index = table
                .position(parent)
                .ok_or_else(|| self.unknown(&table, parent))?;
            let dialog = &mut table.slots[index].dialog;
            (dialog.id(), dialog.fork())
        };
        let child_id = self.insert(child, forked)?;
        if let Some(trace) = &self.run.trace {
            trace.forked(parent_id, child_id);
        }
        Ok(child_id)
    }

    /// Closes dialog `alias` and returns it. Nothing is sent to the server (see [`finish`](Self::finish)).
    pub fn close(&self, alias: &str) -> Result<Dialog, AgentError> {
        let mut table = self.table();
        let index = table
            .position(alias)
            .ok_or_else(|| self.unknown(&table, alias))?;
        let slot = table.slots.remove(index);
        if table.active.as_deref() == Some(alias) {
            table.active = None;
        }
        Ok(slot.dialog)
    }

    /// Makes dialog `alias` the active one.
    pub fn switch(&self, alias: &str) -> Result<(), AgentError> {
        let mut table = self.table();
        if table.position(alias).is_none() {
            return Err(self.unknown(&table, alias));
        }
        table.active = Some(alias.to_owned());
        Ok(())
    }

    /// The alias of the active dialog.
    pub fn active(&self) -> Option<String> {
        self.table().active.clone()
    }

    /// Whether a dialog `alias` is open.
    pub fn has_dialog(&self, alias: &str) -> bool {
        self.table().position(alias).is_some()
    }

    /// The aliases of the open dialogs, in the order they were opened.
    pub fn aliases(&self) -> Vec<String> {
        self.table().aliases()
    }

    /// A copy of dialog `alias` that shares its messages (O(1)).
    pub fn dialog(&self, alias: &str) -> Result<Dialog, AgentError> {
        let mut table = self.table();
        let index = table
            .position(alias)
            .ok_or_else(|| self.unknown(&table, alias))?;
        Ok(table.slots[index].dialog.snapshot())
    }

    /// The id of dialog `alias`.
    pub fn dialog_id(&self, alias: &str) -> Result<DialogId, AgentError> {
        let table = self.table();
        table
            .position(alias)
            .map(|i| table.slots[i].dialog.id())
            .ok_or_else(|| self.unknown(&table, alias))
    }

    /// Every open dialog with its alias, and the active alias: serialisable with serde.
    pub fn dialogs(&self) -> DialogTree {
        let mut table = self.table();
        let active = table.active.clone();
        DialogTree {
            dialogs: table
                .slots
                .iter_mut()
                .map(|s| NamedDialog {
                    alias: s.alias.clone(),
                    dialog: s.dialog.snapshot(),
                })
                .collect(),
            active,
        }
    }

    /// Replaces the agent's dialogs with a saved tree (ids and lineage are kept).
    pub fn restore(&self, tree: DialogTree) -> Result<(), AgentError> {
        let mut table = self.table();
        if let Some(busy) = table.slots.iter().find(|s| s.busy) {
            return Err(self.error(Some(&busy.alias), AgentErrorKind::DialogBusy));
        }
        table.slots = tree
            .dialogs
            .into_iter()
            .map(|d| Slot {
                alias: d.alias,
                dialog: d.dialog,
                busy: false,
            })
            .collect();
        table.active = tree.active.filter(|a| table.position(a).is_some());
        Ok(())
    }

    /// Which endpoints answered the agent's calls, the fallbacks taken and the time its requests
    /// waited for a slot (`max_in_flight`).
    pub fn call_stats(&self) -> CallStats {
        self.calls.snapshot()
    }

    /// What the agent's context compactions did (all zero without `context:`).
    pub fn context_stats(&self) -> ContextStats {
        self.compaction
            .as_ref()
            .map(compact::Compaction::stats)
            .unwrap_or_default()
    }

    /// Tells the run's observer that a window of `alias` was compacted.
    fn observe_compaction(&self, alias: &str, tokens_before: u64) {
        if let Some(observer) = &self.run.observer {
            observer.notify(&RunEvent::Compacted {
                agent: self.name.clone(),
                dialog: alias.to_owned(),
                tokens_before,
            });
        }
    }

    /// Token usage of every model call this agent made: every dialog (closed ones too), tool rounds,
    /// rejected structured answers, and `finish`. A dialog's own share is [`Dialog::usage`].
    pub fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add_usage(&self, usage: &Usage) {
        self.usage
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(usage);
    }

    /// Tells the run's observer, if any, what a respond shows (reasoning is not reported).
    fn observe(&self, event: StreamEvent<'_>) {
        let Some(observer) = &self.run.observer else {
            return;
        };
        let agent = self.name.clone();
        let event = match event {
            StreamEvent::Text(text) => RunEvent::Text {
                agent,
                text: text.to_owned(),
            },
            StreamEvent::Reasoning(_) => return,
            StreamEvent::ToolCall(call) => RunEvent::ToolCall {
                agent,
                call: call.clone(),
            },
            StreamEvent::ToolResult {
                call,
                content,
                is_error,
            } => RunEvent::ToolResult {
                agent,
                call_id: call.id.clone(),
                tool: call.name.clone(),
                content: content.to_owned(),
                is_error,
            },
        };
        observer.notify(&event);
    }

    /// Whether every answer must match a JSON Schema.
    pub fn has_output_schema(&self) -> bool {
        self.output_schema.is_some()
    }

    /// What the model is told about the agent's tools.
    pub fn tools(&self) -> Vec<lllm_core::ToolSpec> {
        self.toolbox().specs()
    }
}
