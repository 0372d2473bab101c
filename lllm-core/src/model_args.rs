//! Per-agent model arguments: where the server is, how to authenticate, and what goes into each request.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::fallback::{fallback_list, Fallback};
use crate::secret::{printable_header_value, redact_url, Secret};
use crate::suggest::closest;
use crate::values::{check_header, check_http_url, SecondsRange, Written};

/// Request parameters lllm knows by name. Any other key is passed into the request body as written,
/// unless it looks like a misspelling of one of these.
pub(crate) const KNOWN_PARAMS: &[&str] = &[
    // OpenAI chat completions
    "audio",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream_options",
    "temperature",
    "tool_choice",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    // common extensions of vLLM, SGLang, llama.cpp and Dynamo
    "cache_prompt",
    "cache_salt",
    "chat_template_kwargs",
    "grammar",
    "guided_choice",
    "guided_grammar",
    "guided_json",
    "guided_regex",
    "ignore_eos",
    "json_schema",
    "min_p",
    "min_tokens",
    "nvext",
    "priority",
    "repetition_penalty",
    "skip_special_tokens",
    "structured_outputs",
    "top_k",
];

/// Keys of `model_args` that configure lllm itself and are never sent in the body.
pub(crate) const CLIENT_KEYS: &[&str] = &[
    "api_base",
    "api_key",
    "timeout",
    "deadline",
    "extra_headers",
    "extra_body",
    "fallback",
    "max_in_flight",
    "max_retry_after",
];

/// Most requests in flight `max_in_flight` may allow.
pub const MAX_IN_FLIGHT: u32 = 100_000;

/// Request fields lllm writes itself; `model_args` may not set them.
pub(crate) const RESERVED_KEYS: &[&str] = &["model", "messages", "stream", "tools"];

/// A `model_args` entry is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model_args.{field}: {message}")]
#[non_exhaustive]
pub struct ModelArgsError {
    /// The key, with a path inside it when the problem is nested (`extra_headers.x-foo`).
    pub field: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl ModelArgsError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ModelArgsError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error for an entry nested under `prefix` (`fallback[0]`).
    pub(crate) fn within(mut self, prefix: &str) -> Self {
        self.field = format!("{prefix}.{}", self.field);
        self
    }
}

/// Model arguments of an agent.
///
/// Setters never fail; [`ModelArgs::validate`] (called when an agent is built) reports problems.
/// `Debug` hides the API key, credential headers and credentials in the URL.
#[derive(Clone, Default, PartialEq)]
pub struct ModelArgs {
    /// Base URL of the OpenAI-compatible API, such as `http://127.0.0.1:8000/v1`: an http or https
    /// URL with a host ([`check_http_url`]).
    pub api_base: Option<String>,
    /// API key sent as a bearer token.
    pub api_key: Option<Secret>,
    /// Time allowed for one request, retries aside: within [`SecondsRange::RUN`] (a millisecond to
    /// about 31 years).
    pub timeout: Option<Duration>,
    /// Time allowed for a whole respond, every request, retry and tool round: within
    /// [`SecondsRange::RUN`].
    pub deadline: Option<Duration>,
    /// Headers added to every request; they replace hint headers of the same name (any case). Each
    /// is held to [`check_header`].
    pub extra_headers: Vec<(String, String)>,
    /// JSON merged over the request body; it wins over hints at every leaf.
    pub extra_body: Map<String, Value>,
    /// Everything else: request parameters such as `temperature` or `max_tokens`.
    pub params: Map<String, Value>,
    /// Endpoints tried in order when this one is overloaded (503, 529), unreachable, too slow, or
    /// rate-limits for longer than `max_retry_after`; never on other client errors and never after
    /// the first streamed byte. At most [`MAX_FALLBACKS`](crate::MAX_FALLBACKS).
    pub fallback: Vec<Fallback>,
    /// At most this many requests in flight to this endpoint from the whole process (every agent,
    /// fork, batch item and served run); 1 to [`MAX_IN_FLIGHT`].
    pub max_in_flight: Option<u32>,
    /// Longest `Retry-After` waited for before trying the same endpoint again; a longer one moves
    /// on to the next fallback (or fails the call when there is none). Default 60 seconds.
    pub max_retry_after: Option<Duration>,
}

impl std::fmt::Debug for ModelArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .extra_headers
            .iter()
            .map(|(name, value)| (name.as_str(), printable_header_value(name, value)))
            .collect();
        f.debug_struct("ModelArgs")
            .field("api_base", &self.api_base.as_deref().map(redact_url))
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .field("deadline", &self.deadline)
            .field("extra_headers", &headers)
            .field("extra_body", &self.extra_body)
            .field("params", &self.params)
            .field("fallback", &self.fallback)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_retry_after", &self.max_retry_after)
            .finish()
    }
}

impl ModelArgs {
    /// Empty arguments.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the API base URL.
    pub fn api_base(mut self, url: impl Into<String>) -> Self {
        self.api_base = Some(url.into());
        self
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(key));
        self
    }

    /// Sets the per-request timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the time allowed for a whole respond.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Adds a header to every request.
    pub fn extra_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// Sets JSON merged over every request body.
    pub fn extra_body(mut self, body: Map<String, Value>) -> Self {
        self.extra_body = body;
        self
    }

    /// Sets a request parameter.
    pub fn param(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.params.insert(key.into(), value.into());
        self
    }

    /// Sets `max_tokens`.
    pub fn max_tokens(self, max_tokens: u32) -> Self {
        self.param("max_tokens", max_tokens)
    }

    /// Sets `temperature`.
    pub fn temperature(self, temperature: f64) -> Self {
        self.param("temperature", temperature)
    }

    /// The answer length limit: `max_tokens`, else `max_completion_tokens`, when set to a positive integer.
    pub fn output_limit(&self) -> Option<u32> {
        ["max_tokens", "max_completion_tokens"]
            .iter()
            .filter_map(|k| self.params.get(*k))
            .find_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
            .filter(|n| *n > 0)
    }

    /// Reads arguments from a JSON object as written in a tactic file.
    pub fn from_json(map: Map<String, Value>) -> Result<Self, ModelArgsError> {
        Self::from_json_checking(map, &mut std::collections::HashSet::new())
    }

    /// [`from_json`](Self::from_json), skipping the name check of keys in `names_ok` (already checked
    /// in the same load: `global`'s keys are given to every agent) and adding the keys it checks.
    pub(crate) fn from_json_checking(
        map: Map<String, Value>,
        names_ok: &mut std::collections::HashSet<String>,
    ) -> Result<Self, ModelArgsError> {
        let mut args = ModelArgs::default();
        for (key, value) in map {
            match key.as_str() {
                // An empty value (often `${VAR:-}`) means "not set", so the fallbacks apply.
                "api_base" => args.api_base = non_empty(string_field(&key, value)?),
                "api_key" => args.api_key = non_empty(string_field(&key, value)?).map(Secret::new),
                "timeout" => args.timeout = Some(seconds_field(&key, value)?),
                "deadline" => args.deadline = Some(seconds_field(&key, value)?),
                "extra_headers" => args.extra_headers = headers_field(value)?,
                "fallback" => args.fallback = fallback_list(value)?,
                "max_in_flight" => args.max_in_flight = Some(in_flight_field(value)?),
                "max_retry_after" => args.max_retry_after = Some(seconds_field(&key, value)?),
                "extra_body" => match value {
                    Value::Object(body) => args.extra_body = body,
                    other => {
                        return Err(ModelArgsError::new(
                            key,
                            format!("expected a mapping, found {}", kind(&other)),
                        ))
                    }
                },
                _ => {
                    args.params.insert(key, value);
                }
            }
        }
        args.validate_checking(names_ok)?;
        Ok(args)
    }

    /// Checks every argument: header names and values, limits, and parameter names that are misspelt or
    /// reserved.
    pub fn validate(&self) -> Result<(), ModelArgsError> {
        self.validate_checking(&mut std::collections::HashSet::new())
    }

    fn validate_checking(
        &self,
        names_ok: &mut std::collections::HashSet<String>,
    ) -> Result<(), ModelArgsError> {
        if let Some(base) = &self.api_base {
            // The message never shows the URL: it may hold a password or a key.
            check_http_url(base).map_err(|e| {
                ModelArgsError::new(
                    "api_base",
                    format!("{e}; write it like http://127.0.0.1:8000/v1"),
                )
            })?;
        }
        if let Some(key) = &self.api_key {
            // Sent as `authorization: Bearer <key>`; the message never shows the key.
            if check_header("authorization", &format!("Bearer {}", key.expose())).is_err() {
                return Err(ModelArgsError::new(
                    "api_key",
                    "contains a control character (such as a newline) or a character that cannot be sent in a header",
                ));
            }
        }
        self.validate_endpoints()?;
        for (key, limit) in [
            ("timeout", self.timeout),
            ("deadline", self.deadline),
            ("max_retry_after", self.max_retry_after),
        ] {
            if let Some(limit) = limit {
                SecondsRange::RUN
                    .check_duration(limit)
                    .map_err(|e| ModelArgsError::new(key, e.to_string()))?;
            }
        }
        for (name, value) in &self.extra_headers {
            check_header(name, value)
                .map_err(|e| ModelArgsError::new(format!("extra_headers.{name}"), e.to_string()))?;
        }
        for (key, value) in &self.params {
            if !names_ok.contains(key) {
                check_key(key)?;
                names_ok.insert(key.clone());
            }
            check_value(key, value)?;
        }
        Ok(())
    }
}

impl ModelArgs {
    /// `max_in_flight` in range; at most [`MAX_FALLBACKS`](crate::MAX_FALLBACKS) fallbacks, each
    /// with a valid `api_base` and arguments, and none of its own.
    fn validate_endpoints(&self) -> Result<(), ModelArgsError> {
        if let Some(n) = self.max_in_flight {
            if !(1..=MAX_IN_FLIGHT).contains(&n) {
                return Err(ModelArgsError::new(
                    "max_in_flight",
                    format!("expected a whole number from 1 to {MAX_IN_FLIGHT}, found {n}"),
                ));
            }
        }
        if self.fallback.len() > crate::MAX_FALLBACKS {
            return Err(ModelArgsError::new(
                "fallback",
                format!(
                    "{} endpoints; at most {} are tried per call",
                    self.fallback.len(),
                    crate::MAX_FALLBACKS
                ),
            ));
        }
        for (i, entry) in self.fallback.iter().enumerate() {
            let prefix = format!("fallback[{i}]");
            if entry.args.api_base.is_none() {
                return Err(ModelArgsError::new(
                    format!("{prefix}.api_base"),
                    crate::fallback::API_BASE_REQUIRED,
                ));
            }
            if !entry.args.fallback.is_empty() {
                return Err(ModelArgsError::new(
                    format!("{prefix}.fallback"),
                    crate::fallback::NO_NESTED_FALLBACK,
                ));
            }
            entry.args.validate().map_err(|e| e.within(&prefix))?;
        }
        Ok(())
    }
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn string_field(key: &str, value: Value) -> Result<String, ModelArgsError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(ModelArgsError::new(
            key,
            format!("expected a string, found {}", kind(&other)),
        )),
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}

/// `timeout` and `deadline`: a number of seconds in [`SecondsRange::RUN`].
fn seconds_field(key: &str, value: Value) -> Result<Duration, ModelArgsError> {
    SecondsRange::RUN
        .read(&Written::from_json(&value))
        .map(Duration::from_secs_f64)
        .map_err(|e| ModelArgsError::new(key, e.to_string()))
}

fn in_flight_field(value: Value) -> Result<u32, ModelArgsError> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| (1..=MAX_IN_FLIGHT).contains(n))
        .ok_or_else(|| {
            ModelArgsError::new(
                "max_in_flight",
                format!("expected a whole number from 1 to {MAX_IN_FLIGHT}, found {value}"),
            )
        })
}

fn headers_field(value: Value) -> Result<Vec<(String, String)>, ModelArgsError> {
    let Value::Object(map) = value else {
        return Err(ModelArgsError::new(
            "extra_headers",
            format!(
                "expected a mapping of header names to values, found {}",
                kind(&value)
            ),
        ));
    };
    map.into_iter()
        .map(|(name, value)| match value {
            Value::String(s) => Ok((name, s)),
            Value::Number(n) => Ok((name, n.to_string())),
            Value::Bool(b) => Ok((name, b.to_string())),
            other => Err(ModelArgsError::new(
                format!("extra_headers.{name}"),
                format!("expected a string, found {}", kind(&other)),
            )),
        })
        .collect()
}

fn check_value(key: &str, value: &Value) -> Result<(), ModelArgsError> {
    if matches!(key, "max_tokens" | "max_completion_tokens")
        && !value
            .as_u64()
            .is_some_and(|n| n > 0 && n <= u64::from(u32::MAX))
    {
        return Err(ModelArgsError::new(
            key,
            format!("expected a positive whole number, found {value}"),
        ));
    }
    Ok(())
}

/// Checks a `model_args` key by name alone: reserved request fields and likely misspellings of known
/// keys are errors; any other key is a parameter passed into the body as written.
pub(crate) fn check_key(key: &str) -> Result<(), ModelArgsError> {
    if RESERVED_KEYS.contains(&key) {
        return Err(ModelArgsError::new(
            key,
            "is written by lllm itself and cannot be set in model_args",
        ));
    }
    if KNOWN_PARAMS.contains(&key) || CLIENT_KEYS.contains(&key) {
        return Ok(());
    }
    // Retries are the agent's, not a request parameter: a client setting some libraries take
    // here would otherwise go into the request body, and lllm would retry as before.
    if matches!(
        key,
        "max_retries" | "num_retries" | "max_call_retries" | "retries"
    ) {
        return Err(ModelArgsError::new(
            key,
            "retries are set on the agent, not in model_args: write max_call_retries: N beside model_args (and max_retry_after here for the longest Retry-After to wait for)",
        ));
    }
    let known = KNOWN_PARAMS.iter().chain(CLIENT_KEYS).copied();
    match closest(key, known) {
        Some(suggestion) => Err(ModelArgsError::new(
            key,
            format!(
                "is not a known argument (did you mean `{suggestion}`?); to send it as written, put it under extra_body"
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn parse(value: Value) -> Result<ModelArgs, ModelArgsError> {
        match value {
            Value::Object(map) => ModelArgs::from_json(map),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn splits_client_keys_from_params() {
        let args = parse(json!({
            "api_base": "http://127.0.0.1:1/v1", "api_key": "sk-x", "timeout": 2.5,
            "extra_headers": {"X-Team": "a", "x-n": 3}, "extra_body": {"nvext": {"extra_fields": ["a"]}},
            "temperature": 0.2, "max_tokens": 24, "top_k": 5, "my_server_knob": true
        }))
        .expect("valid");
        assert_eq!(args.api_base.as_deref(), Some("http://127.0.0.1:1/v1"));
        assert_eq!(args.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(
            args.extra_headers,
            vec![("X-Team".into(), "a".into()), ("x-n".into(), "3".into())]
        );
        assert_eq!(args.output_limit(), Some(24));
        assert_eq!(args.params.len(), 4);
        assert!(!format!("{args:?}").contains("sk-x"));
        let with_header = ModelArgs::new()
            .extra_header("Authorization", "Bearer sk-leak")
            .extra_header("X-Api-Token", "tok-leak")
            .api_base("https://u:pw-leak@h.invalid/v1");
        let shown = format!("{with_header:?}");
        assert!(!shown.contains("leak"), "{shown}");
    }

    #[test]
    fn misspelt_and_reserved_keys_are_errors() {
        let err = parse(json!({"max_token": 5})).expect_err("typo");
        assert_eq!(err.field, "max_token");
        assert!(err.message.contains("did you mean `max_tokens`"), "{err}");
        let err = parse(json!({"messages": []})).expect_err("reserved");
        assert_eq!(err.field, "messages");
        let err = parse(json!({"timeout": "soon"})).expect_err("type");
        assert!(err.to_string().contains("model_args.timeout"), "{err}");
        let err = parse(json!({"extra_headers": {"x-a": "1\r\nx-b: 2"}})).expect_err("inject");
        assert!(err.message.contains("control character"), "{err}");
        let empty = parse(json!({"api_key": "", "api_base": " "})).expect("empty is unset");
        assert_eq!((empty.api_key, empty.api_base), (None, None));
        let err = parse(json!({"max_tokens": -1})).expect_err("negative");
        assert_eq!(err.field, "max_tokens");
        let err = parse(json!({"max_retries": 0})).expect_err("the agent's");
        assert!(err.message.contains("write max_call_retries"), "{err}");
    }

    #[test]
    fn output_limit_falls_back_to_max_completion_tokens() {
        let args = ModelArgs::new().param("max_completion_tokens", 40);
        assert_eq!(args.output_limit(), Some(40));
        assert_eq!(ModelArgs::new().output_limit(), None);
    }
}
