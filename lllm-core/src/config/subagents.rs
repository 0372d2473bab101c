//! An agent's `subagents:` and `max_background_tasks` checked: names unique and usable as values of
//! `task_start`, each `agent` one of the tactic's, no tool of the agent named like a task tool.

use std::collections::HashMap;

use super::error::{ConfigError, ConfigErrorKind};
use super::origin::Origin;
use super::raw::{RawSubagent, RawTool};
use super::span::At;
use crate::subagents::{
    SubagentSpec, DEFAULT_MAX_BACKGROUND_TASKS, MAX_BACKGROUND_TASKS, MAX_SUBAGENTS,
    TASK_TOOL_NAMES,
};
use crate::tool::tool_name_problem;

/// What the checks of one agent's subagents read besides them.
pub(crate) struct SubagentCheck<'a> {
    /// The agent's name, which `agent` defaults to.
    pub(crate) agent: &'a str,
    /// Every agent name of the tactic.
    pub(crate) agents: &'a [String],
    /// `agent_configs[1] (critic)`, for messages.
    pub(crate) label: &'a str,
}

impl SubagentCheck<'_> {
    fn fail(&self, origin: &Origin, field: &str, problem: String) -> ConfigError {
        ConfigError::new(origin.clone(), ConfigErrorKind::Subagents(problem))
            .in_field(format!("{}.{field}", self.label))
    }

    /// The subagents, checked; `tools` are the agent's command tools (none may take a task tool's
    /// name while the agent has subagents).
    pub(crate) fn subagents(
        &self,
        raw: Option<At<Vec<At<RawSubagent>>>>,
        tools: Option<&At<Vec<At<RawTool>>>>,
    ) -> Result<Vec<SubagentSpec>, ConfigError> {
        let Some(raw) = raw else {
            return Ok(Vec::new());
        };
        if raw.value.len() > MAX_SUBAGENTS {
            let problem = format!("at most {MAX_SUBAGENTS} subagents per agent");
            return Err(self.fail(&raw.origin, "subagents", problem));
        }
        if !raw.value.is_empty() {
            self.no_task_tool_names(tools)?;
        }
        let mut seen: HashMap<String, Origin> = HashMap::new();
        let mut specs = Vec::with_capacity(raw.value.len());
        for (i, entry) in raw.value.into_iter().enumerate() {
            let sub = entry.value;
            let field = format!("subagents[{i}]");
            if let Some(problem) = tool_name_problem(&sub.name.value) {
                return Err(self.fail(&sub.name.origin, &format!("{field}.name"), problem));
            }
            if let Some(first) = seen.get(&sub.name.value) {
                let kind = ConfigErrorKind::Duplicate {
                    name: sub.name.value.clone(),
                    first: first.clone(),
                    what: "subagent names",
                };
                return Err(ConfigError::new(sub.name.origin.clone(), kind)
                    .in_field(format!("{}.{field}.name", self.label)));
            }
            let agent = match &sub.agent {
                None => self.agent.to_owned(),
                Some(agent) if self.agents.contains(&agent.value) => agent.value.clone(),
                Some(agent) => {
                    let problem = format!(
                        "unknown agent `{}`, expected one of {}",
                        super::error::shorten(&agent.value),
                        self.agents
                            .iter()
                            .map(|a| format!("`{a}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    return Err(self.fail(&agent.origin, &format!("{field}.agent"), problem));
                }
            };
            seen.insert(sub.name.value.clone(), sub.name.origin.clone());
            let mut spec = SubagentSpec::new(sub.name.value, agent, sub.mode.value)
                .with_background(sub.background.value);
            if let Some(description) = sub.description {
                spec = spec.with_description(description.value);
            }
            specs.push(spec);
        }
        Ok(specs)
    }

    /// An agent with subagents is offered the task tools: none of its own tools may be named so.
    fn no_task_tool_names(&self, tools: Option<&At<Vec<At<RawTool>>>>) -> Result<(), ConfigError> {
        let tools = tools.map(|t| t.value.as_slice()).unwrap_or_default();
        for (i, tool) in tools.iter().enumerate() {
            let name = &tool.value.name;
            if TASK_TOOL_NAMES.contains(&name.value.as_str()) {
                let problem = format!(
                    "`{}` is the name of a task tool, which an agent with `subagents:` is offered \
                     ({}); rename the tool",
                    name.value,
                    TASK_TOOL_NAMES.join(", ")
                );
                return Err(self.fail(&name.origin, &format!("tools[{i}].name"), problem));
            }
        }
        Ok(())
    }

    /// `max_background_tasks`: 1 to [`MAX_BACKGROUND_TASKS`], default
    /// [`DEFAULT_MAX_BACKGROUND_TASKS`].
    pub(crate) fn max_background_tasks(&self, raw: Option<At<u32>>) -> Result<u32, ConfigError> {
        match raw {
            None => Ok(DEFAULT_MAX_BACKGROUND_TASKS),
            Some(At { value, .. }) if (1..=MAX_BACKGROUND_TASKS).contains(&value) => Ok(value),
            Some(At { origin, .. }) => Err(self.fail(
                &origin,
                "max_background_tasks",
                format!("expected a whole number from 1 to {MAX_BACKGROUND_TASKS}"),
            )),
        }
    }
}
