//! `lllm serve`: tactics as models over HTTP (feature `serve`).
//!
//! Each tactic is a model. `POST /v1/chat/completions` and `POST /v1/responses` speak OpenAI's
//! APIs, streamed or not; `/v1/runs` starts, watches, cancels and approves journaled runs. The
//! caller's conversation id (the first of [`SESSION_HEADERS`]) becomes the session of the run's
//! first dialog on every request of the conversation, so a KV-aware router keeps the conversation,
//! and every fork the tactic makes for it, on the worker that holds its prefix. See `docs/serve.md`.
//!
//! ```no_run
//! use lllm_runtime::serve::Served;
//! use lllm_runtime::{Engine, load_tactic, TacticRegistry};
//! use lllm_runtime::engine::tactic_name;
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::path::Path::new("reviewer.yaml");
//! let engine = Engine::new(TacticRegistry::new());
//! let tactic = engine.prepare(load_tactic(path)?).await?;
//! let served = Served::builder(engine)
//!     .tactic(tactic_name(path), tactic)
//!     .state_dir("/var/lib/lllm")
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8642").await?;
//! served.serve(listener, std::future::pending()).await?;
//! # Ok(()) }
//! ```
#![doc = include_str!("../../../docs/serve.md")]

mod admission;
mod auth;
mod body;
mod caller_tools;
mod chat;
mod console;
mod conversations;
mod cors;
mod decisions;
mod error;
mod failure;
mod files;
mod host;
mod identity;
mod input;
mod listener;
mod listing;
mod log;
mod memo;
mod models;
mod named_locks;
mod origin;
mod paused;
mod questions;
mod references;
mod responses;
mod run_stream;
mod runs;
mod session;
mod sse;
mod store;
mod task_log;
mod unhonoured;
mod watch;

pub use paused::{DEFAULT_MAX_PAUSED_RUNS, DEFAULT_PAUSE_KEPT};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use conversations::{DEFAULT_KEPT_CONVERSATIONS, DEFAULT_KEPT_CONVERSATION_BYTES};
pub use cors::{CorsOrigin, CorsOriginError};
pub use input::CLIENT_SYSTEM_VAR;
pub use session::{ECHO_HEADER, PARENT_SESSION_HEADERS, SESSION_HEADERS, SOURCE_HEADER};

use crate::engine::{Engine, PreparedTactic};
use admission::Admission;
use auth::ServeKey;
use conversations::{Bounds, Conversations};
use named_locks::NamedLocks;
use store::RunStore;

/// Runs at once by default.
pub const DEFAULT_MAX_RUNS: usize = 64;
/// The largest request body taken by default.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Connections served at once by default; more wait to be accepted.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// How long a client may take to send a request's headers, and its body.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Two tactics would be the same model.
    #[error("two tactics are both the model `{model}`: rename one file (a model is named after its file, or its folder for `tactic.yaml`)")]
    DuplicateModel {
        /// The model id.
        model: String,
    },
    /// No tactic to serve.
    #[error("no tactic to serve: name at least one tactic file")]
    NoTactics,
    /// A setting of the builder is out of its range (`max_runs` 0 would serve nothing).
    #[error("{setting} {problem}")]
    Setting {
        /// The setting (`max_runs`, `max_connections`).
        setting: &'static str,
        /// What is wrong, and what is allowed.
        problem: lllm_core::ValueError,
    },
    /// The state directory cannot be used.
    #[error("the state directory {}: {source}", path.display())]
    State {
        /// The directory or file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// Accepting connections failed.
    #[error("the listener failed: {0}")]
    Listen(#[source] std::io::Error),
}

/// One model: a prepared tactic under its id.
#[derive(Debug)]
pub(crate) struct Model {
    pub(crate) id: String,
    pub(crate) tactic: Arc<PreparedTactic>,
    pub(crate) created: u64,
    /// The digest of the tactic file as served: a conversation's stored dialogs are continued only
    /// by the tactic that made them.
    pub(crate) fingerprint: String,
}

/// What every route shares.
#[derive(Debug)]
pub(crate) struct ServeState {
    pub(crate) engine: Engine,
    pub(crate) models: Vec<Model>,
    pub(crate) admission: Arc<Admission>,
    /// The conversations answered, for their next turns.
    pub(crate) conversations: Arc<Conversations>,
    /// The runs paused on calls of the caller's tools, until the caller's results come.
    pub(crate) paused: Arc<paused::PausedRuns>,
    pub(crate) runs: RunStore,
    /// One creation at a time per `Idempotency-Key`.
    pub(crate) keys: Arc<NamedLocks>,
    /// One decision (an approval, a cancel) at a time per run id.
    pub(crate) decisions: Arc<NamedLocks>,
    pub(crate) max_body: usize,
    pub(crate) read_timeout: Duration,
    /// Set when the server stops accepting: streams that never end by themselves (the run list)
    /// end then, so that the connections in flight can finish.
    pub(crate) closing: tokio::sync::watch::Sender<bool>,
    /// The run lists the streams send, built once per change.
    pub(crate) lists: listing::ListCache,
}

impl ServeState {
    /// The model `id`, or a 404 naming the served ones.
    pub(crate) fn model(&self, id: &str) -> Result<&Model, error::ApiError> {
        self.models.iter().find(|m| m.id == id).ok_or_else(|| {
            let known: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
            error::ApiError::not_found(
                "model_not_found",
                format!(
                    "no model `{}` here: this server serves {}",
                    shorten(id),
                    known.join(", ")
                ),
            )
        })
    }
}

/// Answers 413 to a request whose `Content-Length` is past the limit, without reading its body.
async fn refuse_large_bodies(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let announced = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match announced {
        Some(length) if length > limit as u64 => error::ApiError::too_large(limit).into_response(),
        _ => next.run(request).await,
    }
}

/// Seconds since the Unix epoch (0 before it).
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// At most 100 characters of `text`, control characters escaped, for an error message.
pub(crate) fn shorten(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(100)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(100).is_some() {
        out.push_str("...");
    }
    out
}

/// The digest of `tactic`'s file (its path when the file cannot be read: a tactic built in
/// memory).
fn fingerprint(tactic: &PreparedTactic) -> String {
    let path = tactic.spec().path();
    match std::fs::read(path) {
        Ok(bytes) => crate::journal::content_hash(&bytes),
        Err(_) => crate::journal::content_hash(path.to_string_lossy().as_bytes()),
    }
}

/// `value` of `setting`, which must be at least 1.
fn at_least_one(setting: &'static str, value: usize) -> Result<(), ServeError> {
    if value > 0 {
        return Ok(());
    }
    Err(ServeError::Setting {
        setting,
        problem: lllm_core::ValueError::Number {
            allowed: "a whole number from 1".to_owned(),
            written: format!("`{value}`"),
        },
    })
}

/// Served tactics: build with [`Served::builder`], then [`serve`](Self::serve) on a listener or
/// mount [`router`](Self::router) in an axum application.
#[derive(Debug, Clone)]
pub struct Served {
    state: Arc<ServeState>,
    key: Option<ServeKey>,
    max_connections: usize,
    cors: cors::CorsOrigins,
}

/// Builds [`Served`]. Setters never fail; [`build`](Self::build) checks.
#[derive(Debug)]
pub struct ServedBuilder {
    engine: Engine,
    tactics: Vec<(String, Arc<PreparedTactic>)>,
    keys: Vec<String>,
    state_dir: Option<PathBuf>,
    conversations: Bounds,
    paused: paused::PauseBounds,
    max_runs: usize,
    max_body: usize,
    max_connections: usize,
    read_timeout: Duration,
    cors: Vec<CorsOrigin>,
}

impl Served {
    /// A builder serving tactics run by `engine`.
    pub fn builder(engine: Engine) -> ServedBuilder {
        ServedBuilder {
            engine,
            tactics: Vec::new(),
            keys: Vec::new(),
            state_dir: None,
            conversations: Bounds {
                count: DEFAULT_KEPT_CONVERSATIONS,
                bytes: DEFAULT_KEPT_CONVERSATION_BYTES,
            },
            paused: paused::PauseBounds {
                max: DEFAULT_MAX_PAUSED_RUNS,
                kept: DEFAULT_PAUSE_KEPT,
            },
            max_runs: DEFAULT_MAX_RUNS,
            max_body: DEFAULT_MAX_BODY_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            read_timeout: DEFAULT_READ_TIMEOUT,
            cors: Vec::new(),
        }
    }

    /// The model ids, in the order the tactics were added.
    pub fn models(&self) -> Vec<String> {
        self.state.models.iter().map(|m| m.id.clone()).collect()
    }

    /// The routes, with the key check when a key is set.
    pub fn router(&self) -> Router {
        let routes = Router::new()
            .route("/", get(console::index))
            .route("/console/app.js", get(console::script))
            .route("/console/style.css", get(console::style))
            .route("/v1/models", get(models::list))
            .route("/v1/models/{id}", get(models::one))
            .route("/v1/chat/completions", post(chat::complete))
            .route("/v1/responses", post(responses::respond))
            .route("/v1/runs", post(runs::create).get(listing::list))
            .route("/v1/runs/{id}", get(runs::get))
            .route("/v1/runs/{id}/dialogs", get(listing::dialogs))
            .route("/v1/runs/{id}/events", get(runs::events))
            .route("/v1/runs/{id}/cancel", post(decisions::cancel))
            .route("/v1/runs/{id}/approval", post(decisions::approve))
            .fallback(models::no_route)
            .with_state(self.state.clone())
            // The handlers read bodies themselves, within the limit and the read timeout; a body
            // announced larger than the limit is refused before it is read.
            .layer(DefaultBodyLimit::disable())
            .layer(axum::middleware::from_fn_with_state(
                self.state.max_body,
                refuse_large_bodies,
            ))
            .layer(axum::middleware::from_fn_with_state(
                origin::Keyed(self.key.is_some()),
                origin::same_origin_only,
            ));
        let routes = match &self.key {
            Some(key) => routes.layer(axum::middleware::from_fn_with_state(
                key.clone(),
                auth::require_key,
            )),
            None => routes,
        };
        // Outside the key check: a browser's preflight carries no key. Outside the same-origin
        // rule: it marks the requests of a listed origin for it.
        let routes = routes.layer(axum::middleware::from_fn_with_state(
            self.cors.clone(),
            cors::allow_listed_origins,
        ));
        // Outermost: every other layer reads `Host` as if there were one.
        routes.layer(axum::middleware::from_fn(host::one_host_only))
    }

    /// Serves on `listener` until `shutdown` completes, then waits for the connections in flight.
    /// A client gets [`DEFAULT_READ_TIMEOUT`] to send its headers; at most `max_connections` are
    /// served at once.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        let closing = self.state.closing.clone();
        let shutdown = async move {
            shutdown.await;
            closing.send_replace(true);
        };
        listener::serve(
            listener,
            self.router(),
            listener::Limits {
                connections: self.max_connections,
                read_timeout: self.state.read_timeout,
            },
            shutdown,
        )
        .await
    }

    /// Cancels every run in flight (each records its cancel in its journal).
    pub async fn cancel_all(&self) {
        self.state.runs.cancel_all().await;
    }
}

impl ServedBuilder {
    /// Serves `tactic` as the model `id` (see [`tactic_name`](crate::engine::tactic_name)).
    pub fn tactic(mut self, id: impl Into<String>, tactic: Arc<PreparedTactic>) -> Self {
        self.tactics.push((id.into(), tactic));
        self
    }

    /// Requires `Authorization: Bearer KEY` on every route. Called again, adds a key: each key is
    /// a caller of its own, whose conversations no other key's requests can continue or read.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.keys.push(key.into());
        self
    }

    /// Where runs' journals and records live (default: none; `lllm serve` always sets one).
    /// Without it, `/v1/runs` keeps runs in memory only, unjournaled.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Conversations kept for their next turns (default [`DEFAULT_KEPT_CONVERSATIONS`]); past it,
    /// the least recently used is forgotten (its next turn starts fresh dialogs from the client's
    /// history, under the same session). 0 fails [`build`](Self::build).
    pub fn keep_conversations(mut self, count: usize) -> Self {
        self.conversations.count = count;
        self
    }

    /// Bytes of kept conversations, as written (default [`DEFAULT_KEPT_CONVERSATION_BYTES`]);
    /// past it, the least recently used are forgotten. 0 fails [`build`](Self::build).
    pub fn keep_conversation_bytes(mut self, bytes: usize) -> Self {
        self.conversations.bytes = bytes;
        self
    }

    /// Runs at once (default [`DEFAULT_MAX_RUNS`]); past it, 429 with `Retry-After`. 0 fails
    /// [`build`](Self::build).
    pub fn max_runs(mut self, runs: usize) -> Self {
        self.max_runs = runs;
        self
    }

    /// The largest request body (default [`DEFAULT_MAX_BODY_BYTES`]); past it, 413.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Connections served at once (default [`DEFAULT_MAX_CONNECTIONS`]). 0 fails
    /// [`build`](Self::build).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// How long a client may take to send its headers, and its body (default
    /// [`DEFAULT_READ_TIMEOUT`]).
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Lets a browser page of `origin` call the API routes (`/v1/...`): its CORS preflight is
    /// answered and its requests pass the same-origin rule; the console stays same-origin only.
    /// Repeatable.
    pub fn cors_origin(mut self, origin: CorsOrigin) -> Self {
        self.cors.push(origin);
        self
    }

    /// Runs paused on calls of the caller's tools (an agent with `client_tools`) are held for the
    /// caller's results: at most `max` (default [`DEFAULT_MAX_PAUSED_RUNS`], the oldest forgotten
    /// first), each at most `kept` (default [`DEFAULT_PAUSE_KEPT`]). A forgotten run's journal is
    /// removed, and a result for its calls is a 400.
    pub fn paused_runs(mut self, max: usize, kept: Duration) -> Self {
        self.paused = paused::PauseBounds { max, kept };
        self
    }

    /// Checks the models and opens the state directory, reading the runs an earlier server left.
    pub fn build(self) -> Result<Served, ServeError> {
        if self.tactics.is_empty() {
            return Err(ServeError::NoTactics);
        }
        at_least_one("max_runs", self.max_runs)?;
        at_least_one("paused_runs", self.paused.max)?;
        at_least_one("max_connections", self.max_connections)?;
        at_least_one("keep_conversations", self.conversations.count)?;
        at_least_one("keep_conversation_bytes", self.conversations.bytes)?;
        let created = now();
        let mut models: Vec<Model> = Vec::new();
        for (id, tactic) in self.tactics {
            if models.iter().any(|m| m.id == id) {
                return Err(ServeError::DuplicateModel { model: id });
            }
            models.push(Model {
                fingerprint: fingerprint(&tactic),
                id,
                tactic,
                created,
            });
        }
        let conversations = Arc::new(Conversations::open(
            self.state_dir.as_deref(),
            self.conversations,
        )?);
        let paused =
            paused::PausedRuns::open(self.state_dir.as_deref(), &conversations, self.paused)?;
        let runs = RunStore::open(self.state_dir)?;
        Ok(Served {
            state: Arc::new(ServeState {
                engine: self.engine,
                models,
                admission: Admission::new(self.max_runs),
                conversations,
                paused: Arc::new(paused),
                runs,
                keys: Arc::default(),
                decisions: Arc::default(),
                max_body: self.max_body,
                read_timeout: self.read_timeout,
                closing: tokio::sync::watch::channel(false).0,
                lists: listing::ListCache::default(),
            }),
            key: (!self.keys.is_empty())
                .then(|| ServeKey::new(self.keys.iter().map(String::as_str))),
            max_connections: self.max_connections,
            cors: cors::CorsOrigins(self.cors.into()),
        })
    }
}
