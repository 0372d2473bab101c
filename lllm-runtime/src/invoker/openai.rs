//! The OpenAI-compatible invoker: requests built from async-openai's types, sent and read by hand with
//! reqwest so that every byte of the answer is read within limits (see `service`).

use async_trait::async_trait;
use lllm_core::internal::typed_header;
use lllm_core::secret::is_secret_header;
use reqwest::header::HeaderMap;

use super::error::Secrets;
use super::service::{is_event_stream, read_limited, send, ResponseLimits};
use super::stream::SseAnswer;
use super::wire::{parse_completion, Outgoing};
use super::{
    ChatRequest, ChatResponse, Delta, InvokeError, Invoker, PreparedRequest, ServerDefaults,
    DEFAULT_TIMEOUT,
};

/// Sends chat completions to any OpenAI-compatible server (OpenAI, vLLM, SGLang, llama.cpp, Dynamo).
///
/// Each call makes one attempt; see [`crate::Agent`] for retries. The server is not trusted: redirects
/// are never followed (the call fails with [`InvokeError::Redirect`]), bodies and events are read
/// within [`ResponseLimits`], and the whole attempt, reading the answer included, ends at the request's
/// `model_args.timeout`.
#[derive(Debug, Clone)]
pub struct OpenAiInvoker {
    http: reqwest::Client,
    defaults: ServerDefaults,
    limits: ResponseLimits,
}

impl Default for OpenAiInvoker {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenAiInvoker {
    /// An invoker whose fallback server and key come from `OPENAI_BASE_URL` / `OPENAI_API_KEY`.
    pub fn new() -> Self {
        Self::with_defaults(ServerDefaults::from_env())
    }

    /// An invoker with explicit fallbacks (for tests and embedding).
    pub fn with_defaults(defaults: ServerDefaults) -> Self {
        // Like `reqwest::Client::new`, this fails only when the TLS backend cannot start.
        #[allow(clippy::expect_used)]
        let http = crate::tls::http_client()
            .build()
            .expect("the HTTP client starts");
        OpenAiInvoker {
            http,
            defaults,
            limits: ResponseLimits::default(),
        }
    }

    /// The same invoker with other size limits on answers.
    pub fn with_limits(mut self, limits: ResponseLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The size limits on answers.
    pub fn limits(&self) -> ResponseLimits {
        self.limits
    }

    /// The request `invoke` would send for `request`.
    pub fn prepare(&self, request: &ChatRequest) -> Result<PreparedRequest, InvokeError> {
        PreparedRequest::build(request, &self.defaults)
    }

    /// Sends `prepared` and hands the answer to `read`, all within the request's timeout; every
    /// error comes back with the request's secrets redacted.
    async fn exchange<T>(
        &self,
        request: &ChatRequest,
        stream: bool,
        read: impl AsyncFnOnce(reqwest::Response, &Secrets, &str) -> Result<T, InvokeError>,
    ) -> Result<T, InvokeError> {
        let outgoing = Outgoing::build(request, &self.defaults, stream)?;
        let secrets = Secrets::of_request(&outgoing.headers, &outgoing.url);
        let limit = request
            .model_args
            .endpoint
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT);
        let attempt = async {
            let headers = header_map(&outgoing.headers)?;
            let response = send(
                &self.http,
                &outgoing.url,
                headers,
                outgoing.body,
                &self.limits,
                &secrets,
            )
            .await?;
            read(response, &secrets, &outgoing.url).await
        };
        tokio::time::timeout(limit, attempt)
            .await
            .unwrap_or(Err(InvokeError::Timeout(limit)))
            .map_err(|e| e.redacted(&secrets))
    }
}

impl OpenAiInvoker {
    /// `GET {api_base}/models` with the request's headers (its key), within its timeout.
    async fn models(
        &self,
        request: &ChatRequest,
    ) -> Result<(serde_json::Value, String), InvokeError> {
        let prepared = PreparedRequest::build(request, &self.defaults)?;
        let url = format!("{}/models", prepared.api_base);
        let secrets = Secrets::of_request(&prepared.headers, &url);
        let limit = request
            .model_args
            .endpoint
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT);
        let attempt = async {
            let headers = header_map(&prepared.headers)?;
            let response = self
                .http
                .get(&url)
                .headers(headers)
                .send()
                .await
                .map_err(|e| super::service::connection_error(&url, e))?;
            let status = response.status();
            if !status.is_success() {
                return Err(InvokeError::Http {
                    status,
                    message: format!(
                        "GET {} answered {status}",
                        lllm_core::secret::redact_url(&url)
                    ),
                    retry_after: None,
                });
            }
            let body = read_limited(response, super::models::MAX_MODELS_BYTES, &url).await?;
            serde_json::from_slice(&body).map_err(|e| InvokeError::Http {
                status,
                message: format!(
                    "GET {}: not a JSON list of models ({e})",
                    lllm_core::secret::redact_url(&url)
                ),
                retry_after: None,
            })
        };
        let model = prepared.body["model"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        tokio::time::timeout(limit, attempt)
            .await
            .unwrap_or(Err(InvokeError::Timeout(limit)))
            .map(|models| (models, model))
            .map_err(|e| e.redacted(&secrets))
    }
}

#[async_trait]
impl Invoker for OpenAiInvoker {
    async fn context_window(&self, request: &ChatRequest) -> Result<Option<u32>, InvokeError> {
        let (models, model) = self.models(request).await?;
        Ok(super::models::context_length(&models, &model))
    }

    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let max = self.limits.max_answer_bytes;
        self.exchange(request, false, async |response, secrets, url| {
            let body = read_limited(response, max, url).await?;
            parse_completion(&body, secrets)
        })
        .await
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let limits = self.limits;
        self.exchange(request, true, async |mut response, secrets, url| {
            if !is_event_stream(&response) {
                // A server that ignores `stream: true` answers with one body.
                let body = read_limited(response, limits.max_answer_bytes, url).await?;
                let answer = parse_completion(&body, secrets)?;
                if let Some(reasoning) = answer.message.reasoning.as_deref() {
                    on_delta(Delta::Reasoning(reasoning));
                }
                if let Some(text) = answer.message.content.as_deref() {
                    on_delta(Delta::Text(text));
                }
                return Ok(answer);
            }
            let mut answer = SseAnswer::new(&limits, secrets.clone());
            while let Some(bytes) = response
                .chunk()
                .await
                .map_err(|e| super::service::connection_error(url, e))?
            {
                if answer.feed(&bytes, on_delta)? {
                    break;
                }
            }
            answer.finish(url)
        })
        .await
    }
}

fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, InvokeError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let invalid = || InvokeError::InvalidHeader { name: name.clone() };
        // The one header rule (`lllm_core::check_header`), which the loader held extra_headers to.
        let (header, mut value) = typed_header(name, value).map_err(|_| invalid())?;
        if is_secret_header(name) {
            value.set_sensitive(true);
        }
        map.insert(header, value);
    }
    Ok(map)
}
