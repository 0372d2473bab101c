//! The agents of a tactic file, built once and shared by the steps that use them.

use std::sync::Arc;
use std::time::Duration;

use lllm_core::{TacticSpec, Usage};

use crate::agent::{AgentBuilder, AgentError};
use crate::invoker::Invoker;
use crate::trace::TraceRecorder;
use crate::Agent;

/// What a running tactic reports about its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressEvent {
    /// The step's model call started.
    Started,
    /// The step answered after this long.
    Finished(Duration),
    /// The step failed after this long.
    Failed(Duration),
    /// The step was stopped after this long because another branch failed.
    Cancelled(Duration),
}

/// A step's progress: where it is in the file, which agent and dialog.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The step's field path (`steps[2].parallel[1]`).
    pub step: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// The dialog alias.
    pub dialog: &'a str,
    /// What happened.
    pub event: ProgressEvent,
}

type ProgressSink = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// The agents of a tactic, in file order, with the tactic's spec.
pub struct Team {
    agents: Vec<Agent>,
    spec: TacticSpec,
    progress: Option<ProgressSink>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("agents", &self.agents)
            .field("tactic_type", &self.spec.tactic_type())
            .finish_non_exhaustive()
    }
}

impl Team {
    /// Builds every agent of `spec`, all sending through `invoker`.
    pub fn from_spec(spec: &TacticSpec, invoker: Arc<dyn Invoker>) -> Result<Team, AgentError> {
        Self::traced(spec, invoker, None)
    }

    /// Like [`from_spec`](Self::from_spec), every agent recording its calls in `trace`.
    pub fn traced(
        spec: &TacticSpec,
        invoker: Arc<dyn Invoker>,
        trace: Option<Arc<TraceRecorder>>,
    ) -> Result<Team, AgentError> {
        let agents = spec
            .agents()
            .iter()
            .map(|agent| {
                let builder = AgentBuilder::from_spec(agent).invoker(invoker.clone());
                match &trace {
                    Some(trace) => builder.trace(trace.clone()),
                    None => builder,
                }
                .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Team {
            agents,
            spec: spec.clone(),
            progress: None,
        })
    }

    /// Reports each step's progress to `sink` (for example to show it on a terminal).
    pub fn on_progress(mut self, sink: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }

    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name() == name)
    }

    /// The agents in file order.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// The tactic file's spec (its `config:` for tactics written in Rust).
    pub fn spec(&self) -> &TacticSpec {
        &self.spec
    }

    /// Token usage of every call of every agent.
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for agent in &self.agents {
            total.add(&agent.usage());
        }
        total
    }

    pub(crate) fn report(&self, progress: Progress<'_>) {
        if let Some(sink) = &self.progress {
            sink(progress);
        }
    }
}
