//! The exact HTTP request a model call becomes, and lenient parsing of the answer.

use std::fmt;

use lllm_core::internal::{find_header, merge_body, merge_headers, merged_value};
use lllm_core::secret::{printable_header_value, redact_url};
use lllm_core::{
    strip_provider_prefix, BodyPath, Message, Profile, Role, Secret, ToolCall, Usage, WireHints,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::error::{excerpt, printable, Secrets, EXCERPT_CHARS};
use super::json::{parse_json, Arguments, Content, ErrorField, FirstOnly, ToolCallList};
use super::wire_message::WireMessages;
use super::{ChatRequest, ChatResponse, InvokeError};

/// Where requests go when `model_args` does not say.
const OPENAI_API_BASE: &str = "https://api.openai.com/v1";
/// Server settings from the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`), used when an agent's
/// `model_args` has no `api_base` / `api_key`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServerDefaults {
    /// Fallback base URL.
    pub api_base: Option<String>,
    /// Fallback API key.
    pub api_key: Option<Secret>,
}

impl ServerDefaults {
    /// Reads `OPENAI_BASE_URL` and `OPENAI_API_KEY`; empty values count as unset.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        ServerDefaults {
            api_base: var("OPENAI_BASE_URL"),
            api_key: var("OPENAI_API_KEY").map(Secret::new),
        }
    }

    /// No fallback at all (requests go to OpenAI without a key unless `model_args` says otherwise).
    pub fn none() -> Self {
        Self::default()
    }
}

/// A request exactly as it goes on the wire.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct PreparedRequest {
    /// Base URL of the API, without a trailing slash.
    pub api_base: String,
    /// Full URL of the chat completions endpoint.
    pub url: String,
    /// Headers in the order they are sent, credentials included.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

impl PreparedRequest {
    /// Builds the request for `request`: model name without provider prefix, messages, the agent's
    /// parameters, hint fields under the user's `extra_headers` / `extra_body`.
    pub fn build(request: &ChatRequest, defaults: &ServerDefaults) -> Result<Self, InvokeError> {
        Self::build_with(request, defaults, false)
    }

    /// Like [`build`](Self::build), asking for a streamed answer with usage in its last chunk
    /// (`"stream": true, "stream_options": {"include_usage": true}`).
    pub fn build_streaming(
        request: &ChatRequest,
        defaults: &ServerDefaults,
    ) -> Result<Self, InvokeError> {
        Self::build_with(request, defaults, true)
    }

    fn build_with(
        request: &ChatRequest,
        defaults: &ServerDefaults,
        stream: bool,
    ) -> Result<Self, InvokeError> {
        let (api_base, url, mut body) = Self::parts(request, defaults, stream);
        body.insert("messages".into(), messages_json(request)?);
        Ok(PreparedRequest {
            api_base,
            url,
            headers: headers(request, defaults),
            body: Value::Object(body),
        })
    }

    /// The API base, the URL and every field of the body but the messages: the standard fields, the
    /// hints under them, the user's `extra_body` over both.
    fn parts(
        request: &ChatRequest,
        defaults: &ServerDefaults,
        stream: bool,
    ) -> (String, String, Map<String, Value>) {
        let api_base = request
            .model_args
            .endpoint
            .api_base
            .as_deref()
            .or(defaults.api_base.as_deref())
            .unwrap_or(OPENAI_API_BASE)
            .trim_end_matches('/')
            .to_owned();
        let url = format!("{api_base}/chat/completions");
        let body = merge_body(
            standard_fields(request, stream),
            request.hint_fields.body.clone(),
            request.model_args.endpoint.extra_body.clone(),
        );
        (api_base, url, body)
    }

    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// `{"url", "headers", "body"}` with every credential replaced by `[redacted]`: safe to print.
    pub fn to_redacted_json(&self) -> Value {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.clone(),
                    Value::from(printable_header_value(name, value)),
                )
            })
            .collect();
        json!({"url": redact_url(&self.url), "headers": headers, "body": self.body})
    }
}

impl fmt::Debug for PreparedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PreparedRequest({})", self.to_redacted_json())
    }
}

/// Credentials, then hint headers under the user's `extra_headers`, lowercased.
fn headers(request: &ChatRequest, defaults: &ServerDefaults) -> Vec<(String, String)> {
    let args = &request.model_args.endpoint;
    let mut base = Vec::with_capacity(1 + request.hint_fields.headers.len());
    // A fallback endpoint sends its own key or none: the environment's key is the agent's own
    // server's, and never travels to another host.
    let default_key = defaults.api_key.as_ref().filter(|_| request.notes.hop == 0);
    let key = args.api_key.as_ref().or(default_key);
    if let Some(key) = key.filter(|k| !k.expose().is_empty()) {
        base.push((
            "authorization".to_owned(),
            format!("Bearer {}", key.expose()),
        ));
    }
    base.extend(request.hint_fields.headers.iter().cloned());
    // Lowercase, as HTTP/2 requires and hyper sends them: the prepared request is what goes out.
    merge_headers(&base, &args.extra_headers)
        .into_iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value))
        .collect()
}

/// The request as it goes out: its URL, its headers, and its body already serialized.
pub(crate) struct Outgoing {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Outgoing {
    /// The bytes [`PreparedRequest::build`] (or `build_streaming`) would send, made without the
    /// JSON tree of the messages: they are written straight from the dialog into the body (building
    /// that tree and dropping it cost nearly half of a turn's CPU, measured by `bench floor`).
    pub(crate) fn build(
        request: &ChatRequest,
        defaults: &ServerDefaults,
        stream: bool,
    ) -> Result<Self, InvokeError> {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            messages: WireMessages<'a>,
            #[serde(flatten)]
            rest: &'a Map<String, Value>,
        }
        let (_, url, mut rest) = PreparedRequest::parts(request, defaults, stream);
        let unwritable = |e: serde_json::Error| InvokeError::Request {
            problem: e.to_string(),
        };
        // `messages` is reserved in `model_args` and `extra_body`; were it there anyway, the merged
        // body is sent as it is, as `PreparedRequest` would.
        let body = if rest.contains_key("messages") {
            serde_json::to_vec(&rest).map_err(unwritable)?
        } else {
            serde_json::to_vec(&Body {
                messages: WireMessages(&request.messages),
                rest: &rest,
            })
            .map_err(unwritable)?
        };
        rest.clear();
        Ok(Outgoing {
            url,
            headers: headers(request, defaults),
            body,
        })
    }
}

/// The dialog's messages as the chat completions API takes them, as JSON.
fn messages_json(request: &ChatRequest) -> Result<Value, InvokeError> {
    serde_json::to_value(WireMessages(&request.messages)).map_err(|e| InvokeError::Request {
        problem: e.to_string(),
    })
}

/// The fields hints may never replace: model, the agent's parameters, tools, formats (and the
/// messages, which the callers add).
fn standard_fields(request: &ChatRequest, stream: bool) -> Map<String, Value> {
    let mut standard = request.model_args.endpoint.params.clone();
    standard.insert(
        "model".into(),
        Value::from(strip_provider_prefix(&request.model)),
    );
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|t| t.to_request_json()).collect();
        standard.insert("tools".into(), Value::Array(tools));
    }
    for (key, value) in [
        ("tool_choice", &request.tool_choice),
        ("response_format", &request.response_format),
    ] {
        if let Some(value) = value {
            standard.insert(key.into(), value.clone());
        }
    }
    if stream {
        standard.insert("stream".into(), Value::Bool(true));
        standard.insert("stream_options".into(), json!({"include_usage": true}));
    }
    standard
}

/// The hints a request's body carries as it is sent: after the merge under the agent's parameters and
/// the user's `extra_body`, and after the profile's own transformation (vLLM's negated priority).
/// Read where the request's profile puts each hint (any profile's place when it has none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SentHints {
    /// The profile the hints were shaped for, if known.
    pub(crate) profile: Option<Profile>,
    /// The hint values, as sent.
    pub(crate) wire: WireHints,
    /// The session header, whatever the profile.
    pub(crate) session: Option<String>,
    /// The parent-session header, whatever the profile.
    pub(crate) parent_session: Option<String>,
}

impl SentHints {
    /// Reads the fields the body of `request` will carry, each where the merge will put it, without
    /// merging: messages and tools cannot hold hints, and the body is merged once, to be sent.
    pub(crate) fn of(request: &ChatRequest) -> Self {
        let (standard, hints, extra) = (
            &request.model_args.endpoint.params,
            &request.hint_fields.body,
            &request.model_args.endpoint.extra_body,
        );
        let lookup = |path: BodyPath| merged_value(standard, hints, extra, path);
        let wire = match request.notes.profile {
            Some(profile) => profile.shape().read(lookup),
            None => WireHints::read_any(lookup),
        };
        SentHints {
            profile: request.notes.profile,
            wire,
            session: hint_header(request, Profile::session_header),
            parent_session: hint_header(request, Profile::parent_header),
        }
    }
}

/// The header named by `name` for the request's profile (for some profile, when it has none) that the
/// hints put on `request`.
fn hint_header(request: &ChatRequest, name: fn(Profile) -> &'static str) -> Option<String> {
    let profiles = match &request.notes.profile {
        Some(profile) => std::slice::from_ref(profile),
        None => &Profile::ALL[..],
    };
    profiles
        .iter()
        .find_map(|p| request.hint_fields.header(name(*p)))
        .map(str::to_owned)
}

// Lenient response types: every field optional, unknown fields ignored, any finish reason kept; but a
// field of the wrong type is an error that names it, and memory stays proportional to what is kept.

#[derive(Debug, Deserialize)]
pub(crate) struct WireResponse {
    id: Option<String>,
    model: Option<String>,
    nvext: Option<WireNvext>,
    choices: Option<FirstOnly<WireChoice>>,
    usage: Option<WireUsage>,
    /// Some servers answer 200 with an error object.
    error: Option<ErrorField>,
}

/// Dynamo's extension of the answer: which worker served it, when asked.
#[derive(Debug, Deserialize)]
pub(crate) struct WireNvext {
    worker_id: Option<Value>,
}

impl WireNvext {
    /// The decode worker (the one that streamed the answer), else whatever the server put there.
    pub(crate) fn worker(&self) -> Option<String> {
        let id = self.worker_id.as_ref()?;
        let text = match id.get("decode_worker_id").unwrap_or(id) {
            Value::String(text) => text.clone(),
            Value::Null => return None,
            other => other.to_string(),
        };
        Some(short(&text))
    }
}

/// Most characters kept of a name the server gives (model, worker): they end up in spans.
const MAX_NAME_CHARS: usize = 256;

/// `text` cut at [`MAX_NAME_CHARS`] and made printable.
pub(crate) fn short(text: &str) -> String {
    printable(text, MAX_NAME_CHARS, false)
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    content: Option<Content>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<ToolCallList<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Arguments>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<WireUsageDetails>,
}

#[derive(Debug, Deserialize)]
struct WireUsageDetails {
    cached_tokens: Option<u64>,
}

/// Parses a chat completion body leniently: `content: null`, unknown finish reasons, reasoning fields,
/// content given as a list of parts, tool calls without ids. What is not a chat completion is an
/// [`InvokeError::InvalidResponse`] with a short excerpt (secrets redacted) or the field at fault.
pub(crate) fn parse_completion(
    body: &[u8],
    secrets: &Secrets,
) -> Result<ChatResponse, InvokeError> {
    let wire: WireResponse =
        parse_json(body, secrets).map_err(|problem| InvokeError::InvalidResponse { problem })?;
    wire.into_response(body, secrets)
}

impl WireResponse {
    fn into_response(self, body: &[u8], secrets: &Secrets) -> Result<ChatResponse, InvokeError> {
        let invalid = |problem: String| InvokeError::InvalidResponse { problem };
        let Some(choice) = self.choices.and_then(|c| c.0) else {
            return Err(invalid(match self.error {
                Some(error) => format!(
                    "the server reported an error: {}",
                    printable(&secrets.redact(&error.0), EXCERPT_CHARS, false)
                ),
                None => format!(
                    "it has no choices: {}",
                    excerpt(body.trim_ascii(), EXCERPT_CHARS, secrets)
                ),
            }));
        };
        let wire = choice
            .message
            .ok_or_else(|| invalid("its first choice has no message".into()))?;
        let tool_calls = wire
            .tool_calls
            .map(|c| c.0)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, call)| {
                let function = call.function.unwrap_or(WireFunction {
                    name: None,
                    arguments: None,
                });
                ToolCall {
                    id: call.id.unwrap_or_else(|| format!("call_{i}")),
                    name: function.name.unwrap_or_default(),
                    arguments: function.arguments.map(|a| a.0).unwrap_or_default(),
                }
            })
            .collect();
        let usage = self.usage.map(WireUsage::into_usage);
        Ok(ChatResponse {
            id: self.id,
            model: self.model.as_deref().map(short),
            worker: self.nvext.as_ref().and_then(WireNvext::worker),
            message: Message {
                role: Role::Assistant,
                content: wire.content.map(|c| c.0),
                reasoning: wire.reasoning_content.or(wire.reasoning),
                tool_calls,
                tool_call_id: None,
                usage,
                finish_reason: choice.finish_reason,
            },
        })
    }
}

impl WireUsage {
    pub(crate) fn into_usage(self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.unwrap_or(0),
            completion_tokens: self.completion_tokens.unwrap_or(0),
            cached_tokens: self.prompt_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lllm_core::{MessageLog, ModelArgs, RequestFields};

    use super::*;

    fn parse_response(body: Value) -> Result<ChatResponse, InvokeError> {
        parse_completion(
            &serde_json::to_vec(&body).expect("json"),
            &Secrets::default(),
        )
    }

    fn request(args: ModelArgs, hints: RequestFields) -> ChatRequest {
        ChatRequest::new(
            "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
            [Message::system("sys"), Message::user("hi")]
                .into_iter()
                .collect::<MessageLog>(),
            Arc::new(args),
            hints,
        )
    }

    #[test]
    fn builds_url_body_and_redacts_credentials() {
        let args = ModelArgs::new()
            .api_base("http://127.0.0.1:9/v1/")
            .api_key("sk-secret")
            .max_tokens(24)
            .param("temperature", 0.5);
        let hints = RequestFields {
            headers: vec![("x-session-id".into(), "abc".into())],
            body: Map::new(),
        };
        let prepared =
            PreparedRequest::build(&request(args, hints), &ServerDefaults::none()).expect("builds");
        assert_eq!(prepared.url, "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(prepared.header("Authorization"), Some("Bearer sk-secret"));
        assert_eq!(
            prepared.body,
            json!({"model": "Qwen/Qwen2.5-7B-Instruct", "max_tokens": 24, "temperature": 0.5,
                   "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]})
        );
        let shown = prepared.to_redacted_json().to_string();
        assert!(!shown.contains("sk-secret"), "{shown}");
        let odd = ModelArgs::new()
            .api_base("http://user:pw-leak@127.0.0.1:9/v1?token=q-leak")
            .extra_header("X-Auth-Token", "tok-leak")
            .extra_header("x-api-key", "key-leak");
        let odd = PreparedRequest::build(
            &request(odd, RequestFields::default()),
            &ServerDefaults::none(),
        )
        .expect("builds")
        .to_redacted_json()
        .to_string();
        assert!(!odd.contains("leak"), "{odd}");
        assert!(shown.contains("x-session-id"), "{shown}");
        assert!(!format!("{prepared:?}").contains("sk-secret"));
    }

    #[test]
    fn hint_fields_never_replace_standard_fields() {
        let mut hint_body = Map::new();
        hint_body.insert("model".into(), json!("hint-model"));
        hint_body.insert("messages".into(), json!([]));
        hint_body.insert("max_tokens".into(), json!(1));
        hint_body.insert("nvext".into(), json!({"agent_hints": {"priority": 1}}));
        let hints = RequestFields {
            headers: Vec::new(),
            body: hint_body,
        };
        let prepared = PreparedRequest::build(
            &request(ModelArgs::new().max_tokens(24), hints),
            &ServerDefaults::none(),
        )
        .expect("builds");
        assert_eq!(prepared.body["model"], "Qwen/Qwen2.5-7B-Instruct");
        assert_eq!(prepared.body["messages"].as_array().map(Vec::len), Some(2));
        assert_eq!(prepared.body["max_tokens"], 24);
        assert_eq!(
            prepared.body["nvext"],
            json!({"agent_hints": {"priority": 1}})
        );
    }

    #[test]
    fn the_bytes_sent_are_the_prepared_body() {
        use lllm_core::InferenceHints;

        let dynamo = InferenceHints::builder()
            .profile(Profile::Dynamo)
            .priority(3)
            .build()
            .expect("hints");
        let fields = dynamo
            .request_fields(Some("d"), None, &ModelArgs::new().max_tokens(9))
            .expect("fields");
        let mut extra = Map::new();
        extra.insert("nvext".into(), json!({"extra_fields": ["worker_id"]}));
        let mut sent = request(ModelArgs::new().max_tokens(9).extra_body(extra), fields);
        sent.messages
            .push(Message::assistant("an answer with \"quotes\" and ünïcode"));
        sent.tool_choice = Some(json!("none"));
        for stream in [false, true] {
            let prepared = PreparedRequest::build_with(&sent, &ServerDefaults::none(), stream)
                .expect("builds");
            let outgoing = Outgoing::build(&sent, &ServerDefaults::none(), stream).expect("builds");
            let body: Value = serde_json::from_slice(&outgoing.body).expect("json");
            assert_eq!(body, prepared.body, "stream {stream}");
            assert_eq!(outgoing.url, prepared.url);
            assert_eq!(outgoing.headers, prepared.headers);
        }
    }

    #[test]
    fn sent_hints_are_what_the_prepared_body_carries() {
        use lllm_core::InferenceHints;

        let vllm = InferenceHints::builder()
            .profile(Profile::Vllm)
            .priority(5)
            .cache_salt("t")
            .build()
            .expect("hints");
        let fields = vllm
            .request_fields(Some("d"), Some("p"), &ModelArgs::new())
            .expect("fields");
        let mut extra = Map::new();
        extra.insert("cache_salt".into(), json!("user"));
        extra.insert("nvext".into(), json!({"agent_hints": {"priority": 9}}));
        let mut sent = request(ModelArgs::new().extra_body(extra), fields);
        sent.notes.profile = Some(Profile::Vllm);
        let hints = sent.sent_hints();
        let prepared = PreparedRequest::build(&sent, &ServerDefaults::none()).expect("builds");
        let body = prepared.body.as_object().expect("object");
        assert_eq!(
            *hints,
            SentHints {
                profile: Some(Profile::Vllm),
                wire: Profile::Vllm.shape().read_body(body),
                session: Some("d".into()),
                parent_session: Some("p".into()),
            }
        );
        // The user's salt wins, and vLLM's place is read, not Dynamo's that extra_body also fills.
        assert_eq!(hints.wire.priority, Some(-5));
        assert_eq!(hints.wire.cache_salt.as_deref(), Some("user"));
        assert!(std::ptr::eq(hints, sent.sent_hints()), "read once");
        // Without a profile, any profile's place is read, Dynamo's first.
        let mut unknown = sent.clone();
        unknown.notes.profile = None;
        assert_eq!(unknown.sent_hints().wire.priority, Some(9));
    }

    #[test]
    fn without_a_key_no_authorization_header_is_sent() {
        let prepared = PreparedRequest::build(
            &request(ModelArgs::new(), RequestFields::default()),
            &ServerDefaults {
                api_base: Some("http://127.0.0.1:1".into()),
                api_key: None,
            },
        )
        .expect("builds");
        assert_eq!(prepared.header("authorization"), None);
        assert_eq!(prepared.url, "http://127.0.0.1:1/chat/completions");
    }

    #[test]
    fn parses_null_content_unknown_reasons_reasoning_and_parts() {
        let response = parse_response(json!({
            "choices": [{"message": {"role": "assistant", "content": null, "reasoning_content": "hmm",
                          "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
                         "finish_reason": "brand_new_reason"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 0, "prompt_tokens_details": {"cached_tokens": 4}},
            "some_extension": {"x": 1}
        }))
        .expect("lenient");
        let m = response.message;
        assert_eq!(m.content, None);
        assert_eq!(m.reasoning.as_deref(), Some("hmm"));
        assert_eq!(m.finish_reason.as_deref(), Some("brand_new_reason"));
        assert_eq!(m.tool_calls[0].id, "call_0");
        assert_eq!(m.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(m.usage.and_then(|u| u.cached_tokens), Some(4));

        let parts = parse_response(json!({"choices": [{"message": {"content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "finish_reason": null}]}))
        .expect("parts");
        assert_eq!(parts.message.content.as_deref(), Some("ab"));
        assert!(parse_response(json!({"choices": []})).is_err());
        assert!(parse_response(json!({"choices": null})).is_err());
        assert!(parse_response(json!([1, 2])).is_err());
    }
}
