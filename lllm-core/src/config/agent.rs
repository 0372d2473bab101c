//! One agent: its raw settings (with `global` under them) checked into an [`AgentSpec`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::env;
use super::error::{ConfigError, ConfigErrorKind};
use super::keyed::Keyed;
use super::origin::Origin;
use super::raw::{RawAgent, RawContext, RawHints, RawModelArgs, RawTool};
use super::span::At;
use super::subagents::SubagentCheck;
use super::Shared;
use crate::context::{self, ContextError, ContextPolicy, SessionOnCompaction};
use crate::hints::{HintsError, InferenceHints, InferenceHintsBuilder};
use crate::mcp::{McpPrompt, McpServerConfig, McpUse};
use crate::model_args::ModelArgs;
use crate::prompt::{read_prompt, Prompt, PromptError};
use crate::schema::Schema;
use crate::skills::SkillSet;
use crate::subagents::SubagentSpec;
use crate::tool::{output_schema_problem, CommandToolConfig, ToolConfigError};
use crate::Written;

/// Default number of answers re-asked after a parse or validation failure.
pub const DEFAULT_MAX_ANSWER_RETRIES: u32 = 3;
/// Default number of tool rounds in one respond.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 5;
/// Default number of retries of a failed model call.
pub const DEFAULT_MAX_CALL_RETRIES: u32 = 3;
/// Default number of tool calls of one answer run at the same time.
pub const DEFAULT_MAX_PARALLEL_TOOLS: u32 = 16;
/// Most tool calls of one answer that may run at the same time.
pub const MAX_PARALLEL_TOOLS: u32 = 64;

/// One agent of a tactic, with `global` merged in and everything validated.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    name: String,
    model: String,
    system_prompt: Prompt,
    system_prompt_mcp: Option<McpPrompt>,
    model_args: ModelArgs,
    inference_hints: Option<InferenceHints>,
    tools: Vec<CommandToolConfig>,
    mcp: Vec<McpUse>,
    output_schema: Option<Schema>,
    max_answer_retries: u32,
    max_tool_rounds: u32,
    max_call_retries: u32,
    max_parallel_tools: u32,
    context: Option<ContextPolicy>,
    client_tools: bool,
    subagents: Vec<SubagentSpec>,
    max_background_tasks: u32,
    skills: SkillSet,
}

impl AgentSpec {
    /// The agent's unique name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The model name as configured (a provider prefix is stripped when sending).
    pub fn model(&self) -> &str {
        &self.model
    }
    /// The system prompt template.
    pub fn system_prompt(&self) -> &Prompt {
        &self.system_prompt
    }
    /// The MCP server's prompt that is the system prompt (`system_prompt_mcp:`), when set: then
    /// [`system_prompt`](Self::system_prompt) is empty until the server gives the text.
    pub fn system_prompt_mcp(&self) -> Option<&McpPrompt> {
        self.system_prompt_mcp.as_ref()
    }
    /// The model arguments.
    pub fn model_args(&self) -> &ModelArgs {
        &self.model_args
    }
    /// The inference hints, when configured.
    pub fn inference_hints(&self) -> Option<&InferenceHints> {
        self.inference_hints.as_ref()
    }
    /// The command tools the agent may call (each already validated).
    pub fn tools(&self) -> &[CommandToolConfig] {
        &self.tools
    }
    /// The MCP servers whose tools the agent may call (`mcp:`), each with its filter.
    pub fn mcp(&self) -> &[McpUse] {
        &self.mcp
    }
    /// The JSON Schema every answer must match (`output_schema:`), when set, compiled.
    pub fn output_schema(&self) -> Option<&Schema> {
        self.output_schema.as_ref()
    }
    /// When and how the agent's dialogs are compacted (`context:`), when set.
    pub fn context(&self) -> Option<&ContextPolicy> {
        self.context.as_ref()
    }
    /// Re-asks after an answer fails to parse or validate (`max_answer_retries`).
    pub fn max_answer_retries(&self) -> u32 {
        self.max_answer_retries
    }
    /// Tool rounds allowed in one respond (`max_tool_rounds`).
    pub fn max_tool_rounds(&self) -> u32 {
        self.max_tool_rounds
    }
    /// Tool calls of one answer run at the same time (`max_parallel_tools`).
    pub fn max_parallel_tools(&self) -> u32 {
        self.max_parallel_tools
    }

    /// Retries of a failed model call (`max_call_retries`).
    pub fn max_call_retries(&self) -> u32 {
        self.max_call_retries
    }

    /// Whether a served tactic offers this agent the caller's function tools (`client_tools`).
    pub fn client_tools(&self) -> bool {
        self.client_tools
    }

    /// The subagents the model may start as tasks (`subagents:`), in file order.
    pub fn subagents(&self) -> &[SubagentSpec] {
        &self.subagents
    }

    /// Background tasks of this agent running at once (`max_background_tasks`).
    pub fn max_background_tasks(&self) -> u32 {
        self.max_background_tasks
    }

    /// The agent's skills (`skills:`), loaded and checked (empty without the key).
    pub fn skills(&self) -> &SkillSet {
        &self.skills
    }
}

/// What an agent's checks need besides its settings.
pub(crate) struct AgentContext<'a> {
    /// What the checks of the whole load share (limits, prompt files read).
    pub(crate) shared: &'a Shared<'a>,
    /// The tactic file (its folder holds `prompts/`).
    pub(crate) tactic: &'a Path,
    /// `agent_configs[1] (critic)`, for messages.
    pub(crate) label: String,
    /// Where the agent is written.
    pub(crate) origin: Origin,
    /// The tactic's MCP servers, which `mcp:` may name.
    pub(crate) servers: &'a [McpServerConfig],
    /// Every agent name of the tactic, which `subagents:` may name.
    pub(crate) agents: &'a [String],
}

impl AgentContext<'_> {
    fn fail(
        &self,
        origin: Option<&Origin>,
        field: &str,
        kind: impl Into<ConfigErrorKind>,
    ) -> ConfigError {
        ConfigError::new(origin.unwrap_or(&self.origin).clone(), kind)
            .in_field(format!("{}.{field}", self.label))
    }

    /// An error whose own message names the field (hints, model arguments, tools): only the agent is
    /// added.
    fn fail_named(&self, origin: &Origin, kind: impl Into<ConfigErrorKind>) -> ConfigError {
        ConfigError::new(origin.clone(), kind).in_field(self.label.clone())
    }

    /// Checks `raw` (the agent over `global`) into a spec.
    pub(crate) fn agent(&self, name: String, raw: RawAgent) -> Result<AgentSpec, ConfigError> {
        let model = match &raw.model_name {
            Some(m) if !m.value.trim().is_empty() => m.value.clone(),
            m => {
                let kind = ConfigErrorKind::Missing {
                    what: "a model name",
                    hint: "set model_name on the agent or under global",
                };
                return Err(self.fail(m.as_ref().map(|m| &m.origin), "model_name", kind));
            }
        };
        let model_args = raw.model_args.unwrap_or_else(|| At {
            value: RawModelArgs::default(),
            origin: self.origin.clone(),
        });
        let hints = raw.inference_hints;
        self.check_one_meaning(&model_args.value, hints.as_ref().map(|h| &h.value))?;
        let tasks = SubagentCheck {
            agent: &name,
            agents: self.agents,
            label: &self.label,
        };
        let subagents = tasks.subagents(raw.subagents, raw.tools.as_ref())?;
        let max_background_tasks = tasks.max_background_tasks(raw.max_background_tasks)?;
        let mcp = super::mcp::uses(raw.mcp, self.servers, &self.label)?;
        let (system_prompt, system_prompt_mcp) = match raw.system_prompt_mcp {
            None => (
                self.prompt(&name, raw.system_prompt, raw.system_prompt_path)?,
                None,
            ),
            Some(from_mcp) => {
                if raw.system_prompt.is_some() || raw.system_prompt_path.is_some() {
                    let kind = ConfigErrorKind::Invalid(
                        "set one of system_prompt, system_prompt_path and system_prompt_mcp",
                    );
                    return Err(self.fail(Some(&from_mcp.origin), "system_prompt_mcp", kind));
                }
                let source = super::mcp_prompt::prompt_source(from_mcp, &mcp, &self.label)?;
                // Replaced by the server's prompt when the servers start.
                let placeholder = Prompt::named(format!("{name}.system_prompt_mcp"), "");
                (placeholder, Some(source))
            }
        };
        Ok(AgentSpec {
            skills: super::skills::load(raw.skills, raw.tools.as_ref(), &self.label)?,
            subagents,
            max_background_tasks,
            system_prompt_mcp,
            system_prompt,
            model_args: self.model_args(model_args)?,
            inference_hints: hints.map(|h| self.hints(h)).transpose()?,
            tools: self.tools(raw.tools)?,
            mcp,
            output_schema: self.output_schema(raw.output_schema)?,
            max_answer_retries: value_or(raw.max_answer_retries, DEFAULT_MAX_ANSWER_RETRIES),
            max_tool_rounds: value_or(raw.max_tool_rounds, DEFAULT_MAX_TOOL_ROUNDS),
            max_call_retries: value_or(raw.max_call_retries, DEFAULT_MAX_CALL_RETRIES),
            max_parallel_tools: self.max_parallel_tools(raw.max_parallel_tools)?,
            context: raw.context.map(|c| self.context(c)).transpose()?,
            client_tools: raw.client_tools.is_some_and(|c| c.value),
            name,
            model,
        })
    }

    fn prompt(
        &self,
        name: &str,
        inline: Option<At<Arc<str>>>,
        path: Option<At<String>>,
    ) -> Result<Prompt, ConfigError> {
        let prompt = match (inline, path) {
            (Some(text), None) => {
                let prompt = Prompt::shared(format!("{name}.system_prompt"), text.value);
                prompt
                    .validate()
                    .and_then(|()| self.shared.probe(prompt.name(), prompt.template()))
                    .map_err(|e| self.fail(Some(&text.origin), "system_prompt", e))?;
                prompt
            }
            (None, Some(path)) => {
                let dirs = prompt_dirs(path.origin.file(), self.tactic);
                self.load_prompt(&path.value, &dirs)
                    .and_then(|p| p.validate().map(|()| p))
                    .and_then(|p| self.shared.probe(p.name(), p.template()).map(|()| p))
                    .map_err(|e| self.fail(Some(&path.origin), "system_prompt_path", e))?
            }
            (Some(_), Some(path)) => {
                let kind = ConfigErrorKind::Invalid(
                    "set either system_prompt or system_prompt_path, not both",
                );
                return Err(self.fail(Some(&path.origin), "system_prompt_path", kind));
            }
            (None, None) => {
                let kind = ConfigErrorKind::Missing {
                    what: "a system prompt",
                    hint: "set system_prompt (inline text), system_prompt_path (a file under prompts/) or system_prompt_mcp (a prompt of an MCP server)",
                };
                return Err(self.fail(None, "system_prompt", kind));
            }
        };
        Ok(prompt)
    }

    /// Finds and reads a prompt file, each file once per load, within the load's size limits.
    fn load_prompt(&self, name: &str, dirs: &[PathBuf]) -> Result<Prompt, PromptError> {
        let path = Prompt::find(name, dirs)?;
        if let Some(text) = self.shared.prompt_files.borrow().get(&path) {
            return Ok(Prompt::shared(name, text.clone()));
        }
        let text: Arc<str> = read_prompt(name, &path, self.shared.limits.per_file)?.into();
        if !self.shared.limits.within_total(text.len()) {
            return Err(PromptError::TooLarge {
                name: name.into(),
                path: path.into(),
                limit: self.shared.limits.total(),
            });
        }
        self.shared
            .prompt_files
            .borrow_mut()
            .insert(path, text.clone());
        Ok(Prompt::shared(name, text))
    }

    pub(crate) fn model_args(&self, raw: At<RawModelArgs>) -> Result<ModelArgs, ConfigError> {
        let origin_of = |field: &str| {
            let key = field.split(['.', '[']).next().unwrap_or(field);
            raw.value
                .0
                .iter()
                .find(|(k, _)| k.value == key)
                .map(|(k, _)| k.origin.clone())
                .unwrap_or_else(|| raw.origin.clone())
        };
        let map: Map<String, Value> = raw
            .value
            .0
            .iter()
            .map(|(k, v)| (k.value.clone(), v.value.clone()))
            .collect();
        let mut names_ok = self.shared.model_arg_names.borrow_mut();
        ModelArgs::from_json_checking(map, &mut names_ok).map_err(|e| {
            let origin = origin_of(&e.field);
            let field = format!("model_args.{}", e.field);
            self.fail(Some(&origin), &field, e)
        })
    }

    /// One wire field may not be set both as a request parameter and as a hint: the two mean different
    /// things (a hint is shaped per profile, e.g. negated for vLLM; a parameter is sent as written).
    fn check_one_meaning(
        &self,
        args: &RawModelArgs,
        hints: Option<&RawHints>,
    ) -> Result<(), ConfigError> {
        let Some(hints) = hints else { return Ok(()) };
        let pairs = [
            ("priority", hints.priority.as_ref().map(|h| &h.origin),
             "keep inference_hints.priority, which lllm shapes for the profile (vLLM runs lower values first, so it is negated there)"),
            ("cache_salt", hints.cache_salt.as_ref().map(|h| &h.origin),
             "keep inference_hints.cache_salt, which lllm places where the profile expects it (nvext.cache_salt for Dynamo)"),
        ];
        for (field, hint_origin, hint) in pairs {
            let Some(hint_origin) = hint_origin else {
                continue;
            };
            if let Some((key, _)) = args.0.iter().find(|(k, _)| k.value == field) {
                let kind = ConfigErrorKind::Conflict {
                    field: format!("model_args.{field}"),
                    other: hint_origin.clone(),
                    other_field: format!("inference_hints.{field}"),
                    hint,
                };
                return Err(self.fail(Some(&key.origin), &format!("model_args.{field}"), kind));
            }
        }
        Ok(())
    }

    /// `max_parallel_tools`: 1 to [`MAX_PARALLEL_TOOLS`], default [`DEFAULT_MAX_PARALLEL_TOOLS`].
    fn max_parallel_tools(&self, raw: Option<At<u32>>) -> Result<u32, ConfigError> {
        match raw {
            None => Ok(DEFAULT_MAX_PARALLEL_TOOLS),
            Some(At { value, .. }) if (1..=MAX_PARALLEL_TOOLS).contains(&value) => Ok(value),
            Some(At { origin, .. }) => Err(self.fail(
                Some(&origin),
                "max_parallel_tools",
                ConfigErrorKind::Invalid("expected a whole number from 1 to 64"),
            )),
        }
    }

    /// `context:` checked: a mapping with a window; each setting read by its rule, the rest
    /// defaults.
    fn context(&self, raw: At<Keyed<RawContext>>) -> Result<ContextPolicy, ConfigError> {
        let c = match raw.value {
            Keyed::Keys(c) => c,
            Keyed::Not(found) => {
                let keys = &["window", "compact_at", "keep_last", "session"];
                let kind = ConfigErrorKind::NotAMapping { keys, found };
                return Err(self.fail(Some(&raw.origin), "context", kind));
            }
        };
        let Some(window) = c.window else {
            let kind = ConfigErrorKind::Missing {
                what: "a window",
                hint: "set context.window to the model's context length in tokens, or `auto` to read it from the server",
            };
            return Err(self.fail(Some(&raw.origin), "context.window", kind));
        };
        let window = self.context_setting(&window, context::read_window)?;
        let compact_at = match &c.compact_at {
            Some(at) => self.context_setting(at, context::read_compact_at)?,
            None => crate::DEFAULT_COMPACT_AT,
        };
        let keep_last = match &c.keep_last {
            Some(at) => self.context_setting(at, context::read_keep_last)?,
            None => crate::DEFAULT_KEEP_LAST,
        };
        let session = match &c.session {
            Some(at) => self.context_setting(at, context::read_session)?,
            None => SessionOnCompaction::default(),
        };
        // Each setting was read by the rule `with` checks by: this cannot fail on its own.
        ContextPolicy::with(window, compact_at, keep_last, session)
            .map_err(|e| self.fail_named(&raw.origin, ConfigErrorKind::Context(e)))
    }

    /// A `context:` setting read by its rule, an error at its own line and column.
    fn context_setting<T>(
        &self,
        at: &At<Written>,
        rule: fn(&Written) -> Result<T, ContextError>,
    ) -> Result<T, ConfigError> {
        rule(&at.value).map_err(|e| self.fail_named(&at.origin, ConfigErrorKind::Context(e)))
    }

    fn hints(&self, raw: At<RawHints>) -> Result<InferenceHints, ConfigError> {
        let At { value: h, origin } = raw;
        let mut builder = InferenceHintsBuilder::default();
        if let Some(v) = &h.profile {
            builder = builder.profile(v.value);
        }
        if let Some(v) = &h.session {
            builder = builder.session(v.value);
        }
        if let Some(v) = &h.session_prefix {
            builder = builder.session_prefix(v.value.clone());
        }
        if let Some(v) = &h.fork_session {
            builder = builder.fork_session(v.value);
        }
        if let Some(v) = &h.priority {
            builder = builder.priority(v.value);
        }
        if let Some(v) = &h.strict_priority {
            builder = builder.strict_priority(v.value);
        }
        if let Some(v) = &h.osl {
            builder = builder.osl(v.value);
        }
        if let Some(v) = &h.speculative_prefill {
            builder = builder.speculative_prefill(v.value);
        }
        if let Some(v) = &h.cache_salt {
            builder = builder.cache_salt(v.value.clone());
        }
        builder.build().map_err(|e| {
            let field = match &e {
                HintsError::NotSendable { field, .. } => field.as_str(),
                HintsError::Invalid { field, .. } => field,
                _ => "",
            };
            self.fail_named(h.origin_of(field).unwrap_or(&origin), e)
        })
    }

    fn tools(
        &self,
        raw: Option<At<Vec<At<RawTool>>>>,
    ) -> Result<Vec<CommandToolConfig>, ConfigError> {
        let Some(raw) = raw else {
            return Ok(Vec::new());
        };
        let mut tools: Vec<CommandToolConfig> = Vec::with_capacity(raw.value.len());
        let mut seen: std::collections::HashMap<String, Origin> = std::collections::HashMap::new();
        for (i, tool) in raw.value.into_iter().enumerate() {
            let name_origin = tool.value.name.origin.clone();
            if let Some(first) = seen.get(&tool.value.name.value) {
                let kind = ConfigErrorKind::Duplicate {
                    name: tool.value.name.value.clone(),
                    first: first.clone(),
                    what: "tool names",
                };
                return Err(self.fail(Some(&name_origin), &format!("tools[{i}].name"), kind));
            }
            let config = self.tool(tool.value, &format!("tools[{i}]"))?;
            seen.insert(config.name.clone(), name_origin);
            tools.push(config);
        }
        Ok(tools)
    }

    fn tool(&self, raw: RawTool, label: &str) -> Result<CommandToolConfig, ConfigError> {
        // Relative paths are relative to the file that wrote the tool, which may be a base file.
        let dir = raw.command.origin.file().parent().map(Path::to_path_buf);
        let origins = [
            ("name", raw.name.origin.clone()),
            ("parameters", opt_origin(&raw.parameters, &raw.name.origin)),
            ("command", raw.command.origin.clone()),
            ("timeout_s", opt_origin(&raw.timeout_s, &raw.name.origin)),
            (
                "max_output_bytes",
                opt_origin(&raw.max_output_bytes, &raw.name.origin),
            ),
            ("env", opt_origin(&raw.env, &raw.name.origin)),
        ];
        let config = CommandToolConfig {
            name: raw.name.value,
            description: raw.description,
            parameters: raw
                .parameters
                .map(|p| p.value)
                .unwrap_or_else(crate::tool::empty_object_schema),
            command: raw.command.value,
            timeout_s: raw
                .timeout_s
                .map_or(crate::tool::DEFAULT_COMMAND_TIMEOUT_S, |t| t.value),
            max_output_bytes: raw
                .max_output_bytes
                .map_or(crate::tool::DEFAULT_MAX_OUTPUT_BYTES, |m| m.value),
            env: raw.env.map(|e| e.value).unwrap_or_default(),
            confirm: raw.confirm.is_some_and(|c| c.value),
            idempotent: raw.idempotent.is_some_and(|c| c.value),
            working_dir: dir,
        };
        config
            .validate()
            .and_then(|()| self.check_program(&config))
            .map_err(|e: ToolConfigError| {
                let key = e.field.split(['.', '[']).next().unwrap_or("");
                let origin = origins
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, o)| o.clone());
                let origin = origin.unwrap_or_else(|| self.origin.clone());
                let field = format!("{}.{label}.{}", self.label, e.field);
                ConfigError::new(origin, e).in_field(field)
            })?;
        Ok(config)
    }

    /// [`CommandToolConfig::check_program`], once per program and folder in a load (many agents
    /// often share their tools).
    fn check_program(&self, config: &CommandToolConfig) -> Result<(), ToolConfigError> {
        let key = (
            config.command.first().cloned().unwrap_or_default(),
            config.working_dir.clone(),
        );
        if let Some(problem) = self.shared.programs.borrow().get(&key) {
            return match problem {
                None => Ok(()),
                Some(problem) => Err(ToolConfigError {
                    tool: config.name.clone(),
                    field: "command[0]".into(),
                    problem: problem.clone(),
                }),
            };
        }
        let result = config.check_program();
        let problem = result.as_ref().err().map(|e| e.problem.clone());
        self.shared.programs.borrow_mut().insert(key, problem);
        result
    }

    fn output_schema(&self, raw: Option<At<Value>>) -> Result<Option<Schema>, ConfigError> {
        let Some(schema) = raw else { return Ok(None) };
        if output_schema_problem(&schema.value).is_some() {
            let kind = ConfigErrorKind::Invalid(
                "must be a JSON Schema mapping, such as {type: object, properties: {...}}",
            );
            return Err(self.fail(Some(&schema.origin), "output_schema", kind));
        }
        Schema::compile(&schema.value)
            .map(Some)
            .map_err(|e| self.fail(Some(&schema.origin), "output_schema", e))
    }
}

impl RawHints {
    /// Where the hint field called `name` is written.
    fn origin_of(&self, name: &str) -> Option<&Origin> {
        fn o<T>(v: &Option<At<T>>) -> Option<&Origin> {
            v.as_ref().map(|v| &v.origin)
        }
        match name {
            "profile" => o(&self.profile),
            "session" => o(&self.session),
            "session_prefix" => o(&self.session_prefix),
            "fork_session" => o(&self.fork_session),
            "priority" => o(&self.priority),
            "strict_priority" => o(&self.strict_priority),
            "osl" => o(&self.osl),
            "speculative_prefill" => o(&self.speculative_prefill),
            "cache_salt" => o(&self.cache_salt),
            _ => None,
        }
    }
}

impl RawAgent {
    /// Expands `${NAME}` references in every string outside free-form values, and in `model_args`.
    pub(crate) fn expand_env(
        &mut self,
        label: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        let fail = |origin: &Origin, field: &str, e: env::EnvError| {
            ConfigError::new(origin.clone(), e).in_field(format!("{label}.{field}"))
        };
        let hints = self.inference_hints.as_mut().map(|h| &mut h.value);
        let (prefix, salt) = match hints {
            Some(h) => (h.session_prefix.as_mut(), h.cache_salt.as_mut()),
            None => (None, None),
        };
        for (field, value) in [
            ("model_name", self.model_name.as_mut()),
            ("system_prompt_path", self.system_prompt_path.as_mut()),
            ("inference_hints.session_prefix", prefix),
            ("inference_hints.cache_salt", salt),
        ] {
            if let Some(value) = value {
                value.value =
                    env::expand(&value.value, lookup).map_err(|e| fail(&value.origin, field, e))?;
            }
        }
        if let Some(prompt) = self.system_prompt.as_mut() {
            if prompt.value.contains("${") {
                let expanded = env::expand(&prompt.value, lookup)
                    .map_err(|e| fail(&prompt.origin, "system_prompt", e))?;
                prompt.value = expanded.into();
            }
        }
        for (key, value) in self
            .model_args
            .iter_mut()
            .flat_map(|a| a.value.0.iter_mut())
        {
            env::expand_model_arg(&key.value, &mut value.value, lookup)
                .map_err(|(field, e)| fail(&value.origin, &field, e))?;
        }
        Ok(())
    }
}

fn value_or(value: Option<At<u32>>, default: u32) -> u32 {
    value.map_or(default, |v| v.value)
}

fn opt_origin<T>(value: &Option<At<T>>, fallback: &Origin) -> Origin {
    value
        .as_ref()
        .map_or_else(|| fallback.clone(), |v| v.origin.clone())
}

/// `prompts/` beside the file that names the prompt, beside the tactic file, then in the working
/// directory.
fn prompt_dirs(source: &Path, tactic: &Path) -> Vec<PathBuf> {
    let here = |file: &Path| {
        file.parent()
            .unwrap_or_else(|| Path::new("."))
            .join("prompts")
    };
    let mut dirs = vec![here(source)];
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    for dir in [here(tactic), cwd.join("prompts")] {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}
