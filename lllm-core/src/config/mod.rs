//! Tactic files: the YAML format, its loader and the validated specs it yields.
//!
//! Loading reads the file and its `base:` chain, checks every key and type (errors carry the file, line,
//! column and a suggestion), expands `${ENV}` references in string values, merges `global` under each
//! agent, resolves prompt files, validates model arguments, hints and tools, and checks the steps
//! (unknown agents, forks from dialogs that do not exist yet, parallel branches sharing a dialog,
//! variables used before they are saved).

mod check;
mod document;
mod env;
mod error;
mod positions;
mod raw;
mod steps;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_steps;

use std::path::{Path, PathBuf};

pub use error::{ConfigError, Position};
pub use steps::{is_variable_name, Branch, Step, Turn, DEFAULT_DIALOG};

/// The JSON Schema of the tactic format (what `lllm schema` prints).
pub const TACTIC_SCHEMA: &str = include_str!("tactic.schema.json");
/// The tactic type of a file without `steps`: a chat with the first agent.
pub const CHAT_TACTIC: &str = "chat";
/// The tactic type of a file with `steps`.
pub const STEPS_TACTIC: &str = "steps";

use crate::hints::InferenceHints;
use crate::model_args::ModelArgs;
use crate::prompt::Prompt;
use crate::report::full_message;
use crate::schema::Schema;
use crate::tool::{output_schema_problem, CommandToolConfig};
use document::Document;
use positions::Positions;
use raw::{PromptSource, RawAgent, RawTactic};

/// Default number of answers re-asked after a parse or validation failure.
pub const DEFAULT_MAX_EXCEPTION_RETRY: u32 = 3;
/// Default number of tool rounds in one respond.
pub const DEFAULT_MAX_INTERRUPT_STEPS: u32 = 5;
/// Default number of retries of a failed model call.
pub const DEFAULT_MAX_LLM_RECALL: u32 = 3;

/// One agent of a tactic, with `global` merged in and everything validated.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// Unique name.
    pub name: String,
    /// Model name as configured (a provider prefix is stripped when sending).
    pub model: String,
    /// The system prompt template.
    pub system_prompt: Prompt,
    /// Model arguments.
    pub model_args: ModelArgs,
    /// Inference hints, when configured.
    pub inference_hints: Option<InferenceHints>,
    /// Command tools the agent may call.
    pub tools: Vec<CommandToolConfig>,
    /// JSON Schema every answer must match (`output_schema:`), when set.
    pub output_schema: Option<serde_json::Value>,
    /// Re-asks after an answer fails to parse or validate.
    pub max_exception_retry: u32,
    /// Tool rounds allowed in one respond.
    pub max_interrupt_steps: u32,
    /// Retries of a failed model call.
    pub max_llm_recall: u32,
}

/// A loaded tactic file.
#[derive(Debug, Clone, PartialEq)]
pub struct TacticSpec {
    /// The file it was loaded from.
    pub path: PathBuf,
    /// What runs it: `chat`, `steps`, or the name of a tactic registered in Rust.
    pub tactic_type: String,
    /// Its agents, in file order.
    pub agents: Vec<AgentSpec>,
    /// The steps, for the `steps` tactic type.
    pub steps: Vec<Step>,
    /// Template of the final answer (`output:`), when set.
    pub output: Option<String>,
    /// Free-form settings for a tactic written in Rust (`config:`), `null` when absent.
    pub config: serde_json::Value,
}

impl TacticSpec {
    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.name == name)
    }
}

/// Loads a tactic file, expanding `${ENV}` from the process environment.
pub fn load_tactic(path: &Path) -> Result<TacticSpec, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let lookup = |name: &str| std::env::var(name).ok();
    parse_tactic(&bytes, path, &lookup)
}

/// Parses a tactic from `bytes` as if read from `path` (used for messages, and to find `prompts/` and
/// `base:` files).
pub fn parse_tactic(
    bytes: &[u8],
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TacticSpec, ConfigError> {
    let chain = path.canonicalize().into_iter().collect();
    let document = Document::parse(bytes, path, &mut { chain })?;
    let raw: RawTactic = serde_yaml::from_value(document.value).map_err(|e| {
        field_error(
            path,
            "(document)",
            &format!("{e} (after merging the base files)"),
        )
    })?;
    Loader {
        path,
        env,
        positions: &document.positions,
    }
    .load(raw)
}

struct Loader<'a> {
    path: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    positions: &'a Positions,
}

impl Loader<'_> {
    /// An error about the field at `path` (such as `steps[2].agent`), at the line that holds it when
    /// the document says.
    fn fail(&self, path: &str, message: &str) -> ConfigError {
        self.fail_in(
            &Section {
                path: path.to_owned(),
                label: path.to_owned(),
            },
            message,
        )
    }

    /// Like [`fail`](Self::fail), naming the field with its label (`agent_configs[1] (critic).model_name`).
    fn fail_in(&self, at: &Section, message: &str) -> ConfigError {
        match self.positions.get(&at.path) {
            Some((file, position)) => ConfigError::At {
                path: file.to_owned(),
                position,
                message: format!("{}: {message}", at.label),
            },
            None => field_error(self.path, &at.label, message),
        }
    }

    fn load(&self, raw: RawTactic) -> Result<TacticSpec, ConfigError> {
        let mut global = raw.global.unwrap_or_default();
        if global.name.is_some() {
            return Err(self.fail(
                "global.name",
                "`name` belongs to each entry of agent_configs, not to global",
            ));
        }
        self.expand_env(&mut global, "global")?;
        // Checked before merging, so that a mistake in global is reported as global's.
        if let Some(args) = &global.model_args {
            ModelArgs::from_json(args.clone())
                .map_err(|e| self.fail(&format!("global.model_args.{}", e.field), &e.message))?;
        }
        let agent_configs = raw.agent_configs.unwrap_or_default();
        if agent_configs.is_empty() {
            return Err(self.fail("agent_configs", "a tactic needs at least one agent"));
        }
        let mut agents: Vec<AgentSpec> = Vec::with_capacity(agent_configs.len());
        for (index, mut agent) in agent_configs.into_iter().enumerate() {
            let section = format!("agent_configs[{index}]");
            let name = agent
                .name
                .clone()
                .filter(|n| !n.trim().is_empty())
                .ok_or_else(|| self.fail(&format!("{section}.name"), "every agent needs a name"))?;
            if name.chars().any(char::is_control) {
                return Err(self.fail(
                    &format!("{section}.name"),
                    "a name may not contain control characters",
                ));
            }
            if let Some(other) = agents.iter().position(|a| a.name == name) {
                return Err(self.fail(&format!("{section}.name"),
                    &format!("`{name}` is already the name of agent_configs[{other}]; names must be unique"),
                ));
            }
            self.expand_env(&mut agent, &section)?;
            let section = Section {
                label: format!("{section} ({name})"),
                path: section,
            };
            agents.push(self.agent(name, agent.over(&global), &section)?);
        }
        let names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
        let steps = match &raw.steps {
            Some(value) => {
                let mut steps = steps::parse_steps(value, "steps")
                    .map_err(|(field, message)| self.fail(&field, &message))?;
                steps::for_each_turn_mut(&mut steps, &mut |turn| {
                    let at = match turn.receive {
                        Some(_) => format!("{}.receive", turn.at),
                        None => turn.at.clone(),
                    };
                    turn.location = self
                        .positions
                        .get(&at)
                        .map(|(file, position)| format!("{}:{position}", file.display()));
                });
                check::check_steps(&steps, &names, raw.output.as_deref())
                    .map_err(|(field, message)| self.fail(&field, &message))?;
                steps
            }
            None => Vec::new(),
        };
        let tactic_type = self.tactic_type(raw.tactic_type, &steps, raw.output.is_some())?;
        Ok(TacticSpec {
            path: self.path.to_owned(),
            tactic_type,
            agents,
            steps,
            output: raw.output,
            config: raw.config.unwrap_or(serde_json::Value::Null),
        })
    }

    /// `chat` without steps, `steps` with them; any other name is a tactic registered in Rust.
    fn tactic_type(
        &self,
        declared: Option<String>,
        steps: &[Step],
        has_output: bool,
    ) -> Result<String, ConfigError> {
        let default = if steps.is_empty() {
            CHAT_TACTIC
        } else {
            STEPS_TACTIC
        };
        let name = declared.unwrap_or_else(|| default.to_owned());
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.fail(
                "tactic_type",
                &format!("`{name}` is not a tactic name (letters, digits, `_`, `-`)"),
            ));
        }
        match name.as_str() {
            CHAT_TACTIC if !steps.is_empty() => Err(self.fail(
                "tactic_type",
                "a `chat` tactic has no steps: remove `steps:`, or remove `tactic_type:` to run them",
            )),
            CHAT_TACTIC if has_output => Err(self.fail(
                "output",
                "`output:` is the final answer of steps; a `chat` tactic answers directly",
            )),
            STEPS_TACTIC if steps.is_empty() => Err(self.fail(
                "tactic_type",
                "a `steps` tactic needs `steps:`",
            )),
            _ => Ok(name),
        }
    }

    fn agent(
        &self,
        name: String,
        raw: RawAgent,
        section: &Section,
    ) -> Result<AgentSpec, ConfigError> {
        let err = |field: &str, message: &str| self.fail_in(&section.field(field), message);
        let mut tools = self.tools(raw.tools.clone().unwrap_or_default(), section)?;
        // Relative paths are relative to the file that wrote them, which may be a base file.
        let tools_dir = self.source_dir(&[section.field("tools").path, "global.tools".into()]);
        for tool in &mut tools {
            tool.working_dir = Some(tools_dir.clone());
        }
        if let Some(schema) = &raw.output_schema {
            if let Some(problem) = output_schema_problem(schema) {
                return Err(err("output_schema", &problem));
            }
            Schema::compile(schema).map_err(|problem| err("output_schema", &problem))?;
        }
        let model = raw
            .model_name
            .clone()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| {
                err(
                    "model_name",
                    "a model name is required: set it on the agent or under global",
                )
            })?;
        let system_prompt = match raw.prompt_source() {
            Ok(PromptSource::Inline(text)) => Prompt::named(format!("{name}.system_prompt"), text),
            Ok(PromptSource::Path(p)) => {
                let dir = self.source_dir(&[
                    section.field("system_prompt_path").path,
                    "global.system_prompt_path".into(),
                ]);
                Prompt::load(&p, &self.prompt_dirs(&dir))
            }
            .map_err(|e| err("system_prompt_path", &full_message(&e)))?,
            Err(message) => return Err(err("system_prompt", message)),
        };
        system_prompt
            .validate()
            .map_err(|e| err("system_prompt", &e.to_string()))?;
        let model_args = ModelArgs::from_json(raw.model_args.unwrap_or_default()).map_err(|e| {
            self.fail_in(
                &section.field(&format!("model_args.{}", e.field)),
                &e.message,
            )
        })?;
        let inference_hints = raw
            .inference_hints
            .map(|h| h.build())
            .transpose()
            .map_err(|e| self.fail_in(section, &e.to_string()))?;
        Ok(AgentSpec {
            name,
            model,
            system_prompt,
            model_args,
            inference_hints,
            tools,
            output_schema: raw.output_schema,
            max_exception_retry: raw
                .max_exception_retry
                .unwrap_or(DEFAULT_MAX_EXCEPTION_RETRY),
            max_interrupt_steps: raw
                .max_interrupt_steps
                .unwrap_or(DEFAULT_MAX_INTERRUPT_STEPS),
            max_llm_recall: raw.max_llm_recall.unwrap_or(DEFAULT_MAX_LLM_RECALL),
        })
    }

    fn tools(
        &self,
        tools: Vec<CommandToolConfig>,
        section: &Section,
    ) -> Result<Vec<CommandToolConfig>, ConfigError> {
        for (i, tool) in tools.iter().enumerate() {
            let at = |field: &str| section.field(&format!("tools[{i}].{field}"));
            if let Err((field, message)) = tool.validate() {
                return Err(self.fail_in(&at(&field), &message));
            }
            Schema::compile(&tool.parameters)
                .map_err(|problem| self.fail_in(&at("parameters"), &problem))?;
            if let Some(first) = tools[..i].iter().position(|t| t.name == tool.name) {
                return Err(self.fail_in(
                    &at("name"),
                    &format!(
                        "`{}` is already the name of tools[{first}]; tool names must be unique",
                        tool.name
                    ),
                ));
            }
        }
        Ok(tools)
    }

    fn expand_env(&self, agent: &mut RawAgent, section: &str) -> Result<(), ConfigError> {
        agent.for_each_string(&mut |field, value| {
            *value = env::expand(value, self.env)
                .map_err(|e| self.fail(&format!("{section}.{field}"), &e.describe()))?;
            Ok(())
        })?;
        for (key, value) in agent.model_args.iter_mut().flatten() {
            env::expand_model_arg(key, value, self.env)
                .map_err(|(field, e)| self.fail(&format!("{section}.{field}"), &e.describe()))?;
        }
        Ok(())
    }

    /// The folder of the file that holds the first of `paths` (a base file, or this one).
    fn source_dir(&self, paths: &[String]) -> PathBuf {
        let file = paths
            .iter()
            .find_map(|p| self.positions.file_of(p))
            .unwrap_or(self.path);
        file.parent().unwrap_or_else(|| Path::new(".")).to_owned()
    }

    /// `prompts/` beside the file that names the prompt, beside the tactic file, then in the working
    /// directory.
    fn prompt_dirs(&self, source: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![source.join("prompts")];
        let tactic_dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        for dir in [tactic_dir.join("prompts"), cwd.join("prompts")] {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        dirs
    }
}

/// A field's path (for its position) and its label (for people: agents are named).
struct Section {
    path: String,
    label: String,
}

impl Section {
    fn field(&self, field: &str) -> Section {
        Section {
            path: format!("{}.{field}", self.path),
            label: format!("{}.{field}", self.label),
        }
    }
}

fn field_error(path: &Path, field: &str, message: &str) -> ConfigError {
    ConfigError::Field {
        path: path.to_owned(),
        field: field.to_owned(),
        message: message.to_owned(),
    }
}
