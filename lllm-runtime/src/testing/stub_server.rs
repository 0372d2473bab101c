//! A real HTTP server on 127.0.0.1 that speaks just enough of the chat completions API, answers from a
//! script, and records every request (method, path, headers as received, JSON body).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// One request the stub server received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Path, such as `/v1/chat/completions`.
    pub path: String,
    /// Headers in the order received, names lowercase; a repeated header appears once per value.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`null` when it is not JSON).
    pub body: Value,
    /// When it arrived.
    pub received_at: Instant,
}

impl RecordedRequest {
    /// Every value of header `name` (any case).
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The value of header `name`, when it was sent exactly once.
    pub fn header(&self, name: &str) -> Option<&str> {
        match self.header_values(name).as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
}

/// What the stub answers to one request.
#[derive(Debug, Clone)]
pub struct StubReply {
    status: u16,
    headers: Vec<(String, String)>,
    body: StubBody,
    delay: Duration,
    together: Option<(usize, Duration)>,
    /// Only for a request whose last user message contains this text.
    only_for: Option<String>,
}

#[derive(Debug, Clone)]
enum StubBody {
    Full(String),
    /// Sent piece by piece; with `cut`, the connection is broken after the last piece.
    Pieces {
        pieces: Vec<String>,
        cut: bool,
    },
}

impl StubReply {
    /// A 200 chat completion with this text and usage counts.
    pub fn text(text: &str) -> Self {
        Self::completion(json!({"role": "assistant", "content": text}))
    }

    /// A 200 chat completion calling tools: `(id, name, arguments)` each, arguments as raw text.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        Self::completion(json!({"role": "assistant", "content": null, "tool_calls": calls}))
    }

    /// A 200 server-sent-event stream of these chunks, ended by `data: [DONE]`.
    pub fn sse(chunks: &[Value]) -> Self {
        Self::event_stream(chunks, true, false)
    }

    /// A streamed answer: the text in these pieces, a finish reason, then a usage chunk.
    pub fn sse_text(pieces: &[&str]) -> Self {
        let mut chunks: Vec<Value> = pieces
            .iter()
            .map(|p| json!({"id": "chatcmpl-stub", "choices": [{"index": 0, "delta": {"content": p}}]}))
            .collect();
        chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
        chunks.push(json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}));
        Self::sse(&chunks)
    }

    /// An event stream of these chunks after which the connection breaks (no `[DONE]`).
    pub fn sse_cut(chunks: &[Value]) -> Self {
        Self::event_stream(chunks, false, true)
    }

    /// An event stream of these chunks that ends cleanly but early: no finish reason, no `[DONE]`.
    pub fn sse_unfinished(chunks: &[Value]) -> Self {
        Self::event_stream(chunks, false, false)
    }

    fn event_stream(chunks: &[Value], done: bool, cut: bool) -> Self {
        let mut pieces: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        if done {
            pieces.push("data: [DONE]\n\n".to_owned());
        }
        StubReply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: StubBody::Pieces { pieces, cut },
            delay: Duration::ZERO,
            together: None,
            only_for: None,
        }
    }

    /// A 200 chat completion whose first choice has this `message` object.
    pub fn completion(message: Value) -> Self {
        Self::json(
            200,
            json!({"id": "chatcmpl-stub", "object": "chat.completion", "model": "stub",
                   "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}),
        )
    }

    /// An OpenAI-style error body with this status.
    pub fn error(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({"error": {"message": message, "type": "stub_error"}}),
        )
    }

    /// Any JSON body with this status.
    pub fn json(status: u16, body: Value) -> Self {
        StubReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: StubBody::Full(body.to_string()),
            delay: Duration::ZERO,
            together: None,
            only_for: None,
        }
    }

    /// A raw body with this status.
    pub fn raw(status: u16, body: &str) -> Self {
        StubReply {
            status,
            headers: Vec::new(),
            body: StubBody::Full(body.to_owned()),
            delay: Duration::ZERO,
            together: None,
            only_for: None,
        }
    }

    /// Adds a response header (such as `retry-after`).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Waits this long before answering.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Holds the answer until `count` requests have been in the server at the same time (this one
    /// among them): a test of concurrency that does not depend on how fast the machine is. When they
    /// never are (the client sent them one after another), it answers HTTP 400 after
    /// [`TOGETHER_LIMIT`], saying how many were.
    pub fn together(self, count: usize) -> Self {
        self.together_within(count, TOGETHER_LIMIT)
    }

    /// Answers only a request whose last user message contains `text`; other requests skip it and take
    /// the next reply in the queue. Concurrent requests arrive in no fixed order: this matches each
    /// reply to its request by content instead.
    pub fn for_message(mut self, text: &str) -> Self {
        self.only_for = Some(text.to_owned());
        self
    }

    /// [`together`](Self::together), giving up after `limit` instead of [`TOGETHER_LIMIT`].
    pub fn together_within(mut self, count: usize, limit: Duration) -> Self {
        self.together = Some((count, limit));
        self
    }
}

/// How long a [`StubReply::together`] answer waits for the others before it gives up.
pub const TOGETHER_LIMIT: Duration = Duration::from_secs(30);

struct Shared {
    script: Mutex<VecDeque<StubReply>>,
    recorded: Mutex<Vec<RecordedRequest>>,
    in_flight: Mutex<usize>,
    /// The most requests in flight at once so far. A watch, so held answers can wait for a count;
    /// it only grows, so a waiter cannot miss the moment (the current count may drop again before
    /// the waiter is polled).
    most_in_flight: tokio::sync::watch::Sender<usize>,
    /// What answers a request when no scripted reply fits: a delay before the default answer, or
    /// a reply used for every such request (see [`StubServer::answer_unscripted`]).
    unscripted: Mutex<(Duration, Option<StubReply>)>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            script: Mutex::default(),
            recorded: Mutex::default(),
            in_flight: Mutex::new(0),
            most_in_flight: tokio::sync::watch::Sender::new(0),
            unscripted: Mutex::default(),
        }
    }
}

/// Counts one request as in flight from its arrival until its handler ends or is dropped.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> Self {
        let now = {
            let mut in_flight = lock(&shared.in_flight);
            *in_flight += 1;
            *in_flight
        };
        shared.most_in_flight.send_if_modified(|most| {
            let grew = now > *most;
            *most = now.max(*most);
            grew
        });
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        *lock(&self.0.in_flight) -= 1;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A stub OpenAI-compatible server on `127.0.0.1` (a free port). When its script is empty it answers
/// every chat completion with `stub answer to: <last user message>`. It stops when dropped.
pub struct StubServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for StubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StubServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl StubServer {
    /// Starts the server on a free loopback port. Must be called inside a tokio runtime.
    pub async fn start() -> std::io::Result<StubServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                stopped.await.ok();
            });
            if let Err(error) = serve.await {
                tracing::error!(%error, "stub server stopped");
            }
        });
        Ok(StubServer {
            addr,
            shared,
            stop: Some(stop),
        })
    }

    /// `http://127.0.0.1:<port>/v1`: what `api_base` should be.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues replies, answered in order.
    pub fn push(&self, reply: StubReply) {
        lock(&self.shared.script).push_back(reply);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.recorded).clone()
    }

    /// The most requests that were being answered at the same time so far.
    pub fn most_in_flight(&self) -> usize {
        *self.shared.most_in_flight.borrow()
    }

    /// Makes every request no scripted reply fits wait `delay` (a fixed service time), then get
    /// `reply` when there is one (for example an error, to stand for a failing server), else the
    /// default answer.
    pub fn answer_unscripted(&self, delay: Duration, reply: Option<StubReply>) {
        *lock(&self.shared.unscripted) = (delay, reply);
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        lock(&self.shared.recorded).clear();
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let _in_flight = InFlight::enter(&shared);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let last_user = last_user_message(&body);
    let fallback = {
        let (delay, reply) = lock(&shared.unscripted).clone();
        reply
            .unwrap_or_else(|| StubReply::text(&format!("stub answer to: {last_user}")))
            .delay(delay)
    };
    lock(&shared.recorded).push(RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        received_at: Instant::now(),
    });
    let mut reply = {
        let mut script = lock(&shared.script);
        let fits = |r: &StubReply| {
            r.only_for
                .as_ref()
                .is_none_or(|t| last_user.contains(t.as_str()))
        };
        script.iter().position(fits).and_then(|i| script.remove(i))
    }
    .unwrap_or(fallback);
    if let Some((count, limit)) = reply.together {
        reply = wait_together(&shared, count, limit).await.unwrap_or(reply);
    }
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    into_response(reply)
}

/// Waits until `count` requests were in flight at once; `None` when they were, else the error to send.
async fn wait_together(shared: &Shared, count: usize, limit: Duration) -> Option<StubReply> {
    let mut most = shared.most_in_flight.subscribe();
    let met = tokio::time::timeout(limit, most.wait_for(|n| *n >= count))
        .await
        .is_ok_and(|seen| seen.is_ok());
    if met {
        return None;
    }
    Some(StubReply::error(
        400,
        &format!(
            "the stub waited {limit:?} for {count} requests at once; the most were {}",
            *shared.most_in_flight.borrow()
        ),
    ))
}

fn into_response(reply: StubReply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match reply.body {
        StubBody::Full(text) => Body::from(text),
        StubBody::Pieces { pieces, cut } => {
            let mut items: Vec<Result<Bytes, std::io::Error>> =
                pieces.into_iter().map(|p| Ok(Bytes::from(p))).collect();
            if cut {
                items.push(Err(std::io::Error::other("connection cut by the stub")));
            }
            // A short pause between pieces, so a client really receives them one by one.
            let stream = futures::stream::iter(items).then(|item| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                item
            });
            Body::from_stream(stream)
        }
    };
    let mut response = (status, body).into_response();
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::try_from(name),
            axum::http::HeaderValue::try_from(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// The text of the last user message of a chat request ("" when there is none).
fn last_user_message(body: &Value) -> String {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| {
            m.iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn post(client: &reqwest::Client, server: &StubServer) -> (u16, String) {
        ask(client, server, "").await
    }

    async fn ask(client: &reqwest::Client, server: &StubServer, text: &str) -> (u16, String) {
        let response = client
            .post(format!("{}/chat/completions", server.base_url()))
            .json(&json!({"messages": [{"role": "user", "content": text}]}))
            .send()
            .await
            .expect("the stub answers");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    #[tokio::test]
    async fn together_answers_only_requests_that_were_in_flight_at_once() {
        let server = StubServer::start().await.expect("server");
        let client = reqwest::Client::new();
        server.push(StubReply::text("one").together(2));
        server.push(StubReply::text("two").together(2));
        let (first, second) = tokio::join!(post(&client, &server), post(&client, &server));
        assert_eq!((first.0, second.0), (200, 200));
        assert_eq!(server.most_in_flight(), 2);

        let server = StubServer::start().await.expect("server");
        let limit = Duration::from_millis(200);
        server.push(StubReply::text("one").together_within(2, limit));
        server.push(StubReply::text("two").together_within(2, limit));
        let (status, body) = post(&client, &server).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("the most were 1"), "{body}");
        assert_eq!(server.most_in_flight(), 1);
    }

    #[tokio::test]
    async fn a_reply_for_a_message_waits_for_its_request() {
        let server = StubServer::start().await.expect("server");
        let client = reqwest::Client::new();
        server.push(StubReply::text("for b").for_message("b"));
        server.push(StubReply::text("for anyone"));
        let (_, first) = ask(&client, &server, "a").await;
        assert!(first.contains("for anyone"), "{first}");
        let (_, second) = ask(&client, &server, "b").await;
        assert!(second.contains("for b"), "{second}");
        let (_, third) = ask(&client, &server, "c").await;
        assert!(third.contains("stub answer to: c"), "{third}");
    }
}
