//! Tactic files: the YAML format, its loader and the validated agent specs it yields.
//!
//! Loading reads the file, parses it with every key known (unknown keys and wrong types are errors with
//! line, column and a suggestion), expands `${ENV}` references in string values, merges `global` under each
//! agent, resolves prompt files, and validates model arguments and inference hints.

mod env;
mod error;
mod raw;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use error::{ConfigError, Position};

use crate::hints::InferenceHints;
use crate::model_args::ModelArgs;
use crate::prompt::Prompt;
use crate::report::full_message;
use crate::schema::Schema;
use crate::suggest::closest;
use crate::tool::{output_schema_problem, CommandToolConfig};
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
    /// Its agents, in file order.
    pub agents: Vec<AgentSpec>,
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

/// Parses a tactic from `bytes` as if read from `path` (used for messages and to find `prompts/`).
pub fn parse_tactic(
    bytes: &[u8],
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TacticSpec, ConfigError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ConfigError::At {
        path: path.to_owned(),
        position: Position::of_offset(bytes, e.valid_up_to()),
        message: "the file is not valid UTF-8; save it as UTF-8".into(),
    })?;
    if text.trim().is_empty() {
        return Err(field_error(
            path,
            "agent_configs",
            "the file is empty; a tactic needs at least `agent_configs` with one agent",
        ));
    }
    let raw: RawTactic = serde_yaml::from_str(text).map_err(|e| yaml_error(path, text, &e))?;
    Loader { path, env }.load(raw)
}

struct Loader<'a> {
    path: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Loader<'_> {
    fn load(&self, raw: RawTactic) -> Result<TacticSpec, ConfigError> {
        if raw.steps.is_some() {
            return Err(field_error(
                self.path,
                "steps",
                "steps are not supported by this version of lllm; remove them to run a chat with the first agent",
            ));
        }
        let mut global = raw.global.unwrap_or_default();
        if global.name.is_some() {
            return Err(field_error(
                self.path,
                "global.name",
                "`name` belongs to each entry of agent_configs, not to global",
            ));
        }
        self.expand_env(&mut global, "global")?;
        // Checked before merging, so that a mistake in global is reported as global's.
        if let Some(args) = &global.model_args {
            ModelArgs::from_json(args.clone())
                .map_err(|e| field_error(self.path, "global", &e.to_string()))?;
        }
        if raw.agent_configs.is_empty() {
            return Err(field_error(
                self.path,
                "agent_configs",
                "a tactic needs at least one agent",
            ));
        }
        let mut agents: Vec<AgentSpec> = Vec::with_capacity(raw.agent_configs.len());
        for (index, mut agent) in raw.agent_configs.into_iter().enumerate() {
            let section = format!("agent_configs[{index}]");
            let name = agent
                .name
                .clone()
                .filter(|n| !n.trim().is_empty())
                .ok_or_else(|| {
                    field_error(
                        self.path,
                        &format!("{section}.name"),
                        "every agent needs a name",
                    )
                })?;
            if name.chars().any(char::is_control) {
                return Err(field_error(
                    self.path,
                    &format!("{section}.name"),
                    "a name may not contain control characters",
                ));
            }
            if let Some(other) = agents.iter().position(|a| a.name == name) {
                return Err(field_error(
                    self.path,
                    &format!("{section}.name"),
                    &format!("`{name}` is already the name of agent_configs[{other}]; names must be unique"),
                ));
            }
            self.expand_env(&mut agent, &section)?;
            let section = format!("{section} ({name})");
            agents.push(self.agent(name, agent.over(&global), &section)?);
        }
        Ok(TacticSpec {
            path: self.path.to_owned(),
            agents,
        })
    }

    fn agent(&self, name: String, raw: RawAgent, section: &str) -> Result<AgentSpec, ConfigError> {
        let err = |field: &str, message: &str| {
            field_error(self.path, &format!("{section}.{field}"), message)
        };
        let mut tools = self.tools(raw.tools.clone().unwrap_or_default(), section)?;
        let tactic_dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        for tool in &mut tools {
            tool.working_dir = Some(tactic_dir.to_owned());
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
            Ok(PromptSource::Path(p)) => Prompt::load(&p, &self.prompt_dirs())
                .map_err(|e| err("system_prompt_path", &full_message(&e)))?,
            Err(message) => return Err(err("system_prompt", message)),
        };
        system_prompt
            .validate()
            .map_err(|e| err("system_prompt", &e.to_string()))?;
        let model_args = ModelArgs::from_json(raw.model_args.unwrap_or_default())
            .map_err(|e| field_error(self.path, section, &e.to_string()))?;
        let inference_hints = raw
            .inference_hints
            .map(|h| h.build())
            .transpose()
            .map_err(|e| field_error(self.path, section, &e.to_string()))?;
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
        section: &str,
    ) -> Result<Vec<CommandToolConfig>, ConfigError> {
        for (i, tool) in tools.iter().enumerate() {
            let at = |field: &str| format!("{section}.tools[{i}].{field}");
            if let Err((field, message)) = tool.validate() {
                return Err(field_error(self.path, &at(&field), &message));
            }
            Schema::compile(&tool.parameters)
                .map_err(|problem| field_error(self.path, &at("parameters"), &problem))?;
            if let Some(first) = tools[..i].iter().position(|t| t.name == tool.name) {
                return Err(field_error(
                    self.path,
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
            *value = env::expand(value, self.env).map_err(|e| {
                field_error(self.path, &format!("{section}.{field}"), &e.describe())
            })?;
            Ok(())
        })?;
        for (key, value) in agent.model_args.iter_mut().flatten() {
            env::expand_model_arg(key, value, self.env).map_err(|(field, e)| {
                field_error(self.path, &format!("{section}.{field}"), &e.describe())
            })?;
        }
        Ok(())
    }

    /// `prompts/` next to the tactic file, then the working directory's `prompts/`.
    fn prompt_dirs(&self) -> Vec<PathBuf> {
        let beside = self
            .path
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("prompts");
        let mut dirs = vec![beside];
        if let Ok(cwd) = std::env::current_dir() {
            let here = cwd.join("prompts");
            if !dirs.contains(&here) {
                dirs.push(here);
            }
        }
        dirs
    }
}

fn field_error(path: &Path, field: &str, message: &str) -> ConfigError {
    ConfigError::Field {
        path: path.to_owned(),
        field: field.to_owned(),
        message: message.to_owned(),
    }
}

/// Turns a serde_yaml error into one with the position and, for an unknown key or variant, a suggestion.
fn yaml_error(path: &Path, text: &str, error: &serde_yaml::Error) -> ConfigError {
    let mut message = error.to_string();
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    message.push_str(&suggestion(&message));
    let Some(location) = error.location() else {
        return field_error(path, "(document)", &message);
    };
    // An error raised after a key was read (a model_args key) is located at its mapping; point at the
    // key itself when it can be found from there.
    let offset = first_backticked(&message)
        .and_then(|key| find_key(text, location.index(), key))
        .unwrap_or(location.index());
    ConfigError::At {
        path: path.to_owned(),
        position: Position::of_offset(text.as_bytes(), offset),
        message,
    }
}

fn first_backticked(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once('`')?;
    rest.split_once('`').map(|(word, _)| word)
}

/// The offset of `key` written as a mapping key (`key:`, `"key":`, `'key':`) at or after `from`.
fn find_key(text: &str, from: usize, key: &str) -> Option<usize> {
    let tail = text.get(from..)?;
    tail.match_indices(key).find_map(|(at, _)| {
        let before = tail[..at].chars().next_back();
        let quote = matches!(before, Some('"' | '\''));
        let start_ok =
            quote || before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
        let after = tail[at + key.len()..].trim_start_matches(['"', '\'']);
        let key_ok = after.trim_start_matches([' ', '\t']).starts_with(':');
        (start_ok && key_ok).then(|| from + at - usize::from(quote))
    })
}

/// For "unknown field `x`, expected one of `a`, `b`": " (did you mean `a`?)" when one is close.
fn suggestion(message: &str) -> String {
    let Some(rest) = message
        .split_once("unknown field `")
        .or_else(|| message.split_once("unknown variant `"))
        .map(|(_, rest)| rest)
    else {
        return String::new();
    };
    let Some((word, expected)) = rest.split_once('`') else {
        return String::new();
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    closest(word, candidates.iter().copied())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}
