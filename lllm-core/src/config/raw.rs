//! The tactic file exactly as written: every key known, every value optional and located, nothing
//! merged yet. The tactic JSON Schema is derived from these types, so their doc comments are the
//! schema's descriptions.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::json::{self, Json};
use super::keyed::Keyed;
use super::span::At;
use crate::hints::{ForkSession, Priority, Profile};
use crate::Written;

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
    pub(crate) config: Option<Json>,
    /// MCP tool servers by name, started once per run and shared by the agents that name them in
    /// `mcp:`.
    pub(crate) mcp_servers: Option<At<RawMcpServers>>,
    /// Limits of one run; reaching one stops the run (exit 1), and a journaled run stays resumable.
    pub(crate) limits: Option<At<Keyed<RawLimits>>>,
}

/// Limits of one run (any subset), each value read as `--limit KEY=VALUE` reads it.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Limits")]
pub(crate) struct RawLimits {
    /// Most model requests sent (0 allows none).
    #[schemars(with = "Option<u64>")]
    pub(crate) max_requests: Option<At<Written>>,
    /// Most tokens (prompt and completion) of all answers together (0 allows none).
    #[schemars(with = "Option<u64>")]
    pub(crate) max_total_tokens: Option<At<Written>>,
    /// Most tool calls run (0 allows none).
    #[schemars(with = "Option<u64>")]
    pub(crate) max_tool_calls: Option<At<Written>>,
    /// Most seconds the run may take (from 0.001 to 1000000000).
    #[schemars(with = "Option<f64>")]
    pub(crate) max_seconds: Option<At<Written>>,
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
    /// System prompt taken from a prompt of one of the agent's MCP servers, fetched when the
    /// servers start: `{server, prompt, arguments?}`.
    pub(crate) system_prompt_mcp: Option<At<RawMcpPrompt>>,
    /// Request parameters (`temperature`, `max_tokens`, ...) and client settings (`api_base`,
    /// `api_key`, `timeout`, `deadline`, `extra_headers`, `extra_body`, `fallback`,
    /// `max_in_flight`, `max_retry_after`).
    pub(crate) model_args: Option<At<RawModelArgs>>,
    /// Inference hints sent with every model call of this agent.
    pub(crate) inference_hints: Option<At<RawHints>>,
    /// Command tools the agent may call.
    pub(crate) tools: Option<At<Vec<At<RawTool>>>>,
    /// MCP servers (of `mcp_servers:`) whose tools the agent may call: a list of names, or a mapping
    /// of names to `{include: [...]}` or `{exclude: [...]}`.
    pub(crate) mcp: Option<At<RawMcpUse>>,
    /// JSON Schema every answer must match.
    #[serde(default, deserialize_with = "json::optional_at")]
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
    /// Tool calls of one answer run at the same time (default 16, at most 64).
    pub(crate) max_parallel_tools: Option<At<u32>>,
    /// When the tactic is served, the agent is also offered the function tools the caller's
    /// request brings; a call of one pauses the run and is handed to the caller (default false).
    pub(crate) client_tools: Option<At<bool>>,
    /// Context compaction: when a dialog nears the model's window, it is summarised into a new
    /// window that rides the cached prefix.
    pub(crate) context: Option<At<Keyed<RawContext>>>,
    /// Subagents the model may start as tasks (`task_start`), in the background or as a tool.
    pub(crate) subagents: Option<At<Vec<At<RawSubagent>>>>,
    /// Background tasks of this agent running at once (default 4, at most 64).
    pub(crate) max_background_tasks: Option<At<u32>>,
    /// Folders of skill folders (each `NAME/SKILL.md`), relative to the file that names them: the
    /// model sees their index in the system prompt and loads one with `load_skill`. An agent's
    /// list replaces `global`'s.
    pub(crate) skills: Option<At<Vec<At<String>>>>,
}

/// One subagent as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Subagent")]
pub(crate) struct RawSubagent {
    /// The name the model starts it by, `[A-Za-z0-9_-]`, at most 64 characters.
    pub(crate) name: At<String>,
    /// The agent (of `agent_configs`) that answers its tasks (default: the agent itself).
    pub(crate) agent: Option<At<String>>,
    /// `fork`: the task's dialog is an O(1) fork of the calling dialog (it shares the cached
    /// prefix and names the parent's session); `isolated`: a new dialog with the instructions only.
    pub(crate) mode: At<crate::SubagentMode>,
    /// `true`: `task_start` returns a task id at once and the task runs beside the caller;
    /// `false`: `task_start` returns the task's answer (an agent as a tool).
    pub(crate) background: At<bool>,
    /// What the model reads about the subagent.
    pub(crate) description: Option<At<String>>,
}

/// `context:` as written.
// Each value is read by its rule when checked (`context.rs`), so that an error names its field.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Context")]
pub(crate) struct RawContext {
    /// Tokens of the model's context window, or `auto` (read from the server's `/v1/models`).
    #[schemars(with = "Option<crate::Window>")]
    pub(crate) window: Option<At<Written>>,
    /// Compact when the last request's prompt passed this fraction of the window (default 0.8).
    #[schemars(with = "Option<f64>")]
    pub(crate) compact_at: Option<At<Written>>,
    /// Messages kept word for word at the tail of the new window (default 6); a tool call and its
    /// results are kept or dropped together.
    #[schemars(with = "Option<u32>")]
    pub(crate) keep_last: Option<At<Written>>,
    /// `keep` (default): the new window keeps the session id; `rotate`: a session of its own.
    #[schemars(with = "Option<crate::SessionOnCompaction>")]
    pub(crate) session: Option<At<Written>>,
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
                    let value = map.next_value::<At<Json>>()?;
                    entries.push((key, value.map(|json| json.0)));
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
                "timeout": {"type": ["number", "string"], "description": "Seconds one request may take (0.001 to 1000000000)."},
                "deadline": {"type": ["number", "string"], "description": "Seconds a whole respond may take (0.001 to 1000000000)."},
                "extra_headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Headers that win over hint headers."},
                "extra_body": {"type": "object", "description": "JSON merged over the request body; wins over hints at every leaf."},
                "fallback": {"type": "array", "maxItems": 8, "description": "Endpoints tried in order when this one is overloaded (503, 529), unreachable, too slow, or rate-limits longer than max_retry_after. Each: api_base (required), model_name, api_key, profile, and other model arguments (the agent's request parameters are inherited, its credentials never).",
                    "items": {"type": "object", "required": ["api_base"], "properties": {
                        "api_base": {"type": "string"}, "model_name": {"type": "string"}, "api_key": {"type": "string"},
                        "profile": {"enum": ["dynamo", "vllm", "sglang", "openai"]}, "max_in_flight": {"type": "integer", "minimum": 1, "maximum": 100000}
                    }, "additionalProperties": true}},
                "max_in_flight": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "At most this many requests in flight to this endpoint from the whole process; waiting requests go first by priority, then in order of arrival."},
                "max_retry_after": {"type": ["number", "string"], "description": "Longest Retry-After waited for before the same endpoint is tried again (default 60 seconds); a longer one moves to the next fallback."}
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
    /// Priority: higher is more urgent, or `auto` (computed from the tactic) (dynamo, vllm, sglang).
    pub(crate) priority: Option<At<Priority>>,
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
    #[serde(default, deserialize_with = "json::optional_at")]
    pub(crate) parameters: Option<At<Value>>,
    /// The program and its arguments; items may use `{{ arg }}`. No shell is used.
    pub(crate) command: At<Vec<String>>,
    /// Seconds the program may run (default 30; 0.001 to 86400).
    pub(crate) timeout_s: Option<At<f64>>,
    /// Most bytes of output kept (default 65536).
    pub(crate) max_output_bytes: Option<At<usize>>,
    /// Environment variables passed through besides PATH, HOME, LANG, LC_ALL, LC_CTYPE, TZ and TMPDIR.
    pub(crate) env: Option<At<Vec<String>>>,
    /// Ask the user before each call (default false).
    pub(crate) confirm: Option<At<bool>>,
    /// Running a call again has the same effect as running it once (default false): a call a crash
    /// interrupted runs again on `lllm resume`.
    pub(crate) idempotent: Option<At<bool>>,
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

/// A mapping read in file order, each key with its position (duplicate keys are refused by the
/// parser).
#[derive(Debug, Clone, Default)]
pub(crate) struct Entries<V>(pub(crate) Vec<(At<String>, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_unit<E>(self) -> Result<Entries<V>, E> {
                Ok(Entries(Vec::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<V>, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<At<String>>()? {
                    entries.push((key, map.next_value::<V>()?));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// The servers under `mcp_servers:`.
pub(crate) type RawMcpServers = Entries<At<RawMcpServer>>;

impl JsonSchema for Entries<At<RawMcpServer>> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "McpServers".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let server = generator.subschema_for::<RawMcpServer>();
        schemars::json_schema!({
            "type": "object",
            "description": "MCP servers by name (letters, digits, `_` and `-`).",
            "propertyNames": {"pattern": "^[A-Za-z0-9_-]{1,64}$"},
            "additionalProperties": server
        })
    }
}

/// One MCP server: a program speaking MCP on stdio (`command:`) or a streamable HTTP endpoint
/// (`url:`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpServer")]
pub(crate) struct RawMcpServer {
    /// stdio: the program and its arguments; no shell is used.
    pub(crate) command: Option<At<Vec<String>>>,
    /// stdio: variables added to the inherited HOME, LOGNAME, PATH, SHELL, TERM and USER (nothing
    /// else of lllm's environment reaches the server).
    pub(crate) env: Option<At<Entries<At<String>>>>,
    /// stdio: the folder the server runs in, relative to the tactic file (default: its folder).
    pub(crate) cwd: Option<At<String>>,
    /// Streamable HTTP: the endpoint, such as `http://127.0.0.1:3001/mcp`.
    pub(crate) url: Option<At<String>>,
    /// Streamable HTTP: headers sent with every request.
    pub(crate) headers: Option<At<Entries<At<String>>>>,
    /// Seconds one tool call may take (default 60; 0.001 to 86400).
    pub(crate) timeout_s: Option<At<f64>>,
    /// Seconds starting the server and listing its tools may take (default 30; 0.001 to 86400).
    pub(crate) startup_timeout_s: Option<At<f64>>,
    /// Put before each tool name the model sees: `fs_` offers `read_file` as `fs_read_file`.
    pub(crate) prefix: Option<At<String>>,
    /// Tools that ask the user before each call: `true` for all, or a list of the server's tool names.
    pub(crate) confirm: Option<At<RawConfirm>>,
    /// Most bytes of a tool result kept (default 65536); more is an error result.
    pub(crate) max_output_bytes: Option<At<usize>>,
    /// Whether the server may ask the calling agent's model for a completion during a tool call
    /// (`sampling/createMessage`; default false).
    pub(crate) sampling: Option<At<bool>>,
    /// Whether agents taking the server are offered its resources, as two tools:
    /// `<prefix>list_resources` and `<prefix>read_resource {uri}` (default false).
    pub(crate) resources: Option<At<bool>>,
    /// Streamable HTTP: OAuth 2.1 with the server (discovery, dynamic client registration or
    /// `client_id`, PKCE with a loopback redirect, refresh); `lllm mcp login` authorizes once.
    pub(crate) auth: Option<At<RawMcpAuth>>,
    /// The MCP protocol the server speaks: `"2025-11-25"` (the `initialize` handshake, the default,
    /// which servers of both eras accept) or `"2026-07-28"` (`server/discover`, no `initialize`).
    pub(crate) protocol: Option<At<String>>,
}

/// `auth:` of an HTTP server. Every key is optional: `auth: {}` registers lllm with the server.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpAuth")]
pub(crate) struct RawMcpAuth {
    /// A client id registered with the authorization server beforehand (needed when the server
    /// offers no dynamic client registration).
    pub(crate) client_id: Option<At<String>>,
    /// The scopes to ask for (default: the server's choice).
    pub(crate) scopes: Option<At<Vec<At<String>>>>,
    /// Where the tokens are kept, relative to the tactic file (default: `mcp-auth/` under the
    /// cache directory, LLLM_CACHE_DIR or ~/.cache/lllm); written owner-only.
    pub(crate) token_file: Option<At<String>>,
}

/// `system_prompt_mcp:` of an agent.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpPrompt")]
pub(crate) struct RawMcpPrompt {
    /// The MCP server (one of the agent's `mcp:`).
    pub(crate) server: At<String>,
    /// The name of the server's prompt.
    pub(crate) prompt: At<String>,
    /// The prompt's arguments, names to text.
    pub(crate) arguments: Option<At<Entries<At<String>>>>,
}

impl JsonSchema for Entries<At<String>> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StringMap".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "additionalProperties": {"type": "string"}})
    }
}

/// `confirm:` of a server: `true` / `false`, or a list of tool names.
#[derive(Debug, Clone)]
pub(crate) enum RawConfirm {
    /// `true` or `false`.
    All(bool),
    /// The tools named.
    Some(Vec<At<String>>),
}

impl<'de> Deserialize<'de> for RawConfirm {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = RawConfirm;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false, or a list of tool names")
            }
            fn visit_bool<E>(self, all: bool) -> Result<RawConfirm, E> {
                Ok(RawConfirm::All(all))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawConfirm, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<At<String>>()? {
                    names.push(name);
                }
                Ok(RawConfirm::Some(names))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

impl JsonSchema for RawConfirm {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "McpConfirm".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "true: every tool asks before it runs; a list: the tools named do.",
            "oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}]
        })
    }
}

/// An agent's `mcp:`: server names, or server names with a filter.
#[derive(Debug, Clone)]
pub(crate) struct RawMcpUse(pub(crate) Vec<(At<String>, Option<At<RawMcpFilter>>)>);

/// Which tools of a server an agent takes.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpFilter")]
pub(crate) struct RawMcpFilter {
    /// Only these tools (the server's own names).
    pub(crate) include: Option<At<Vec<At<String>>>>,
    /// Every tool but these.
    pub(crate) exclude: Option<At<Vec<At<String>>>>,
}

impl<'de> Deserialize<'de> for RawMcpUse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = RawMcpUse;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of server names, or a mapping of server names to {include: [...]} or {exclude: [...]}")
            }
            fn visit_unit<E>(self) -> Result<RawMcpUse, E> {
                Ok(RawMcpUse(Vec::new()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawMcpUse, A::Error> {
                let mut uses = Vec::new();
                while let Some(name) = seq.next_element::<At<String>>()? {
                    uses.push((name, None));
                }
                Ok(RawMcpUse(uses))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawMcpUse, A::Error> {
                let mut uses = Vec::new();
                while let Some(name) = map.next_key::<At<String>>()? {
                    uses.push((name, map.next_value::<Option<At<RawMcpFilter>>>()?));
                }
                Ok(RawMcpUse(uses))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

impl JsonSchema for RawMcpUse {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "McpUse".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let filter = generator.subschema_for::<RawMcpFilter>();
        schemars::json_schema!({
            "description": "Servers of mcp_servers whose tools the agent may call: a list of names (every tool), or a mapping of names to a filter.",
            "oneOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "object", "additionalProperties": {"oneOf": [{"type": "null"}, filter]}}
            ]
        })
    }
}
