//! The tactic file exactly as written: every key known, every value optional and located, nothing
//! merged yet. The tactic JSON Schema is derived from these types, so their doc comments are the
//! schema's descriptions.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::span::At;
use crate::hints::{ForkSession, Profile};

/// An lllm tactic: agents, and optionally the steps `lllm run` executes.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "lllm tactic")]
pub(crate) struct RawTactic {
    /// Another tactic file this one extends, relative to this file. Mappings merge key by key (this
    /// file wins); lists and values are replaced.
    pub(crate) base: Option<At<String>>,
    /// What runs the tactic: `chat` (the default without steps), `steps` (the default with steps), or
    /// the name of a tactic registered in Rust.
    pub(crate) tactic_type: Option<At<String>>,
    /// Settings applied to every agent (deep merge; the agent wins). Takes every agent key but `name`.
    pub(crate) global: Option<At<RawAgent>>,
    /// The agents.
    pub(crate) agent_configs: Option<At<Vec<At<RawAgent>>>>,
    /// What `lllm run` executes, in order.
    pub(crate) steps: Option<At<Vec<At<RawStep>>>>,
    /// Template of the final answer, over the saved variables and `input`.
    pub(crate) output: Option<At<String>>,
    /// Free-form settings for a tactic written in Rust.
    pub(crate) config: Option<Value>,
}

/// One agent (also the keys of `global`, which has no `name`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Agent")]
pub(crate) struct RawAgent {
    /// Unique name of the agent.
    pub(crate) name: Option<At<String>>,
    /// Model name, `provider/model` (LiteLLM style); an OpenAI-compatible prefix is stripped.
    pub(crate) model_name: Option<At<String>>,
    /// Inline system prompt (a minijinja template).
    pub(crate) system_prompt: Option<At<std::sync::Arc<str>>>,
    /// System prompt file under `prompts/` (`.md`, `.j2`, `.txt` tried in order).
    pub(crate) system_prompt_path: Option<At<String>>,
    /// Request parameters (`temperature`, `max_tokens`, ...) and client settings (`api_base`,
    /// `api_key`, `timeout`, `deadline`, `extra_headers`, `extra_body`).
    pub(crate) model_args: Option<At<RawModelArgs>>,
    /// Inference hints sent with every model call of this agent.
    pub(crate) inference_hints: Option<At<RawHints>>,
    /// Command tools the agent may call.
    pub(crate) tools: Option<At<Vec<At<RawTool>>>>,
    /// JSON Schema every answer must match.
    pub(crate) output_schema: Option<At<Value>>,
    /// Re-asks after an answer fails to parse or validate (default 3). Alias: `max_exception_retry`.
    #[serde(alias = "max_exception_retry")]
    pub(crate) max_answer_retries: Option<At<u32>>,
    /// Tool rounds allowed in one respond (default 5). Alias: `max_interrupt_steps`.
    #[serde(alias = "max_interrupt_steps")]
    pub(crate) max_tool_rounds: Option<At<u32>>,
    /// Retries of a failed model call (default 3). Alias: `max_llm_recall`.
    #[serde(alias = "max_llm_recall")]
    pub(crate) max_call_retries: Option<At<u32>>,
}

/// The aliases the retry knobs accept (the Python lllm names), for the schema.
pub(crate) const AGENT_KEY_ALIASES: [(&str, &str); 3] = [
    ("max_exception_retry", "max_answer_retries"),
    ("max_interrupt_steps", "max_tool_rounds"),
    ("max_llm_recall", "max_call_retries"),
];

/// Model arguments in file order, each key and value with its position.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawModelArgs(pub(crate) Vec<(At<String>, At<Value>)>);

impl<'de> Deserialize<'de> for RawModelArgs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = RawModelArgs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of model arguments")
            }
            fn visit_unit<E>(self) -> Result<RawModelArgs, E> {
                Ok(RawModelArgs::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawModelArgs, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<At<String>>()? {
                    entries.push((key, map.next_value::<At<Value>>()?));
                }
                Ok(RawModelArgs(entries))
            }
        }
        deserializer.deserialize_any(Entries)
    }
}

impl JsonSchema for RawModelArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ModelArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "Request parameters, passed into the request body as written, and client settings.",
            "properties": {
                "api_base": {"type": "string", "description": "Base URL of the OpenAI-compatible API (else OPENAI_BASE_URL)."},
                "api_key": {"type": "string", "description": "Bearer token (else OPENAI_API_KEY)."},
                "timeout": {"type": ["number", "string"], "description": "Seconds one request may take."},
                "deadline": {"type": ["number", "string"], "description": "Seconds a whole respond may take."},
                "extra_headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Headers that win over hint headers."},
                "extra_body": {"type": "object", "description": "JSON merged over the request body; wins over hints at every leaf."}
            },
            "additionalProperties": true
        })
    }
}

/// Inference hints as written: what the agent tells the serving stack about each call.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InferenceHints")]
pub(crate) struct RawHints {
    /// Which server the hints are shaped for (default `openai`).
    pub(crate) profile: Option<At<Profile>>,
    /// Send session identity (default true).
    pub(crate) session: Option<At<bool>>,
    /// Session ids become `<prefix>:<dialog id>`.
    pub(crate) session_prefix: Option<At<String>>,
    /// How forks identify themselves: `own` (default) or `family`.
    pub(crate) fork_session: Option<At<ForkSession>>,
    /// Priority; higher is more urgent (dynamo, vllm, sglang).
    pub(crate) priority: Option<At<i32>>,
    /// Dynamo router queue tier.
    pub(crate) strict_priority: Option<At<u32>>,
    /// Expected output tokens (dynamo).
    pub(crate) osl: Option<At<u32>>,
    /// Ask Dynamo to prefill the predicted next-turn prefix.
    pub(crate) speculative_prefill: Option<At<bool>>,
    /// Prefix-cache salt, 1-128 characters without `@ / \` or NUL (dynamo, vllm).
    pub(crate) cache_salt: Option<At<String>>,
}

/// A command tool as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CommandTool")]
pub(crate) struct RawTool {
    /// Tool name, `[A-Za-z0-9_-]`, at most 64 characters.
    pub(crate) name: At<String>,
    /// What the tool does, for the model.
    pub(crate) description: String,
    /// JSON Schema of the arguments (an object schema).
    pub(crate) parameters: Option<At<Value>>,
    /// The program and its arguments; items may use `{{ arg }}`. No shell is used.
    pub(crate) command: At<Vec<String>>,
    /// Seconds the program may run (default 30).
    pub(crate) timeout_s: Option<At<f64>>,
    /// Most bytes of output kept (default 65536).
    pub(crate) max_output_bytes: Option<At<usize>>,
    /// Environment variables passed through besides PATH, HOME, LANG, LC_ALL, TZ and TMPDIR.
    pub(crate) env: Option<At<Vec<String>>>,
}

/// One step: a turn (`agent:`), parallel branches (`parallel:`), or inside a branch a sequence
/// (`steps:`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Step")]
pub(crate) struct RawStep {
    /// The agent that answers.
    pub(crate) agent: Option<At<String>>,
    /// The dialog's alias (default `main`); opened on first use.
    pub(crate) dialog: Option<At<String>>,
    /// A message (minijinja over the variables) the dialog receives before the answer.
    pub(crate) receive: Option<At<String>>,
    /// Store the answer text as this variable.
    pub(crate) save: Option<At<String>>,
    /// Create `dialog` as a fork of this dialog of the same agent first.
    pub(crate) fork_from: Option<At<String>>,
    /// Branches that run at the same time: each a step, or `steps:` with a list.
    pub(crate) parallel: Option<At<Vec<At<RawStep>>>>,
    /// Inside a `parallel` branch only: steps run in order.
    pub(crate) steps: Option<At<Vec<At<RawStep>>>>,
}
