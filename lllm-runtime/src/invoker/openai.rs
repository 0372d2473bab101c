//! The OpenAI-compatible invoker, on async-openai's bring-your-own-types API.

use std::str::FromStr;

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::Client;
use async_trait::async_trait;
use futures::StreamExt;
use lllm_core::full_message;
use lllm_core::internal::redact_url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;

use super::service::{HttpFailure, HttpService};
use super::stream::{StreamAccumulator, WireChunk};
use super::wire::WireResponse;
use super::{
    ChatRequest, ChatResponse, Delta, InvokeError, Invoker, PreparedRequest, ServerDefaults,
};

/// Sends chat completions to any OpenAI-compatible server (OpenAI, vLLM, SGLang, llama.cpp, Dynamo).
///
/// Each call makes one attempt; see [`crate::Agent`] for retries and timeouts.
#[derive(Debug, Clone)]
pub struct OpenAiInvoker {
    http: reqwest::Client,
    defaults: ServerDefaults,
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
        OpenAiInvoker {
            http: reqwest::Client::new(),
            defaults,
        }
    }

    /// The request `invoke` would send for `request`.
    pub fn prepare(&self, request: &ChatRequest) -> Result<PreparedRequest, InvokeError> {
        PreparedRequest::build(request, &self.defaults)
    }
}

impl OpenAiInvoker {
    fn client(&self, prepared: &PreparedRequest) -> Client<BaseUrl> {
        Client::build(
            self.http.clone(),
            BaseUrl {
                api_base: prepared.api_base.clone(),
                no_key: SecretString::from(String::new()),
            },
        )
        .with_http_service(HttpService {
            client: self.http.clone(),
        })
    }
}

#[async_trait]
impl Invoker for OpenAiInvoker {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        let prepared = self.prepare(request)?;
        let headers = header_map(&prepared.headers)?;
        let response: WireResponse = self
            .client(&prepared)
            .chat()
            .headers(headers)
            .create_byot(prepared.body)
            .await
            .map_err(|e| invoke_error(e, &prepared.url))?;
        response.into_response()
    }

    async fn invoke_stream(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        let prepared = PreparedRequest::build_streaming(request, &self.defaults)?;
        let headers = header_map(&prepared.headers)?;
        let url = prepared.url.clone();
        let mut chunks = self
            .client(&prepared)
            .chat()
            .headers(headers)
            .create_stream_byot::<_, WireChunk>(prepared.body)
            .await
            .map_err(|e| invoke_error(e, &url))?;
        let mut answer = StreamAccumulator::default();
        while let Some(chunk) = chunks.next().await {
            answer.push(chunk.map_err(|e| invoke_error(e, &url))?, on_delta)?;
        }
        answer.finish(&url)
    }
}

/// async-openai configuration that only supplies the base URL: every header, credentials included, is
/// set per request from [`PreparedRequest`], so no `Authorization` is sent without a key.
#[derive(Debug)]
struct BaseUrl {
    api_base: String,
    no_key: SecretString,
}

impl Config for BaseUrl {
    fn headers(&self) -> HeaderMap {
        HeaderMap::new()
    }
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.api_base)
    }
    fn query(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }
    fn api_base(&self) -> &str {
        &self.api_base
    }
    fn api_key(&self) -> &SecretString {
        &self.no_key
    }
}

fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, InvokeError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let invalid = || InvokeError::InvalidHeader { name: name.clone() };
        let header = HeaderName::from_str(name).map_err(|_| invalid())?;
        let mut value = HeaderValue::from_str(value).map_err(|_| invalid())?;
        if name.eq_ignore_ascii_case("authorization") {
            value.set_sensitive(true);
        }
        map.insert(header, value);
    }
    Ok(map)
}

fn invoke_error(error: OpenAIError, url: &str) -> InvokeError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
            Ok(failure) => InvokeError::Http {
                status: failure.status,
                message: failure.message,
                retry_after: failure.retry_after,
            },
            Err(other) => InvokeError::Connection {
                url: redact_url(url),
                message: full_message(other.as_ref()),
            },
        },
        // The URL is given once, credentials redacted; reqwest's message would repeat it in clear.
        OpenAIError::Reqwest(e) => InvokeError::Connection {
            url: redact_url(url),
            message: full_message(&e.without_url()),
        },
        OpenAIError::ApiError(api) => InvokeError::Http {
            status: api.status_code.as_u16(),
            message: api.api_error.message,
            retry_after: None,
        },
        OpenAIError::JSONDeserialize(e, _) => InvokeError::InvalidResponse {
            problem: e.to_string(),
        },
        // A broken event stream is almost always a broken connection.
        OpenAIError::StreamError(e) => InvokeError::Connection {
            url: redact_url(url),
            message: e.to_string(),
        },
        other => InvokeError::Request {
            problem: other.to_string(),
        },
    }
}
