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
mod evals;
mod evals_raw;
mod json;
mod keyed;
mod mcp;
mod mcp_auth;
mod mcp_prompt;
mod merge;
mod origin;
mod raw;
mod schema;
mod secrets;
mod skills;
mod source;
mod span;
mod steps;
mod steps_error;
mod subagents;
mod waiting;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_base;
#[cfg(test)]
mod tests_context;
#[cfg(test)]
mod tests_fallback;
#[cfg(test)]
mod tests_files;
#[cfg(test)]
mod tests_limits;
#[cfg(test)]
mod tests_mcp;
#[cfg(test)]
mod tests_mcp_auth;
#[cfg(test)]
mod tests_mcp_resources;
#[cfg(test)]
mod tests_skills;
#[cfg(test)]
mod tests_steps;
#[cfg(test)]
mod tests_subagents;
#[cfg(test)]
mod tests_waiting;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use agent::{
    AgentSpec, DEFAULT_MAX_ANSWER_RETRIES, DEFAULT_MAX_CALL_RETRIES, DEFAULT_MAX_PARALLEL_TOOLS,
    DEFAULT_MAX_TOOL_ROUNDS, MAX_PARALLEL_TOOLS,
};
pub use env::EnvError;
pub use error::{ConfigError, ConfigErrorKind};
pub use evals::{evals_schema, load_evals, EvalCase, EvalSuite, MAX_CASES, MAX_TRIALS};
pub use origin::{Origin, Position};
pub use schema::tactic_schema;
pub use source::MAX_BASE_DEPTH;
pub use steps::{is_variable_name, Branch, Step, Turn, DEFAULT_DIALOG};
pub use steps_error::StepsError;
pub use waiting::waiting_turns;

use crate::mcp::McpServerConfig;
use crate::Limit;
use agent::AgentContext;
use keyed::Keyed;
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
    mcp_servers: Vec<McpServerConfig>,
    limits: crate::RunLimits,
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
    /// The run's limits (`limits:`).
    pub fn limits(&self) -> &crate::RunLimits {
        &self.limits
    }
    /// The MCP servers declared under `mcp_servers:`, in file order.
    pub fn mcp_servers(&self) -> &[McpServerConfig] {
        &self.mcp_servers
    }
    /// The MCP servers at least one agent uses: those a run starts.
    pub fn used_mcp_servers(&self) -> impl Iterator<Item = &McpServerConfig> {
        self.mcp_servers.iter().filter(|server| {
            self.agents
                .iter()
                .any(|a| a.mcp().iter().any(|u| u.server == server.name))
        })
    }
}

/// Loads a tactic file, expanding `${ENV}` from the process environment (which may also set
/// `LLLM_MAX_FILE_BYTES`). The same as `TacticLoader::new().load(path)`.
pub fn load_tactic(path: &Path) -> Result<TacticSpec, ConfigError> {
    TacticLoader::new().load(path)
}

/// Parses a tactic from `bytes` as if read from `path` (used for messages, and to find `prompts/` and
/// `base:` files), expanding `${ENV}` with `env`.
pub fn parse_tactic(
    bytes: &[u8],
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TacticSpec, ConfigError> {
    parse_checked(bytes, path, env, None, None)
}

/// The variable that sets the most bytes one file of a tactic may have (when a [`TacticLoader`] is
/// not given a limit).
pub const MAX_FILE_BYTES_VAR: &str = "LLLM_MAX_FILE_BYTES";

/// Where `${ENV}` values come from.
type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Loads tactic files with settings: where `${ENV}` values come from, and how large the files may be.
///
/// Setters never fail; a setting that cannot be used (a limit of 0, an `LLLM_MAX_FILE_BYTES` that is
/// not a number) is an error of [`load`](Self::load) or [`parse`](Self::parse).
///
/// Limits: each file a tactic reads (the tactic, each `base:` file, each prompt) may have at most
/// [`DEFAULT_MAX_FILE_BYTES`](crate::DEFAULT_MAX_FILE_BYTES) bytes (16 MiB) unless set here or with
/// `LLLM_MAX_FILE_BYTES`; all of them together at most
/// [`TOTAL_BYTES_FACTOR`](crate::TOTAL_BYTES_FACTOR) times that unless set here.
///
/// ```
/// use lllm_core::TacticLoader;
/// let loader = TacticLoader::new()
///     .max_file_bytes(1024 * 1024)
///     .env(|name| (name == "PORT").then(|| "8000".to_owned()));
/// let yaml = b"agent_configs: [{name: a, model_name: m, system_prompt: hi}]";
/// let spec = loader.parse(yaml, std::path::Path::new("t.yaml")).expect("valid");
/// assert_eq!(spec.agents().len(), 1);
/// ```
#[derive(Clone)]
pub struct TacticLoader {
    max_file_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
    env: EnvLookup,
}

impl std::fmt::Debug for TacticLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TacticLoader")
            .field("max_file_bytes", &self.max_file_bytes)
            .field("max_total_bytes", &self.max_total_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for TacticLoader {
    fn default() -> Self {
        TacticLoader {
            max_file_bytes: None,
            max_total_bytes: None,
            env: Arc::new(|name: &str| std::env::var(name).ok()),
        }
    }
}

impl TacticLoader {
    /// A loader with the default limits, reading `${ENV}` and `LLLM_MAX_FILE_BYTES` from the process
    /// environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most bytes one file (the tactic, a base, a prompt) may have; wins over
    /// `LLLM_MAX_FILE_BYTES`. Must be at least 1.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = Some(bytes);
        self
    }

    /// The most bytes all the files of one load may have together (default: four times the per-file
    /// limit). Must be at least 1.
    pub fn max_total_bytes(mut self, bytes: u64) -> Self {
        self.max_total_bytes = Some(bytes);
        self
    }

    /// Where `${NAME}` references (and `LLLM_MAX_FILE_BYTES`) are looked up, instead of the process
    /// environment.
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(lookup);
        self
    }

    /// Loads the tactic file at `path`.
    pub fn load(&self, path: &Path) -> Result<TacticSpec, ConfigError> {
        let env = |name: &str| (self.env)(name);
        let limits = Self::limits_from(self.max_file_bytes, self.max_total_bytes, &env, path)?;
        let bytes = source::read_tactic(path, &limits)?;
        parse_with(&bytes, path, &env, &limits)
    }

    /// Parses a tactic from `bytes` as if read from `path` (for messages, and to find `prompts/` and
    /// `base:` files).
    pub fn parse(&self, bytes: &[u8], path: &Path) -> Result<TacticSpec, ConfigError> {
        let env = |name: &str| (self.env)(name);
        parse_checked(bytes, path, &env, self.max_file_bytes, self.max_total_bytes)
    }

    fn limits_from(
        per_file: Option<u64>,
        total: Option<u64>,
        env: &dyn Fn(&str) -> Option<String>,
        path: &Path,
    ) -> Result<Limits, ConfigError> {
        let fail = |name: &'static str, problem: String| {
            ConfigError::new(
                Origin::new(path.into(), None),
                ConfigErrorKind::Setting { name, problem },
            )
        };
        let per_file = match per_file {
            Some(0) => return Err(fail("max_file_bytes", "must be at least 1".into())),
            Some(n) => n,
            None => match env(MAX_FILE_BYTES_VAR) {
                None => crate::files::DEFAULT_MAX_FILE_BYTES,
                Some(text) if text.trim().is_empty() => crate::files::DEFAULT_MAX_FILE_BYTES,
                Some(text) => match text.trim().parse::<u64>() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        return Err(fail(
                            MAX_FILE_BYTES_VAR,
                            format!(
                                "`{}` is not a number of bytes of 1 or more",
                                error::shorten(&text)
                            ),
                        ))
                    }
                },
            },
        };
        let total = match total {
            Some(0) => return Err(fail("max_total_bytes", "must be at least 1".into())),
            Some(n) => n,
            None => per_file.saturating_mul(crate::files::TOTAL_BYTES_FACTOR),
        };
        Ok(Limits {
            per_file,
            total,
            read: Cell::new(0),
        })
    }
}

/// The size limits of one load, and the bytes read so far.
#[derive(Debug)]
pub(crate) struct Limits {
    /// Most bytes of one file.
    pub(crate) per_file: u64,
    /// Most bytes of all files together.
    total: u64,
    read: Cell<u64>,
}

impl Limits {
    /// Counts `bytes` more read; false when that passes the total.
    pub(crate) fn within_total(&self, bytes: usize) -> bool {
        let read = self.read.get().saturating_add(bytes as u64);
        self.read.set(read);
        read <= self.total
    }

    /// Most bytes of all files together.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Counts `bytes` more read, failing at `origin` past the total.
    pub(crate) fn spend(&self, bytes: usize, origin: &Origin) -> Result<(), ConfigError> {
        let read = self.read.get().saturating_add(bytes as u64);
        self.read.set(read);
        if read > self.total {
            let factor = self.total / self.per_file.max(1);
            let kind = ConfigErrorKind::TooLargeTogether {
                limit: self.total,
                factor,
            };
            return Err(ConfigError::new(origin.clone(), kind));
        }
        Ok(())
    }
}

/// A command tool's program and the folder it runs in.
pub(crate) type ProgramKey = (String, Option<PathBuf>);

/// What the checks of one load share: its limits, the prompt files read (each read once), and the
/// templates whose rendering was already tried.
pub(crate) struct Shared<'a> {
    pub(crate) limits: &'a Limits,
    pub(crate) prompt_files: RefCell<HashMap<PathBuf, Arc<str>>>,
    pub(crate) probed: RefCell<HashSet<Arc<str>>>,
    /// `model_args` keys whose names were checked (global's keys reach every agent).
    pub(crate) model_arg_names: RefCell<HashSet<String>>,
    /// Command tool programs looked up (program, working folder), with the problem found if any.
    pub(crate) programs: RefCell<HashMap<ProgramKey, Option<String>>>,
}

/// Parses `bytes` given in memory, held to the same limits as a file.
fn parse_checked(
    bytes: &[u8],
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    per_file: Option<u64>,
    total: Option<u64>,
) -> Result<TacticSpec, ConfigError> {
    let limits = TacticLoader::limits_from(per_file, total, env, path)?;
    let origin = Origin::new(path.into(), None);
    if bytes.len() as u64 > limits.per_file {
        let kind = ConfigErrorKind::TooLarge {
            limit: limits.per_file,
        };
        return Err(ConfigError::new(origin, kind));
    }
    limits.spend(bytes.len(), &origin)?;
    parse_with(bytes, path, env, &limits)
}

impl Shared<'_> {
    /// Why `program` cannot be started in `dir`, looked up once per load.
    pub(crate) fn program_problem(&self, program: &str, dir: &Path) -> Option<String> {
        let key = (program.to_owned(), Some(dir.to_path_buf()));
        if let Some(problem) = self.programs.borrow().get(&key) {
            return problem.clone();
        }
        let problem = crate::tool::program_problem(program, Some(dir));
        self.programs.borrow_mut().insert(key, problem.clone());
        problem
    }

    /// Renders `template` once (see [`crate::Prompt::check_bounds`]), unless the same text was
    /// already tried in this load.
    pub(crate) fn probe(&self, name: &str, template: &str) -> Result<(), crate::PromptError> {
        if self.probed.borrow().contains(template) {
            return Ok(());
        }
        crate::Prompt::named(name, template).check_bounds(&crate::PromptVars::new())?;
        self.probed.borrow_mut().insert(Arc::from(template));
        Ok(())
    }
}

fn parse_with(
    bytes: &[u8],
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    limits: &Limits,
) -> Result<TacticSpec, ConfigError> {
    let file: Arc<Path> = path.into();
    let raw = source::parse_one(bytes, &file)?;
    let mut chain: Vec<PathBuf> = path.canonicalize().into_iter().collect();
    let root = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .canonicalize()
        .ok();
    let raw = source::with_bases(raw, root.as_deref(), &mut chain, limits)?;
    let shared = Shared {
        limits,
        prompt_files: RefCell::default(),
        probed: RefCell::default(),
        model_arg_names: RefCell::default(),
        programs: RefCell::default(),
    };
    Loader {
        path,
        env,
        shared: &shared,
    }
    .load(raw, &file)
}

struct Loader<'a> {
    path: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    shared: &'a Shared<'a>,
}

impl Loader<'_> {
    fn load(&self, raw: RawTactic, file: &Arc<Path>) -> Result<TacticSpec, ConfigError> {
        let top = Origin::new(file.clone(), None);
        let servers = mcp::servers(raw.mcp_servers, self.env, &|program, dir| {
            self.shared.program_problem(program, dir)
        })?;
        let global = self.global(raw.global, &servers)?;
        let agents = self.agents(raw.agent_configs, &global, &top, &servers)?;
        let names: Vec<String> = agents.iter().map(|a| a.name().to_owned()).collect();
        let mut origins = StepOrigins::default();
        let mut steps = match raw.steps {
            Some(steps) => steps::parse_steps(steps, "steps", &mut origins)?,
            None => Vec::new(),
        };
        // `${NAME}` is expanded in every string value of the file, steps' messages included.
        steps::expand_env(&mut steps, self.env)?;
        let mut output = raw.output;
        if let Some(output) = output.as_mut() {
            output.value = env::expand(&output.value, self.env)
                .map_err(|e| ConfigError::new(output.origin.clone(), e).in_field("output"))?;
        }
        if !steps.is_empty() {
            if let Some(output) = &output {
                origins.note_output(&output.origin);
            }
            check::check_steps(&steps, &names, output.as_ref().map(|o| o.value.as_str()))
                .map_err(|(path, problem)| origins.error(&path, problem, &top))?;
            self.probe_steps(&steps, output.as_ref())?;
        }
        let tactic_type = tactic_type(raw.tactic_type, &steps, output.as_ref(), &top)?;
        Ok(TacticSpec {
            path: self.path.to_owned(),
            tactic_type,
            agents,
            steps,
            output: output.map(|o| o.value),
            config: raw.config.map_or(serde_json::Value::Null, |json| json.0),
            mcp_servers: servers,
            limits: limits(raw.limits)?,
        })
    }

    /// Tries each step's `receive` and the `output` template once, so that a template that would take
    /// too much work or write too much is refused before the run.
    fn probe_steps(&self, steps: &[Step], output: Option<&At<String>>) -> Result<(), ConfigError> {
        for turn in steps.iter().flat_map(Step::turns) {
            if let Some(template) = &turn.receive {
                let at = format!("{}.receive", turn.at);
                self.shared
                    .probe(&at, template)
                    .map_err(|e| ConfigError::new(turn.origin.clone(), e).in_field(at))?;
            }
        }
        if let Some(output) = output {
            self.shared
                .probe("output", &output.value)
                .map_err(|e| ConfigError::new(output.origin.clone(), e).in_field("output"))?;
        }
        Ok(())
    }

    fn global(
        &self,
        global: Option<At<RawAgent>>,
        servers: &[McpServerConfig],
    ) -> Result<RawAgent, ConfigError> {
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
                shared: self.shared,
                servers,
                agents: &[],
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
        servers: &[McpServerConfig],
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
        // Every name first: a subagent may name an agent written after its own.
        let names: Vec<String> = list
            .value
            .iter()
            .filter_map(|a| a.value.name.as_ref().map(|n| n.value.clone()))
            .collect();
        let mut agents: Vec<AgentSpec> = Vec::with_capacity(list.value.len());
        let mut seen: HashMap<String, Origin> = HashMap::with_capacity(list.value.len());
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
            if let Some(first) = seen.get(&name.value) {
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
                shared: self.shared,
                servers,
                agents: &names,
            };
            let spec = context.agent(name.value.clone(), agent.over(global))?;
            seen.insert(name.value, name.origin);
            agents.push(spec);
        }
        Ok(agents)
    }
}

/// `limits:`, each value read as `--limit` reads it ([`crate::RunLimits::set_limit`]).
fn limits(raw: Option<At<Keyed<raw::RawLimits>>>) -> Result<crate::RunLimits, ConfigError> {
    let mut limits = crate::RunLimits::default();
    let raw = match raw {
        None => return Ok(limits),
        Some(At {
            value: Keyed::Keys(raw),
            ..
        }) => raw,
        Some(At {
            value: Keyed::Not(found),
            origin,
        }) => {
            let kind = ConfigErrorKind::NotAMapping {
                keys: &crate::RunLimits::NAMES,
                found,
            };
            return Err(ConfigError::new(origin, kind).in_field("limits"));
        }
    };
    let written = [
        (Limit::MaxRequests, raw.max_requests),
        (Limit::MaxTotalTokens, raw.max_total_tokens),
        (Limit::MaxToolCalls, raw.max_tool_calls),
        (Limit::MaxSeconds, raw.max_seconds),
    ];
    for (limit, value) in written {
        if let Some(At { value, origin }) = value {
            limits.set_limit(limit, &value).map_err(|e| {
                ConfigError::new(origin, e).in_field(format!("limits.{}", limit.name()))
            })?;
        }
    }
    Ok(limits)
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
