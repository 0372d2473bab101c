//! How a run makes the agents its tasks are answered by: one recipe per agent of the tactic, each
//! building that agent for a run. A recipe takes the roster as an argument rather than holding it,
//! so no agent owns the roster that made it (no reference cycle keeps a run alive).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lllm_core::SubagentSpec;

use super::{Agent, AgentError};
use crate::run_context::RunContext;

/// Builds one agent of the tactic for a run.
pub(crate) type Recipe =
    Arc<dyn Fn(&Arc<Roster>, RunContext) -> Result<Agent, AgentError> + Send + Sync>;

/// The recipes of a tactic's agents, by name.
#[derive(Default)]
pub(crate) struct Roster {
    recipes: HashMap<String, Recipe>,
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.recipes.keys().collect();
        names.sort();
        f.debug_struct("Roster").field("agents", &names).finish()
    }
}

impl Roster {
    pub(crate) fn add(&mut self, name: &str, recipe: Recipe) {
        self.recipes.insert(name.to_owned(), recipe);
    }

    /// Agent `name` built for the run of `run`.
    pub(crate) fn make(
        self: &Arc<Self>,
        name: &str,
        run: RunContext,
    ) -> Result<Option<Agent>, AgentError> {
        self.recipes
            .get(name)
            .map(|recipe| recipe(self, run))
            .transpose()
    }
}

/// An agent's subagents, and the agents that answer their tasks (built on first use, one per
/// agent name, shared by all its tasks: each task is a dialog of its own in it).
#[derive(Debug)]
pub(crate) struct Subagents {
    pub(crate) specs: Vec<SubagentSpec>,
    pub(crate) max_background: u32,
    pub(crate) roster: Arc<Roster>,
    children: Mutex<HashMap<String, Arc<Agent>>>,
}

impl Subagents {
    pub(crate) fn new(specs: Vec<SubagentSpec>, max_background: u32, roster: Arc<Roster>) -> Self {
        Subagents {
            specs,
            max_background,
            roster,
            children: Mutex::default(),
        }
    }

    /// The subagent called `name`.
    pub(crate) fn spec(&self, name: &str) -> Option<&SubagentSpec> {
        self.specs.iter().find(|s| s.name() == name)
    }

    /// The agent `name` of this run that answers tasks, built on first use.
    pub(crate) fn child(&self, name: &str, run: &RunContext) -> Result<Arc<Agent>, String> {
        let mut children = self.children.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(agent) = children.get(name) {
            return Ok(agent.clone());
        }
        let agent = self
            .roster
            .make(name, run.clone())
            .map_err(|e| lllm_core::full_message(&e))?
            .ok_or_else(|| format!("no agent `{name}` in this run answers tasks"))?;
        let agent = Arc::new(agent);
        children.insert(name.to_owned(), agent.clone());
        Ok(agent)
    }
}
