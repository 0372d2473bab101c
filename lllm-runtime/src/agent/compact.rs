//! Context compaction (`context:`): when the last answer's prompt passed `compact_at × window`, the
//! dialog's window is summarised by a request that rides the cached prefix (the window as the last
//! request sent it, its answer, one instruction; the same tools, hints and session;
//! `tool_choice: "none"`), and the respond goes on in a new window: the same system message, the
//! summary, the last messages word for word (a tool call and its results together), and what waits
//! to be answered. The new window is a child of the old dialog and keeps its session by default.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::{
    pair_safe_tail_start, ContextPolicy, Demand, Dialog, Message, MessageLog, Role,
    SessionOnCompaction,
};
use serde_json::json;

use super::{Agent, AgentErrorKind};
use crate::tactic::BoxError;

/// The instruction that ends the summary request.
pub const SUMMARY_INSTRUCTION: &str = "The conversation above is about to be shortened to fit the context window. Write a summary of it for yourself to continue from: the task, what was decided and done, the facts and results that matter (names, numbers, file paths, tool results), and what remains to do. Answer with the summary only; do not call tools.";

/// How a summary starts in the new window.
pub const SUMMARY_HEADING: &str = "Summary of the earlier conversation:\n\n";

/// Writes the summary of a window instead of the model (a hook: a cheaper model, a fixed
/// extract). Given the window's messages as the summary request would send them, before the
/// instruction.
#[async_trait]
pub trait Summarizer: Send + Sync + fmt::Debug {
    /// The summary, or why there is none (the respond goes on in the old window, and the error is
    /// logged with its causes).
    async fn summarize(&self, messages: &[Message]) -> Result<String, BoxError>;
}

/// An agent's compaction: its policy, who summarises, and what it counted.
#[derive(Debug)]
pub(crate) struct Compaction {
    pub(crate) policy: ContextPolicy,
    pub(crate) summarizer: Option<Arc<dyn Summarizer>>,
    pub(crate) stats: std::sync::Mutex<ContextStats>,
    /// Whether the missing usage was reported already.
    warned: AtomicBool,
    /// Asks the server for the window under `window: auto`.
    invoker: Arc<dyn crate::Invoker>,
    /// The threshold in tokens, once known (at once for a window in tokens).
    threshold: tokio::sync::OnceCell<u64>,
}

/// What an agent's compactions did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextStats {
    /// Windows compacted: summary requests sent and new windows started (one whose first request
    /// was still over the threshold counts too, though the respond failed and kept the old window).
    pub compactions: u64,
    /// Prompt tokens of the requests that triggered them, summed.
    pub tokens_before: u64,
    /// Prompt tokens of the first request of each new window, summed.
    pub tokens_after: u64,
}

impl ContextStats {
    /// These counts and `other`'s, added.
    pub fn plus(&self, other: &ContextStats) -> ContextStats {
        ContextStats {
            compactions: self.compactions + other.compactions,
            tokens_before: self.tokens_before + other.tokens_before,
            tokens_after: self.tokens_after + other.tokens_after,
        }
    }
}

impl Compaction {
    pub(crate) fn new(
        policy: ContextPolicy,
        summarizer: Option<Arc<dyn Summarizer>>,
        invoker: Arc<dyn crate::Invoker>,
    ) -> Self {
        Compaction {
            threshold: policy
                .threshold()
                .map_or_else(tokio::sync::OnceCell::new, tokio::sync::OnceCell::from),
            policy,
            summarizer,
            stats: std::sync::Mutex::default(),
            warned: AtomicBool::new(false),
            invoker,
        }
    }

    /// Compactions so far (the reloaded skills' call ids are unique per window).
    fn rounds(&self) -> u64 {
        self.stats().compactions
    }

    pub(crate) fn stats(&self) -> ContextStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self, change: impl FnOnce(&mut ContextStats)) {
        change(&mut self.stats.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// The prompt tokens of the window's last answer, when they passed the threshold. Under
    /// `window: auto` the first answer with usage reads the window from the server; one that does
    /// not report it is an error that says what to set.
    pub(crate) async fn due(
        &self,
        agent: &Agent,
        work: &Dialog,
    ) -> Result<Option<u64>, AgentErrorKind> {
        let last = work
            .messages()
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant);
        let Some(answer) = last else {
            return Ok(None);
        };
        let Some(usage) = &answer.usage else {
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!("context: the server reports no usage, so the window's size is unknown and it is never compacted");
            }
            return Ok(None);
        };
        let threshold = self
            .threshold
            .get_or_try_init(|| self.read_window(agent, work))
            .await?;
        Ok((usage.prompt_tokens > *threshold).then_some(usage.prompt_tokens))
    }

    /// The threshold of `window: auto`, from the server's `/models`.
    async fn read_window(&self, agent: &Agent, work: &Dialog) -> Result<u64, AgentErrorKind> {
        let request = agent.request_for(work, &Demand::default())?;
        let unknown = |why: String| {
            AgentErrorKind::Compaction {
            problem: format!("context.window is `auto`, but {why}: set context.window to the model's context length in tokens"),
        }
        };
        let tokens = match self.invoker.context_window(&request).await {
            Ok(Some(tokens)) => tokens,
            Ok(None) => return Err(unknown(format!("the server's /models does not report the context length of `{}` (max_model_len, context_length, ...)", agent.model))),
            Err(e) => return Err(unknown(format!("the server's /models could not be read ({})", lllm_core::full_message(&e)))),
        };
        let policy = self
            .policy
            .with_window(tokens)
            .map_err(|e| unknown(e.to_string()))?;
        tracing::info!(tokens, "context: the server reports the model's window");
        Ok(policy.threshold().unwrap_or(u64::MAX))
    }

    /// After the first request of a new window: its prompt must be under the threshold, else the
    /// kept messages alone fill the window and compacting again would not help.
    pub(crate) fn check_after(&self, prompt_tokens: u64) -> Result<(), AgentErrorKind> {
        self.count(|s| s.tokens_after += prompt_tokens);
        let threshold = self.threshold.get().copied().unwrap_or(u64::MAX);
        if prompt_tokens > threshold {
            return Err(AgentErrorKind::Compaction {
                problem: format!(
                    "the compacted window still has {prompt_tokens} prompt tokens, over compact_at × window = {threshold}: the system prompt, the summary and the last {} messages do not fit; raise context.window or compact_at, or lower keep_last",
                    self.policy.keep_last()
                ),
            });
        }
        Ok(())
    }
}

impl Agent {
    /// Compacts `work`'s window (its last answer's prompt was `before` tokens): the summary
    /// request, then the new window, journaled as the next dialog of `alias`.
    pub(super) async fn compact(
        &self,
        compaction: &Compaction,
        alias: &str,
        work: &Dialog,
        tools: &[lllm_core::ToolSpec],
        demand: &Demand,
        before: u64,
    ) -> Result<Dialog, AgentErrorKind> {
        let messages: Vec<Message> = work.messages().iter().cloned().collect();
        // Inputs that came after the last answer wait to be answered in the new window.
        let cut = messages.len()
            - messages
                .iter()
                .rev()
                .take_while(|m| m.role == Role::User)
                .count();
        // A summary that fails leaves the window as it was (the caller goes on uncompacted).
        let summary = match &compaction.summarizer {
            Some(summarizer) => summarizer
                .summarize(&messages[..cut])
                .await
                .map_err(AgentErrorKind::Summarizer)?,
            None => {
                self.summary_request(alias, work, &messages[..cut], tools, demand)
                    .await?
            }
        };
        let first = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
        let keep = usize::try_from(compaction.policy.keep_last()).unwrap_or(usize::MAX);
        let tail = pair_safe_tail_start(&messages[..cut], first, keep);
        // Loaded skills come back after the kept messages, before what waits to be answered.
        let reloads =
            self.skill_reloads(&messages[..cut], &messages[tail..cut], compaction.rounds());
        let window = messages[..first]
            .iter()
            .cloned()
            .chain(std::iter::once(Message::user(format!(
                "{SUMMARY_HEADING}{summary}"
            ))))
            .chain(messages[tail..cut].iter().cloned())
            .chain(reloads)
            .chain(messages[cut..].iter().cloned());
        let keep_session = compaction.policy.session() == SessionOnCompaction::Keep;
        let mut window = work.compacted(window, keep_session);
        if let Some(journal) = &self.run.journal {
            let id = journal
                .dialog_id(&self.name, alias, window.id())
                .map_err(AgentErrorKind::Journal)?;
            window = window.with_id(id);
        }
        if let Some(trace) = &self.run.trace {
            trace.forked(work.id(), window.id());
        }
        compaction.count(|s| {
            s.compactions += 1;
            s.tokens_before += before;
        });
        self.observe_compaction(alias, before);
        Ok(window)
    }

    /// Asks the model for the summary: the window as the last request sent it, plus one
    /// instruction, with the same tools, hints and session, and `tool_choice: "none"`.
    async fn summary_request(
        &self,
        alias: &str,
        work: &Dialog,
        messages: &[Message],
        tools: &[lllm_core::ToolSpec],
        demand: &Demand,
    ) -> Result<String, AgentErrorKind> {
        let mut request = self.request_for(work, demand)?;
        request.notes.dialog_alias = Some(alias.to_owned());
        let mut log = MessageLog::new();
        for message in messages {
            log.push(message.clone());
        }
        log.push(Message::user(self.summary_instruction(messages)));
        request.messages = log;
        if !tools.is_empty() {
            request.tools = tools.to_vec();
            request.tool_choice = Some(json!("none"));
        }
        let answer = self.call(&request, None).await?.message;
        match answer.content.filter(|text| !text.trim().is_empty()) {
            Some(text) => Ok(text),
            None => Err(AgentErrorKind::Compaction {
                problem: "the model answered the summary request without text (a tool call although tool_choice was none, or nothing); the window was left as it was".into(),
            }),
        }
    }
}
