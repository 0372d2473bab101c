//! Fallback endpoints (`model_args.fallback`): where a model call goes when its server is
//! overloaded, unreachable, too slow, or rate-limits for longer than the call may wait.

use serde_json::{Map, Value};

use crate::endpoint::{kind, EndpointArgs, ModelArgsError};
use crate::hints::Profile;

/// Most fallback endpoints of one agent: each is tried at most once per call.
pub const MAX_FALLBACKS: usize = 8;

pub(crate) const API_BASE_REQUIRED: &str =
    "is required: the endpoint's base URL, like http://127.0.0.1:8001/v1";

/// One endpoint of `model_args.fallback`: its own server, and optionally its own model name, key,
/// profile and arguments. An endpoint, not an agent: it has no fallbacks of its own.
///
/// Credentials never travel: a fallback sends its own `api_key` and `extra_headers` only, never the
/// agent's. Request parameters (`temperature`, `max_tokens`, `extra_body`, ...) and the time limits
/// are the agent's unless the entry sets them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Fallback {
    /// The model name sent there (default: the agent's); a provider prefix is stripped when sent.
    pub model: Option<String>,
    /// The profile its hints are shaped for (default: the agent's). The agent's hints are carried
    /// there as that profile can carry them ([`CarriedHints`](crate::CarriedHints)).
    pub profile: Option<Profile>,
    /// Its arguments as written; `api_base` is set.
    pub endpoint: EndpointArgs,
}

impl Fallback {
    /// An endpoint at `api_base` with the agent's model, profile and request parameters.
    pub fn new(api_base: impl Into<String>) -> Self {
        Fallback {
            model: None,
            profile: None,
            endpoint: EndpointArgs::new().api_base(api_base),
        }
    }

    /// Sends `model` there instead of the agent's model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Shapes the hints for `profile` there.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Its own arguments (its `api_base` is kept when `endpoint` has none).
    pub fn endpoint(mut self, mut endpoint: EndpointArgs) -> Self {
        if endpoint.api_base.is_none() {
            endpoint.api_base = self.endpoint.api_base.take();
        }
        self.endpoint = endpoint;
        self
    }

    /// The arguments a request to this endpoint is sent with: the entry's over the agent's request
    /// parameters and time limits. The agent's key, headers and `max_in_flight` are not inherited
    /// (a limit is the endpoint's own).
    pub fn endpoint_over(&self, agent: &EndpointArgs) -> EndpointArgs {
        let own = &self.endpoint;
        let mut params = agent.params.clone();
        params.extend(own.params.clone());
        let mut extra_body = agent.extra_body.clone();
        crate::merge::deep_merge(&mut extra_body, own.extra_body.clone());
        EndpointArgs {
            api_base: own.api_base.clone(),
            api_key: own.api_key.clone(),
            timeout: own.timeout.or(agent.timeout),
            deadline: own.deadline.or(agent.deadline),
            extra_headers: own.extra_headers.clone(),
            extra_body,
            params,
            max_in_flight: own.max_in_flight,
            max_retry_after: own.max_retry_after.or(agent.max_retry_after),
        }
    }

    /// Reads entry `index` of `fallback:` as written.
    pub(crate) fn from_json(index: usize, value: Value) -> Result<Self, ModelArgsError> {
        let field = |name: &str| format!("fallback[{index}].{name}");
        let Value::Object(mut map) = value else {
            return Err(ModelArgsError::new(
                format!("fallback[{index}]"),
                format!(
                    "expected a mapping with at least api_base, found {}",
                    kind(&value)
                ),
            ));
        };
        let model = take_string(&mut map, "model_name", &field)?;
        let profile = match map.remove("profile") {
            None => None,
            Some(value) => Some(serde_json::from_value(value).map_err(|_| {
                ModelArgsError::new(
                    field("profile"),
                    "expected one of dynamo, vllm, sglang, openai",
                )
            })?),
        };
        // The agent's arguments check that the entry has an `api_base` (`validate_fallbacks`).
        let endpoint =
            EndpointArgs::from_json(map).map_err(|e| e.within(&format!("fallback[{index}]")))?;
        Ok(Fallback {
            model,
            profile,
            endpoint,
        })
    }
}

fn take_string(
    map: &mut Map<String, Value>,
    key: &str,
    field: &dyn Fn(&str) -> String,
) -> Result<Option<String>, ModelArgsError> {
    match map.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s)),
        Some(Value::String(_)) => Ok(None),
        Some(other) => Err(ModelArgsError::new(
            field(key),
            format!("expected a string, found {}", kind(&other)),
        )),
    }
}

/// `fallback:` as written: a list of endpoints.
pub(crate) fn fallback_list(value: Value) -> Result<Vec<Fallback>, ModelArgsError> {
    let Value::Array(entries) = value else {
        return Err(ModelArgsError::new(
            "fallback",
            format!(
                "expected a list of endpoints ({{api_base, model_name?, api_key?, profile?, ...}}), found {}",
                kind(&value)
            ),
        ));
    };
    if entries.len() > MAX_FALLBACKS {
        return Err(ModelArgsError::new(
            "fallback",
            format!(
                "{} endpoints; at most {MAX_FALLBACKS} are tried per call",
                entries.len()
            ),
        ));
    }
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| Fallback::from_json(i, entry))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelArgs;
    use serde_json::json;

    fn parse(value: Value) -> Result<ModelArgs, ModelArgsError> {
        match value {
            Value::Object(map) => ModelArgs::from_json(map),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn entries_inherit_parameters_but_never_credentials() {
        let args = parse(json!({
            "api_base": "http://127.0.0.1:1/v1", "api_key": "sk-primary", "temperature": 0.2,
            "max_tokens": 30, "timeout": 5, "extra_headers": {"Authorization": "Bearer primary"},
            "max_in_flight": 2, "max_retry_after": 10,
            "fallback": [
                {"api_base": "http://127.0.0.1:2/v1", "model_name": "small", "profile": "vllm", "max_tokens": 10},
                {"api_base": "http://127.0.0.1:3/v1", "api_key": "sk-third", "max_in_flight": 1}
            ]
        }))
        .expect("valid");
        assert_eq!(args.endpoint.max_in_flight, Some(2));
        assert_eq!(args.fallback.len(), 2);
        let second = &args.fallback[0];
        assert_eq!(second.model.as_deref(), Some("small"));
        assert_eq!(second.profile, Some(Profile::Vllm));
        let sent = second.endpoint_over(&args.endpoint);
        assert_eq!(sent.api_base.as_deref(), Some("http://127.0.0.1:2/v1"));
        assert_eq!(sent.api_key, None, "the agent's key stays with the agent");
        assert!(sent.extra_headers.is_empty());
        assert_eq!(sent.output_limit(), Some(10));
        assert_eq!(sent.params["temperature"], 0.2);
        assert_eq!(sent.timeout, args.endpoint.timeout);
        assert_eq!(sent.max_in_flight, None, "a limit is the endpoint's own");
        let third = args.fallback[1].endpoint_over(&args.endpoint);
        assert_eq!(third.api_key.as_ref().map(|k| k.expose()), Some("sk-third"));
        assert_eq!(third.max_in_flight, Some(1));
        assert!(!format!("{args:?}").contains("sk-third"));
    }

    #[test]
    fn bad_entries_name_their_field() {
        for (value, field, words) in [
            (
                json!({"fallback": {"api_base": "x"}}),
                "fallback",
                "expected a list",
            ),
            (
                json!({"fallback": ["http://h/v1"]}),
                "fallback[0]",
                "expected a mapping",
            ),
            (
                json!({"fallback": [{"model_name": "m"}]}),
                "fallback[0].api_base",
                "is required",
            ),
            (
                json!({"fallback": [{"api_base": "ftp://h"}]}),
                "fallback[0].api_base",
                "http",
            ),
            (
                json!({"fallback": [{"api_base": "http://h/v1", "profile": "tgi"}]}),
                "fallback[0].profile",
                "one of",
            ),
            (
                json!({"fallback": [{"api_base": "http://h/v1", "fallback": []}]}),
                "fallback[0].fallback",
                "no fallbacks of its own",
            ),
            (
                json!({"fallback": [{"api_base": "http://h/v1", "max_token": 3}]}),
                "fallback[0].max_token",
                "did you mean",
            ),
            (json!({"max_in_flight": 0}), "max_in_flight", "1 to"),
            (json!({"max_in_flight": "two"}), "max_in_flight", "1 to"),
            (json!({"max_retry_after": -1}), "max_retry_after", "seconds"),
        ] {
            let err = parse(value.clone()).expect_err("invalid");
            assert_eq!(err.field, field, "{value}: {err}");
            assert!(err.message.contains(words), "{value}: {err}");
        }
        let many: Vec<Value> = (0..=MAX_FALLBACKS)
            .map(|i| json!({"api_base": format!("http://127.0.0.1:{}/v1", i + 1)}))
            .collect();
        let err = parse(json!({"fallback": many})).expect_err("too many");
        assert!(err.message.contains("at most 8"), "{err}");
    }
}
