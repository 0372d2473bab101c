//! Why the steps of a tactic cannot run: found while reading them (`steps.rs`) and while checking
//! them against the agents and dialogs (`check.rs`).

/// Why the steps cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StepsError {
    /// A list of steps or branches is empty.
    #[error("a list of steps may not be empty")]
    Empty,
    /// A step has neither `agent:` nor `parallel:`.
    #[error("a step needs `agent:` (or `parallel:`)")]
    NoAgent,
    /// `parallel:` beside other keys.
    #[error("a `parallel:` step has no other keys; put them on its branches")]
    ParallelWithKeys,
    /// `steps:` beside other keys in a branch.
    #[error("a `steps:` branch has no other keys; put them on its steps")]
    SequenceWithKeys,
    /// `steps:` outside a parallel branch.
    #[error(
        "`steps:` makes a sequence only inside a `parallel:` branch; here, list the steps directly"
    )]
    SequenceOutsideBranch,
    /// An empty dialog alias.
    #[error("a dialog alias may not be empty")]
    EmptyDialog,
    /// A `save:` name that cannot be a variable.
    #[error("`{0}` cannot be a variable: use letters, digits and _ (not starting with a digit), and not `input`")]
    NotAVariable(String),
    /// A name saved by two steps.
    #[error("`{name}` is already saved by the step at {first}; each saved name must be unique")]
    SavedTwice {
        /// The name.
        name: String,
        /// The first step that saves it.
        first: String,
    },
    /// A step names an agent the file does not have.
    #[error("unknown agent `{agent}`{}; the agents are: {}", did_you_mean(.suggestion), .agents.join(", "))]
    UnknownAgent {
        /// The name as written.
        agent: String,
        /// A close name, when one is a likely typo.
        suggestion: Option<String>,
        /// The file's agents.
        agents: Vec<String>,
    },
    /// `fork_from` names the dialog itself.
    #[error("a dialog cannot be forked from itself")]
    ForkFromItself,
    /// `fork_from` names a dialog that no step has used yet.
    #[error("dialog `{parent}` of agent `{agent}` does not exist yet at this point: a step must use it before it can be forked")]
    ForkFromMissing {
        /// The parent dialog.
        parent: String,
        /// The agent.
        agent: String,
    },
    /// A fork's alias already exists.
    #[error("dialog `{dialog}` already exists, so it cannot be forked from `{parent}`; choose a new alias")]
    ForkExists {
        /// The alias.
        dialog: String,
        /// The parent dialog.
        parent: String,
    },
    /// Two parallel branches share a dialog one of them writes.
    #[error("dialog `{dialog}` of agent `{agent}` is also used by the parallel branch step at {other}; parallel branches need dialogs of their own (fork them with fork_from)")]
    SharedDialog {
        /// The alias.
        dialog: String,
        /// The agent.
        agent: String,
        /// The other branch's step.
        other: String,
    },
    /// A template does not parse.
    #[error("not a valid template: {0}")]
    Template(String),
    /// A template uses a saved variable before the step that saves it.
    #[error("uses `{name}` before it is saved (by the step at {saver}, which has not run at this point)")]
    UsedBeforeSaved {
        /// The variable.
        name: String,
        /// The step that saves it.
        saver: String,
    },
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}
