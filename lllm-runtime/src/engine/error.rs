//! Why a run did not answer.

use std::path::PathBuf;

use crate::agent::{AgentError, AgentErrorKind};
use crate::journal::{Journal, JournalError, PendingCall};
use crate::mcp::McpError;
use crate::tactic::TacticError;

/// What a paused run had spent and written by its pause (what a hand-back to the caller reports).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AtPause {
    /// Tokens of the run's model calls up to the pause.
    pub usage: lllm_core::Usage,
    /// The text the model wrote beside the call that paused the run (empty when none).
    pub text: String,
}

/// A run ended without an answer, or could not start.
///
/// [`is_usage`](Self::is_usage) tells the caller's mistakes (a tactic or a setting that cannot work)
/// from the run's failures; [`is_paused`](Self::is_paused) a run that waits for a confirmation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The tactic file cannot be read (to start a journal, or to check one on resume).
    #[error("cannot read the tactic {}", path.display())]
    TacticFile {
        /// The file.
        path: PathBuf,
        /// Why: the file system refused, it is not a regular file, or it is too large.
        #[source]
        source: lllm_core::ReadProblem,
    },
    /// The tactic file changed since the journaled run started.
    #[error("{} changed since the run started (its content hash differs from the journal's): resuming could send the model a different conversation; restore the file, or resume anyway with force", path.display())]
    TacticChanged {
        /// The file.
        path: PathBuf,
    },
    /// A tactic file does not load (the message names the file, line and column).
    #[error(transparent)]
    Config(#[from] lllm_core::ConfigError),
    /// The journal given cannot be started or resumed (the file holds another journal, is not one,
    /// cannot be opened).
    #[error(transparent)]
    JournalOpen(JournalError),
    /// The journal cannot be written as the run ends.
    #[error(transparent)]
    Journal(JournalError),
    /// The tactic's MCP servers cannot start.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// The tactic failed (an agent, a template, the tactic's own error).
    #[error(transparent)]
    Tactic(#[from] TacticError),
    /// The run paused: tool calls wait for the user's confirmation, held by its journal (resume it
    /// with their decisions).
    #[error("paused: a call of `{tool}` by agent `{agent}` waits for confirmation (journaled in {})", journal.display())]
    Paused {
        /// The agent whose call paused the run.
        agent: String,
        /// Its tool.
        tool: String,
        /// The journal holding the run.
        journal: PathBuf,
        /// Every call that waits.
        pending: Vec<PendingCall>,
        /// What the run had spent and written by the pause.
        at_pause: Box<AtPause>,
    },
    /// The run was cancelled before it answered.
    #[error("the run was cancelled")]
    Cancelled,
    /// The plan continues dialogs of an agent the tactic does not have.
    #[error("the run continues dialogs of agent `{agent}`, which the tactic does not have (was the tactic file changed?)")]
    UnknownAgent {
        /// The agent named.
        agent: String,
    },
}

impl From<AgentError> for RunError {
    fn from(error: AgentError) -> Self {
        RunError::Tactic(TacticError::Agent(error))
    }
}

impl RunError {
    /// Whether the caller is at fault (the tactic, a setting, the journal given), not the run.
    pub fn is_usage(&self) -> bool {
        match self {
            RunError::TacticFile { .. }
            | RunError::TacticChanged { .. }
            | RunError::Config(_)
            | RunError::JournalOpen(_)
            | RunError::UnknownAgent { .. } => true,
            RunError::Journal(_) => false,
            RunError::Mcp(e) => e.is_config(),
            RunError::Tactic(e) => e.is_usage(),
            RunError::Paused { .. } | RunError::Cancelled => false,
        }
    }

    /// Whether the run paused for a confirmation.
    pub fn is_paused(&self) -> bool {
        matches!(self, RunError::Paused { .. })
    }

    /// A tactic's error that says the run paused, as [`RunError::Paused`] with what `journal` holds.
    pub(crate) fn paused_in(self, journal: Option<&Journal>, usage: lllm_core::Usage) -> RunError {
        let (RunError::Tactic(TacticError::Agent(e)), Some(journal)) = (&self, journal) else {
            return self;
        };
        let AgentErrorKind::Paused { tool } = e.kind() else {
            return self;
        };
        let pending = journal.pending_calls();
        let text = pending
            .first()
            .and_then(|call| journal.last_answer(call.dialog))
            .map(|answer| answer.text().to_owned())
            .unwrap_or_default();
        RunError::Paused {
            agent: e.agent().to_owned(),
            tool: tool.clone(),
            journal: journal.path().to_owned(),
            pending,
            at_pause: Box::new(AtPause { usage, text }),
        }
    }

    /// A short, stable class of the error, as spans report it in `error.type`.
    pub fn error_type(&self) -> &'static str {
        if self.is_paused() {
            "paused"
        } else if self.is_usage() {
            "usage"
        } else {
            "run_failed"
        }
    }
}
