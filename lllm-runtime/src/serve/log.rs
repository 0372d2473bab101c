//! What the console knows of a run: its dialogs as a tree (agent, alias, fork parent, session),
//! each dialog's model calls as the serving side saw them, the tool calls with their results, and
//! the tasks (background subagents) with where each is, folded from the run's events as they happen. Everything is bounded: a run that makes a million
//! calls keeps its totals exact and its latest entries.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lllm_core::Usage;
use serde_json::{json, Value};
use tokio::sync::watch;

use super::task_log::TaskLog;
use crate::events::{cut, ModelCall, RunEvent, RunObserver, MAX_LABEL};
use crate::tools::{Confirm, ConfirmRequest, Decision, Decisions, ElicitRequest, Elicited};

/// Dialogs kept per run; calls of later dialogs count in the totals only.
const MAX_DIALOGS: usize = 1_000;
/// Model calls kept per run (the latest, over all its dialogs).
const MAX_CALLS: usize = 5_000;
/// Tool calls kept per run (the latest).
const MAX_TOOL_CALLS: usize = 2_000;
/// The longest tool argument or result text kept, in characters.
pub(crate) const MAX_TOOL_TEXT: usize = 2_000;

/// Tells whoever watches the server's runs that one of them changed.
#[derive(Debug, Clone)]
pub(crate) struct Changes(Arc<watch::Sender<u64>>);

impl Default for Changes {
    fn default() -> Self {
        Changes(Arc::new(watch::channel(0).0))
    }
}

impl Changes {
    /// Something changed.
    pub(crate) fn bump(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that wakes on every change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// Token counts of a run's model calls.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Totals {
    pub(crate) calls: u64,
    usage: Usage,
}

impl Totals {
    fn add(&mut self, call: &ModelCall) {
        self.calls += 1;
        if let Some(usage) = &call.usage {
            self.usage.add(usage);
        }
    }

    /// The `usage` object of a run.
    pub(crate) fn to_json(self) -> Value {
        json!({
            "calls": self.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cached_tokens": self.usage.cached_tokens.unwrap_or(0),
        })
    }
}

/// One run's log, shared by its record and its runs' observers (a run continued after an approval
/// adds to the same log).
#[derive(Debug)]
pub(crate) struct RunLog {
    folded: Mutex<Folded>,
    revision: AtomicU64,
    changes: Changes,
    /// The question the run waits on (a tool's elicitation), answered by an approval.
    pub(crate) questions: super::questions::Questions,
}

#[derive(Debug, Default)]
struct Folded {
    dialogs: Vec<DialogEntry>,
    by_id: HashMap<String, usize>,
    tools: VecDeque<ToolEntry>,
    totals: Totals,
    /// Where each tool asked about comes from, by agent and call id (for the pending calls).
    sources: HashMap<(String, String), String>,
    /// The dialog of each call kept, oldest first: the oldest goes when a run keeps too many.
    kept_calls: VecDeque<usize>,
    tasks: TaskLog,
}

#[derive(Debug)]
struct DialogEntry {
    id: String,
    parent: Option<String>,
    agent: String,
    alias: Option<String>,
    session: Option<String>,
    parent_session: Option<String>,
    calls: VecDeque<Value>,
    totals: Totals,
}

#[derive(Debug)]
struct ToolEntry {
    id: String,
    agent: String,
    tool: String,
    arguments: String,
    result: Option<(String, bool)>,
}

impl RunLog {
    /// An empty log whose changes `changes` hears of.
    pub(crate) fn new(changes: Changes) -> Arc<Self> {
        Arc::new(RunLog {
            folded: Mutex::default(),
            revision: AtomicU64::new(0),
            changes,
            questions: Default::default(),
        })
    }

    /// An observer folding a run's events into this log.
    pub(crate) fn observer(self: &Arc<Self>) -> RunObserver {
        let log = self.clone();
        RunObserver::new(move |event| log.fold(event))
    }

    /// How many times the run changed (its status, its calls, its tools).
    pub(crate) fn revision(&self) -> u64 {
        self.revision.load(Ordering::Relaxed)
    }

    /// The run changed in a way its log does not show (its status).
    pub(crate) fn touch(&self) {
        self.revision.fetch_add(1, Ordering::Relaxed);
        self.changes.bump();
    }

    /// Where the tool of `agent`'s call `id` comes from, when it was asked about.
    pub(crate) fn source(&self, agent: Option<&str>, id: &str) -> Option<String> {
        let key = (agent.unwrap_or_default().to_owned(), id.to_owned());
        self.lock().sources.get(&key).cloned()
    }

    /// `decisions`, noting where each tool asked about comes from (the pending calls show it).
    pub(crate) fn confirm(self: &Arc<Self>, decisions: Decisions) -> Arc<dyn Confirm> {
        Arc::new(Noting {
            decisions,
            log: self.clone(),
        })
    }

    /// The run's token counts.
    pub(crate) fn totals(&self) -> Totals {
        self.lock().totals
    }

    /// How many tasks the run started, and how many of them still run.
    pub(crate) fn task_counts(&self) -> (usize, usize) {
        self.lock().tasks.counts()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Folded> {
        self.folded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes in one event; answer text, steps and compactions change nothing shown here.
    pub(crate) fn fold(&self, event: &RunEvent) {
        {
            let mut folded = self.lock();
            match event {
                RunEvent::ModelCall(call) => folded.call(call),
                RunEvent::ToolCall { agent, call } => folded.tool_call(ToolEntry {
                    id: cut(&call.id, MAX_LABEL),
                    agent: cut(agent, MAX_LABEL),
                    tool: cut(&call.name, MAX_LABEL),
                    arguments: cut(&call.arguments, MAX_TOOL_TEXT),
                    result: None,
                }),
                RunEvent::ToolResult {
                    agent,
                    call_id,
                    tool,
                    content,
                    is_error,
                } => folded.tool_result(agent, call_id, tool, content, *is_error),
                other => {
                    if !folded.tasks.fold(other) {
                        return;
                    }
                }
            }
        }
        self.touch();
    }

    /// The console's view of the run: `{"dialogs": [...], "tool_calls": [...], "tasks": [...],
    /// "usage": {...}}`.
    pub(crate) fn to_json(&self) -> Value {
        let folded = self.lock();
        let dialogs: Vec<Value> = folded.dialogs.iter().map(DialogEntry::to_json).collect();
        let tools: Vec<Value> = folded.tools.iter().map(ToolEntry::to_json).collect();
        json!({
            "revision": self.revision(),
            "dialogs": dialogs,
            "tool_calls": tools,
            "tasks": folded.tasks.to_json(),
            "usage": folded.totals.to_json(),
        })
    }
}

/// The confirmations of a served run: its decisions, each tool's source noted.
#[derive(Debug)]
struct Noting {
    decisions: Decisions,
    log: Arc<RunLog>,
}

#[async_trait::async_trait]
impl Confirm for Noting {
    async fn confirm(&self, request: ConfirmRequest<'_>) -> Decision {
        {
            let mut folded = self.log.lock();
            if folded.sources.len() >= MAX_TOOL_CALLS {
                // A run that asked this often keeps the latest sources: pending calls are recent.
                folded.sources.clear();
            }
            folded.sources.insert(
                (request.agent.to_owned(), request.call_id.to_owned()),
                cut(request.source, MAX_LABEL),
            );
        }
        self.decisions.confirm(request).await
    }

    async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        self.log.questions.ask(&request, &|| self.log.touch()).await
    }
}

impl Folded {
    fn call(&mut self, call: &ModelCall) {
        self.totals.add(call);
        let id = call.dialog.map(|d| d.to_string()).unwrap_or_default();
        let index = match self.by_id.get(&id) {
            Some(&index) => index,
            None if self.dialogs.len() < MAX_DIALOGS => {
                self.dialogs.push(DialogEntry::of(&id, call));
                self.by_id.insert(id, self.dialogs.len() - 1);
                self.dialogs.len() - 1
            }
            None => return,
        };
        let dialog = &mut self.dialogs[index];
        dialog.totals.add(call);
        if dialog.alias.is_none() {
            dialog.alias = call.alias.as_deref().map(|a| cut(a, MAX_LABEL));
        }
        // Kept as its JSON, whose labels are cut: a hostile label is not kept whole 5,000 times.
        dialog
            .calls
            .push_back(serde_json::to_value(call).unwrap_or_default());
        self.kept_calls.push_back(index);
        if self.kept_calls.len() > MAX_CALLS {
            if let Some(oldest) = self.kept_calls.pop_front() {
                self.dialogs[oldest].calls.pop_front();
            }
        }
    }

    fn tool_call(&mut self, entry: ToolEntry) {
        // A run continued from its journal tells its earlier calls again: one entry per call (an
        // id is unique among one agent's calls of one dialog; events name the agent).
        if self
            .tools
            .iter()
            .any(|t| t.id == entry.id && t.agent == entry.agent)
        {
            return;
        }
        self.tools.push_back(entry);
        if self.tools.len() > MAX_TOOL_CALLS {
            self.tools.pop_front();
        }
    }

    fn tool_result(&mut self, agent: &str, id: &str, tool: &str, content: &str, is_error: bool) {
        let (id, agent) = (cut(id, MAX_LABEL), cut(agent, MAX_LABEL));
        let same = |t: &ToolEntry| t.id == id && t.agent == agent;
        if !self.tools.iter().any(same) {
            self.tool_call(ToolEntry {
                id: id.clone(),
                agent: agent.clone(),
                tool: cut(tool, MAX_LABEL),
                arguments: String::new(),
                result: None,
            });
        }
        if let Some(entry) = self.tools.iter_mut().rev().find(|t| same(t)) {
            entry.result = Some((cut(content, MAX_TOOL_TEXT), is_error));
        }
    }
}

impl DialogEntry {
    fn of(id: &str, call: &ModelCall) -> Self {
        let label = |s: &Option<String>| s.as_deref().map(|s| cut(s, MAX_LABEL));
        DialogEntry {
            id: id.to_owned(),
            parent: call.parent_dialog.map(|d| d.to_string()),
            agent: cut(&call.agent, MAX_LABEL),
            alias: label(&call.alias),
            session: label(&call.session),
            parent_session: label(&call.parent_session),
            calls: VecDeque::new(),
            totals: Totals::default(),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "parent": self.parent,
            "agent": self.agent,
            "alias": self.alias,
            "session_id": self.session,
            "parent_session_id": self.parent_session,
            "usage": self.totals.to_json(),
            "calls": self.calls,
        })
    }
}

impl ToolEntry {
    fn to_json(&self) -> Value {
        let (result, is_error) = match &self.result {
            Some((text, error)) => (Some(text.as_str()), Some(*error)),
            None => (None, None),
        };
        json!({
            "id": self.id,
            "agent": self.agent,
            "tool": self.tool,
            "arguments": self.arguments,
            "result": result,
            "is_error": is_error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lllm_core::ToolCall;
    use std::time::Duration;

    fn model_call(
        agent: &str,
        dialog: lllm_core::DialogId,
        parent: Option<lllm_core::DialogId>,
    ) -> RunEvent {
        RunEvent::ModelCall(Box::new(ModelCall {
            agent: agent.into(),
            alias: Some("main".into()),
            dialog: Some(dialog),
            parent_dialog: parent,
            session: Some(format!("s-{dialog}")),
            parent_session: parent.map(|p| format!("s-{p}")),
            priority: Some(5),
            tier: 1,
            usage: Some(lllm_core::Usage {
                prompt_tokens: 100,
                completion_tokens: 10,
                cached_tokens: Some(60),
            }),
            worker: Some("w1".into()),
            hop: 0,
            window: 0,
            queue_wait: Duration::from_millis(3),
            took: Duration::from_millis(40),
            at: std::time::SystemTime::now(),
        }))
    }

    #[test]
    fn calls_fold_into_a_tree_of_dialogs_with_exact_totals() {
        let log = RunLog::new(Changes::default());
        let root = lllm_core::DialogId::new();
        let fork = lllm_core::DialogId::new();
        log.fold(&model_call("a", root, None));
        log.fold(&model_call("b", fork, Some(root)));
        log.fold(&model_call("b", fork, Some(root)));
        let view = log.to_json();
        let dialogs = view["dialogs"].as_array().expect("dialogs");
        assert_eq!(dialogs.len(), 2);
        assert_eq!(dialogs[1]["parent"], root.to_string());
        assert_eq!(dialogs[1]["session_id"], format!("s-{fork}"));
        assert_eq!(dialogs[1]["calls"].as_array().map(Vec::len), Some(2));
        assert_eq!(view["usage"]["cached_tokens"], 180);
        assert_eq!(log.revision(), 3);
    }

    #[test]
    fn a_call_told_again_after_a_resume_is_one_entry_and_long_text_is_cut() {
        let log = RunLog::new(Changes::default());
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "x".repeat(MAX_TOOL_TEXT + 5),
        };
        for _ in 0..2 {
            log.fold(&RunEvent::ToolCall {
                agent: "a".into(),
                call: call.clone(),
            });
        }
        log.fold(&RunEvent::ToolResult {
            agent: "a".into(),
            call_id: "c1".into(),
            tool: "t".into(),
            content: "done".into(),
            is_error: false,
        });
        let tools = log.to_json()["tool_calls"].clone();
        assert_eq!(tools.as_array().map(Vec::len), Some(1));
        assert_eq!(tools[0]["result"], "done");
        assert!(tools[0]["arguments"]
            .as_str()
            .is_some_and(|a| a.ends_with("… (5 more characters)")));
    }

    #[test]
    fn the_calls_kept_are_the_latest_and_the_same_id_of_two_agents_is_two_calls() {
        let log = RunLog::new(Changes::default());
        let dialog = lllm_core::DialogId::new();
        for _ in 0..MAX_CALLS + 3 {
            log.fold(&model_call("a", dialog, None));
        }
        let view = log.to_json();
        assert_eq!(
            view["dialogs"][0]["calls"].as_array().map(Vec::len),
            Some(MAX_CALLS)
        );
        assert_eq!(view["usage"]["calls"], MAX_CALLS as u64 + 3);
        let call = ToolCall {
            id: "call_0".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        for agent in ["a", "b"] {
            log.fold(&RunEvent::ToolCall {
                agent: agent.into(),
                call: call.clone(),
            });
        }
        assert_eq!(
            log.to_json()["tool_calls"].as_array().map(Vec::len),
            Some(2)
        );
    }

    #[test]
    fn task_events_are_listed_and_change_the_revision() {
        let log = RunLog::new(Changes::default());
        let (lead, child) = (lllm_core::DialogId::new(), lllm_core::DialogId::new());
        log.fold(&RunEvent::TaskStarted {
            task: "t1".into(),
            subagent: "researcher".into(),
            agent: "lead".into(),
            parent_agent: "lead".into(),
            parent_dialog: lead,
            dialog: child,
            mode: lllm_core::SubagentMode::Fork,
            background: true,
        });
        assert_eq!((log.revision(), log.task_counts()), (1, (1, 1)));
        log.fold(&RunEvent::TaskEnded {
            task: "t1".into(),
            agent: "lead".into(),
            outcome: crate::events::StepOutcome::Finished,
        });
        let view = log.to_json();
        assert_eq!(view["tasks"][0]["dialog"], child.to_string());
        assert_eq!(view["tasks"][0]["status"], "finished");
        assert_eq!((log.revision(), log.task_counts()), (2, (1, 0)));
    }

    #[test]
    fn the_dialogs_kept_are_bounded_but_the_totals_are_not() {
        let log = RunLog::new(Changes::default());
        for _ in 0..MAX_DIALOGS + 10 {
            log.fold(&model_call("a", lllm_core::DialogId::new(), None));
        }
        let view = log.to_json();
        assert_eq!(view["dialogs"].as_array().map(Vec::len), Some(MAX_DIALOGS));
        assert_eq!(view["usage"]["calls"], MAX_DIALOGS as u64 + 10);
    }
}
