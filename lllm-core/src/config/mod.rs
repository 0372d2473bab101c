//! Tactic files: the YAML format, its loader and the validated specs it yields.
//!
//! Each file is parsed once, with the position of every value, into raw types ([`raw`]); a `base:`
//! file is layered under the file that names it and `global` under each agent, every value keeping
//! its own file, line and column; then the raw values are checked into the specs below. The tactic
//! JSON Schema ([`tactic_schema`]) is derived from the same raw types.

mod agent;
mod check;
mod env;
mod error;
mod merge;
mod raw;
mod schema;
mod source;
mod span;
mod steps;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_base;
#[cfg(test)]
mod tests_steps;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use agent::{
    AgentSpec, DEFAULT_MAX_ANSWER_RETRIES, DEFAULT_MAX_CALL_RETRIES, DEFAULT_MAX_TOOL_ROUNDS,
};
pub use env::EnvError;
pub use error::{ConfigError, ConfigErrorKind, Origin, Position};
pub use schema::tactic_schema;
pub use steps::{is_variable_name, Branch, Step, StepsError, Turn, DEFAULT_DIALOG};

use agent::AgentContext;
use raw::{RawAgent, RawTactic};
use span::At;
use steps::StepOrigins;

/// The tactic type of a file without `steps`: a chat with the first agent.
pub const CHAT_TACTIC: &str = "chat";
/// The tactic type of a file with `steps`.
pub const STEPS_TACTIC: &str = "steps";

/// A loaded tactic file.
#[derive(Debug, Clone, PartialEq)]
pub struct TacticSpec {
    path: PathBuf,
    tactic_type: String,
    agents: Vec<AgentSpec>,
    steps: Vec<Step>,
    output: Option<String>,
    config: serde_json::Value,
}

impl TacticSpec {
    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// What runs it: `chat`, `steps`, or the name of a tactic registered in Rust.
    pub fn tactic_type(&self) -> &str {
        &self.tactic_type
    }
    /// Its agents, in file order.
    pub fn agents(&self) -> &[AgentSpec] {
        &self.agents
    }
    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.name() == name)
    }
    /// The steps, for the `steps` tactic type.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
    /// Template of the final answer (`output:`), when set.
    pub fn output(&self) -> Option<&str> {
        self.output.as_deref()
    }
    /// Free-form settings for a tactic written in Rust (`config:`), `null` when absent.
    pub fn config(&self) -> &serde_json::Value {
        &self.config
    }
}

/// Loads a tactic file, expanding `${ENV}` from the process environment.
pub fn load_tactic(path: &Path) -> Result<TacticSpec, ConfigError> {
    let bytes = source::read_file(path)?;
    let lookup = |name: &str| std::env::var(name).ok();
    parse_tactic(&bytes, path, &lookup)
}

/// Parses a tactic from `bytes` as if read from `path` (used for messages, and to find `prompts/` and
/// `base:` files), expanding `${ENV}` with `env`.
pub fn parse_tactic(
    bytes: &[u8],
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TacticSpec, ConfigError> {
    let file: Arc<Path> = path.into();
    let raw = source::parse_one(bytes, &file)?;
    let mut chain: Vec<PathBuf> = path.canonicalize().into_iter().collect();
    let raw = source::with_bases(raw, &mut chain)?;
    Loader { path, env }.load(raw, &file)
}

struct Loader<'a> {
    path: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Loader<'_> {
    fn load(&self, raw: RawTactic, file: &Arc<Path>) -> Result<TacticSpec, ConfigError> {
        let top = Origin::new(file.clone(), None);
        let global = self.global(raw.global)?;
        let agents = self.agents(raw.agent_configs, &global, &top)?;
        let names: Vec<String> = agents.iter().map(|a| a.name().to_owned()).collect();
        let mut origins = StepOrigins::default();
        let steps = match raw.steps {
            Some(steps) => steps::parse_steps(steps, "steps", &mut origins)?,
            None => Vec::new(),
        };
        let output = raw.output;
        if !steps.is_empty() {
            if let Some(output) = &output {
                origins.note_output(&output.origin);
            }
            check::check_steps(&steps, &names, output.as_ref().map(|o| o.value.as_str()))
                .map_err(|(path, problem)| origins.error(&path, problem, &top))?;
        }
        let tactic_type = tactic_type(raw.tactic_type, &steps, output.as_ref(), &top)?;
        Ok(TacticSpec {
            path: self.path.to_owned(),
            tactic_type,
            agents,
            steps,
            output: output.map(|o| o.value),
            config: raw.config.unwrap_or(serde_json::Value::Null),
        })
    }

    fn global(&self, global: Option<At<RawAgent>>) -> Result<RawAgent, ConfigError> {
        let Some(At {
            value: mut global, ..
        }) = global
        else {
            return Ok(RawAgent::default());
        };
        if let Some(name) = &global.name {
            let kind = ConfigErrorKind::Invalid(
                "`name` belongs to each entry of agent_configs, not to global",
            );
            return Err(ConfigError::new(name.origin.clone(), kind).in_field("global.name"));
        }
        global.expand_env("global", self.env)?;
        // Checked on its own first, so that a mistake in global is reported as global's.
        if let Some(args) = &global.model_args {
            let context = AgentContext {
                tactic: self.path,
                label: "global".into(),
                origin: args.origin.clone(),
            };
            context.model_args(args.clone())?;
        }
        Ok(global)
    }

    fn agents(
        &self,
        raw: Option<At<Vec<At<RawAgent>>>>,
        global: &RawAgent,
        top: &Origin,
    ) -> Result<Vec<AgentSpec>, ConfigError> {
        let list = raw.unwrap_or_else(|| At {
            value: Vec::new(),
            origin: top.clone(),
        });
        if list.value.is_empty() {
            let kind = ConfigErrorKind::Missing {
                what: "an agent",
                hint: "list at least one agent under agent_configs",
            };
            return Err(ConfigError::new(list.origin, kind).in_field("agent_configs"));
        }
        let mut agents: Vec<(AgentSpec, Origin)> = Vec::with_capacity(list.value.len());
        for (
            index,
            At {
                value: mut agent,
                origin,
            },
        ) in list.value.into_iter().enumerate()
        {
            let section = format!("agent_configs[{index}]");
            let name = agent_name(agent.name.as_ref(), &origin, &section)?;
            if let Some((_, first)) = agents.iter().find(|(a, _)| a.name() == name.value) {
                let kind = ConfigErrorKind::Duplicate {
                    name: name.value.clone(),
                    first: first.clone(),
                    what: "agent names",
                };
                return Err(ConfigError::new(name.origin, kind).in_field(format!("{section}.name")));
            }
            agent.expand_env(&section, self.env)?;
            let context = AgentContext {
                tactic: self.path,
                label: format!("{section} ({})", name.value),
                origin,
            };
            let spec = context.agent(name.value, agent.over(global))?;
            agents.push((spec, name.origin));
        }
        Ok(agents.into_iter().map(|(a, _)| a).collect())
    }
}

fn agent_name(
    name: Option<&At<String>>,
    origin: &Origin,
    section: &str,
) -> Result<At<String>, ConfigError> {
    let field = format!("{section}.name");
    match name {
        Some(n) if n.value.trim().is_empty() || n.value.chars().any(char::is_control) => {
            let kind =
                ConfigErrorKind::Invalid("a name must be visible text without control characters");
            Err(ConfigError::new(n.origin.clone(), kind).in_field(field))
        }
        Some(n) => Ok(n.clone()),
        None => {
            let kind = ConfigErrorKind::Missing {
                what: "a name",
                hint: "give every agent a unique `name:`",
            };
            Err(ConfigError::new(origin.clone(), kind).in_field(field))
        }
    }
}

/// `chat` without steps, `steps` with them; any other name is a tactic registered in Rust.
fn tactic_type(
    declared: Option<At<String>>,
    steps: &[Step],
    output: Option<&At<String>>,
    top: &Origin,
) -> Result<String, ConfigError> {
    let default = if steps.is_empty() {
        CHAT_TACTIC
    } else {
        STEPS_TACTIC
    };
    let (name, origin) = match declared {
        Some(d) => (d.value, d.origin),
        None => (default.to_owned(), top.clone()),
    };
    let fail = |origin: &Origin, field: &str, problem: &'static str| {
        Err(ConfigError::new(origin.clone(), ConfigErrorKind::Invalid(problem)).in_field(field))
    };
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return fail(
            &origin,
            "tactic_type",
            "a tactic name has letters, digits, `_` and `-` only",
        );
    }
    match name.as_str() {
        CHAT_TACTIC if !steps.is_empty() => fail(
            &origin,
            "tactic_type",
            "a `chat` tactic has no steps: remove `steps:`, or remove `tactic_type:` to run them",
        ),
        CHAT_TACTIC if output.is_some() => fail(
            &output.map_or(origin.clone(), |o| o.origin.clone()),
            "output",
            "`output:` is the final answer of steps; a `chat` tactic answers directly",
        ),
        STEPS_TACTIC if steps.is_empty() => {
            fail(&origin, "tactic_type", "a `steps` tactic needs `steps:`")
        }
        _ => Ok(name),
    }
}
