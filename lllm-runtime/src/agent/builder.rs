//! Building agents: from Rust with [`AgentBuilder`], or from a tactic file's [`AgentSpec`].

use std::sync::{Arc, Mutex};

use lllm_core::{config, AgentSpec, InferenceHints, ModelArgs, Prompt, Usage};
use serde_json::Value;

use super::{Agent, AgentError, DialogTable, OutputSchema};
use crate::invoker::Invoker;
use crate::retry::RetryPolicy;
use crate::tools::{CommandTool, Tool, Toolbox};
use crate::trace::TraceRecorder;

/// Builds an [`Agent`]. Setters never fail; [`build`](Self::build) reports what is missing or invalid.
#[derive(Debug, Default)]
pub struct AgentBuilder {
    name: Option<String>,
    system_prompt: Option<Prompt>,
    model: Option<String>,
    invoker: Option<Arc<dyn Invoker>>,
    model_args: ModelArgs,
    inference_hints: Option<InferenceHints>,
    retry: Option<RetryPolicy>,
    max_llm_recall: Option<u32>,
    tools: Vec<Arc<dyn Tool>>,
    output_schema: Option<Value>,
    max_interrupt_steps: Option<u32>,
    max_exception_retry: Option<u32>,
    trace: Option<Arc<TraceRecorder>>,
}

impl AgentBuilder {
    /// The agent's name (required).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The system prompt template (required); a `&str` is an inline template.
    pub fn system_prompt(mut self, prompt: impl Into<PromptArg>) -> Self {
        self.system_prompt = Some(prompt.into().0);
        self
    }

    /// The model, in `provider/model` form or as the server names it (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// What sends the model calls (required).
    pub fn invoker(mut self, invoker: Arc<dyn Invoker>) -> Self {
        self.invoker = Some(invoker);
        self
    }

    /// Model arguments.
    pub fn model_args(mut self, args: ModelArgs) -> Self {
        self.model_args = args;
        self
    }

    /// Inference hints (off unless set).
    pub fn inference_hints(mut self, hints: InferenceHints) -> Self {
        self.inference_hints = Some(hints);
        self
    }

    /// Retries of a failed model call (default 3).
    pub fn max_llm_recall(mut self, retries: u32) -> Self {
        self.max_llm_recall = Some(retries);
        self
    }

    /// Adds a tool the model may call.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds tools the model may call.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Every answer must be JSON matching this schema (retried up to `max_exception_retry` times).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Tool rounds allowed in one respond before a final answer without tools (default 5).
    pub fn max_interrupt_steps(mut self, rounds: u32) -> Self {
        self.max_interrupt_steps = Some(rounds);
        self
    }

    /// Answers re-asked after they fail the output schema (default 3).
    pub fn max_exception_retry(mut self, retries: u32) -> Self {
        self.max_exception_retry = Some(retries);
        self
    }

    /// Records every model call of the agent in a content-free trace.
    pub fn trace(mut self, recorder: Arc<TraceRecorder>) -> Self {
        self.trace = Some(recorder);
        self
    }

    /// Full retry settings; `max_llm_recall`, when also set, overrides its count.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Validates and builds the agent.
    pub fn build(self) -> Result<Agent, AgentError> {
        let missing = |what: &str| AgentError::Build(format!("{what} is required"));
        let name = self
            .name
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| missing("a name"))?;
        let system_prompt = self
            .system_prompt
            .ok_or_else(|| missing(&format!("agent `{name}`: a system prompt")))?;
        let model = self
            .model
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| missing(&format!("agent `{name}`: a model")))?;
        let invoker = self
            .invoker
            .ok_or_else(|| missing(&format!("agent `{name}`: an invoker")))?;
        self.model_args
            .validate()
            .map_err(|source| AgentError::ModelArgs {
                agent: name.clone(),
                source,
            })?;
        system_prompt
            .validate()
            .map_err(|source| AgentError::Prompt {
                agent: name.clone(),
                source,
            })?;
        let toolbox = Toolbox::new(self.tools)
            .map_err(|problem| AgentError::Build(format!("agent `{name}`: {problem}")))?;
        let output_schema = self
            .output_schema
            .map(|schema| OutputSchema::new(&format!("{name}_answer"), &schema))
            .transpose()
            .map_err(|problem| AgentError::Build(format!("agent `{name}`: {problem}")))?;
        let mut retry = self.retry.unwrap_or_default();
        if let Some(n) = self.max_llm_recall {
            retry.max_retries = n;
        }
        Ok(Agent {
            name,
            system_prompt,
            model,
            invoker,
            model_args: Arc::new(self.model_args),
            hints: self.inference_hints,
            retry,
            toolbox,
            output_schema,
            max_interrupt_steps: self
                .max_interrupt_steps
                .unwrap_or(config::DEFAULT_MAX_INTERRUPT_STEPS),
            max_exception_retry: self
                .max_exception_retry
                .unwrap_or(config::DEFAULT_MAX_EXCEPTION_RETRY),
            usage: Mutex::new(Usage::default()),
            trace: self.trace,
            table: Mutex::new(DialogTable::default()),
        })
    }
}

/// A system prompt argument: a [`Prompt`], or text taken as an inline template.
#[derive(Debug)]
pub struct PromptArg(Prompt);

impl From<Prompt> for PromptArg {
    fn from(prompt: Prompt) -> Self {
        PromptArg(prompt)
    }
}

impl From<&str> for PromptArg {
    fn from(text: &str) -> Self {
        PromptArg(Prompt::inline(text))
    }
}

impl From<String> for PromptArg {
    fn from(text: String) -> Self {
        PromptArg(Prompt::inline(text))
    }
}

impl Agent {
    /// A builder.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// An agent as a tactic file describes it.
    pub fn from_spec(spec: &AgentSpec, invoker: Arc<dyn Invoker>) -> Result<Agent, AgentError> {
        Self::spec_builder(spec, invoker)?.build()
    }

    /// A builder holding what a tactic file says of an agent, to add to (a trace, tools).
    pub fn spec_builder(
        spec: &AgentSpec,
        invoker: Arc<dyn Invoker>,
    ) -> Result<AgentBuilder, AgentError> {
        let mut builder = Agent::builder()
            .name(spec.name.clone())
            .system_prompt(spec.system_prompt.clone())
            .model(spec.model.clone())
            .invoker(invoker)
            .model_args(spec.model_args.clone())
            .max_llm_recall(spec.max_llm_recall)
            .max_interrupt_steps(spec.max_interrupt_steps)
            .max_exception_retry(spec.max_exception_retry)
            .tools(
                spec.tools
                    .iter()
                    .map(|config| {
                        CommandTool::new(config.clone())
                            .map(|tool| Arc::new(tool) as Arc<dyn Tool>)
                            .map_err(|problem| {
                                AgentError::Build(format!("agent `{}`: {problem}", spec.name))
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            );
        if let Some(schema) = &spec.output_schema {
            builder = builder.output_schema(schema.clone());
        }
        if let Some(hints) = &spec.inference_hints {
            builder = builder.inference_hints(hints.clone());
        }
        Ok(builder)
    }
}
