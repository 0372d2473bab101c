//! Per-agent model arguments: the agent's own endpoint and the endpoints it falls back on.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::endpoint::{EndpointArgs, ModelArgsError};
use crate::fallback::{fallback_list, Fallback, API_BASE_REQUIRED, MAX_FALLBACKS};

/// Model arguments of an agent: its own endpoint, and the endpoints tried in order when that one
/// is overloaded (503, 529), unreachable, too slow, or rate-limits for longer than
/// `max_retry_after` (never on other client errors and never after the first streamed byte).
///
/// A fallback is an endpoint, not another agent: it has no fallbacks of its own, by its type.
/// Setters never fail; [`ModelArgs::validate`] (called when an agent is built) reports problems.
/// `Debug` hides the API keys, credential headers and credentials in the URLs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelArgs {
    /// The agent's own endpoint.
    pub endpoint: EndpointArgs,
    /// At most [`MAX_FALLBACKS`](crate::MAX_FALLBACKS) endpoints, tried in order.
    pub fallback: Vec<Fallback>,
}

impl From<EndpointArgs> for ModelArgs {
    fn from(endpoint: EndpointArgs) -> Self {
        ModelArgs {
            endpoint,
            fallback: Vec::new(),
        }
    }
}

impl ModelArgs {
    /// Empty arguments.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the API base URL of the agent's endpoint.
    pub fn api_base(self, url: impl Into<String>) -> Self {
        self.with(|e| e.api_base(url))
    }

    /// Sets the API key of the agent's endpoint.
    pub fn api_key(self, key: impl Into<String>) -> Self {
        self.with(|e| e.api_key(key))
    }

    /// Sets the per-request timeout.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.with(|e| e.timeout(timeout))
    }

    /// Sets the time allowed for a whole respond.
    pub fn deadline(self, deadline: Duration) -> Self {
        self.with(|e| e.deadline(deadline))
    }

    /// Adds a header to every request to the agent's endpoint.
    pub fn extra_header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.with(|e| e.extra_header(name, value))
    }

    /// Sets JSON merged over every request body.
    pub fn extra_body(self, body: Map<String, Value>) -> Self {
        self.with(|e| e.extra_body(body))
    }

    /// Sets a request parameter.
    pub fn param(self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.with(|e| e.param(key, value))
    }

    /// Sets `max_tokens`.
    pub fn max_tokens(self, max_tokens: u32) -> Self {
        self.with(|e| e.max_tokens(max_tokens))
    }

    /// Sets `temperature`.
    pub fn temperature(self, temperature: f64) -> Self {
        self.with(|e| e.temperature(temperature))
    }

    /// Sets the most requests in flight to the agent's endpoint from the whole process.
    pub fn max_in_flight(self, slots: u32) -> Self {
        self.with(|e| e.max_in_flight(slots))
    }

    /// Adds an endpoint to try after the others.
    pub fn fallback(mut self, entry: Fallback) -> Self {
        self.fallback.push(entry);
        self
    }

    fn with(mut self, change: impl FnOnce(EndpointArgs) -> EndpointArgs) -> Self {
        self.endpoint = change(std::mem::take(&mut self.endpoint));
        self
    }

    /// Every endpoint's arguments as written: the agent's own, then each fallback's, in order.
    pub fn endpoints(&self) -> impl Iterator<Item = &EndpointArgs> {
        std::iter::once(&self.endpoint).chain(self.fallback.iter().map(|f| &f.endpoint))
    }

    /// The answer length limit of the agent's endpoint ([`EndpointArgs::output_limit`]).
    pub fn output_limit(&self) -> Option<u32> {
        self.endpoint.output_limit()
    }

    /// Reads arguments from a JSON object as written in a tactic file.
    pub fn from_json(map: Map<String, Value>) -> Result<Self, ModelArgsError> {
        Self::from_json_checking(map, &mut HashSet::new())
    }

    /// [`from_json`](Self::from_json), skipping the name check of keys in `names_ok` (already checked
    /// in the same load: `global`'s keys are given to every agent) and adding the keys it checks.
    pub(crate) fn from_json_checking(
        mut map: Map<String, Value>,
        names_ok: &mut HashSet<String>,
    ) -> Result<Self, ModelArgsError> {
        let fallback = map.remove("fallback").map(fallback_list).transpose()?;
        let args = ModelArgs {
            endpoint: EndpointArgs::from_json_checking(map, names_ok)?,
            fallback: fallback.unwrap_or_default(),
        };
        args.validate_fallbacks()?;
        Ok(args)
    }

    /// Checks every argument of every endpoint.
    pub fn validate(&self) -> Result<(), ModelArgsError> {
        self.endpoint.validate()?;
        self.validate_fallbacks()
    }

    /// At most [`MAX_FALLBACKS`] fallbacks, each with a valid `api_base` and arguments.
    fn validate_fallbacks(&self) -> Result<(), ModelArgsError> {
        if self.fallback.len() > MAX_FALLBACKS {
            return Err(ModelArgsError::new(
                "fallback",
                format!(
                    "{} endpoints; at most {MAX_FALLBACKS} are tried per call",
                    self.fallback.len()
                ),
            ));
        }
        for (i, entry) in self.fallback.iter().enumerate() {
            let prefix = format!("fallback[{i}]");
            if entry.endpoint.api_base.is_none() {
                return Err(ModelArgsError::new(
                    format!("{prefix}.api_base"),
                    API_BASE_REQUIRED,
                ));
            }
            entry.endpoint.validate().map_err(|e| e.within(&prefix))?;
        }
        Ok(())
    }
}
