//! Writing content-free traces of runs (`lllm run --trace FILE`): one JSON line per model request, in
//! lllm's own format ([`TraceHeader`], [`TraceRow`]) or in Dynamo's agentic format ([`AgenticHeader`],
//! [`AgenticRow`]), which also records which requests each one waited for.
#![doc = include_str!("../../../docs/traces.md")]

mod graph;
mod output;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lllm_core::internal::BlockHasher;
use lllm_core::{AgenticHeader, AgenticRow, DialogId, Message, Profile, Role};
use lllm_core::{TraceHeader, TraceRow, TRACE_FORMAT};

use graph::Graph;
use output::{Line, Output};

use crate::invoker::{ChatRequest, ChatResponse};
pub use crate::tokenizer::{Tokenizer, TokenizerError};

/// When one dialog's chain was last answered.
#[derive(Debug, Default)]
struct Chain {
    last_answer: Option<Instant>,
}

/// The shape of a trace's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceFormat {
    /// `lllm-trace/1`: a header line, then [`TraceRow`]s.
    #[default]
    Lllm,
    /// [`TraceRow`]s only, no header: plain Mooncake JSONL for tools such as NVIDIA AIPerf.
    RowsOnly,
    /// Dynamo's `dynamo.agentic_mooncake` version 2: an [`AgenticHeader`], then [`AgenticRow`]s
    /// with each request's dependencies.
    AgenticMooncake,
}

/// Records the requests of a run as trace rows. Share one recorder between every agent of a run.
pub struct TraceRecorder {
    started: Instant,
    format: TraceFormat,
    /// The run's id in agentic traces (`play_id`, the header's digest).
    play: String,
    block_tokens: usize,
    tokenizer: Option<Tokenizer>,
    hasher: Mutex<BlockHasher>,
    chains: Mutex<HashMap<String, Chain>>,
    graph: Mutex<Graph>,
    out: Mutex<Output>,
    /// The compacted windows that sent a request already (their first one resets the prefix).
    windows: Mutex<std::collections::HashSet<lllm_core::DialogId>>,
}

impl std::fmt::Debug for TraceRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceRecorder").finish_non_exhaustive()
    }
}

/// One answered request, as the agent saw it.
pub(crate) struct Answered<'a> {
    pub(crate) agent: &'a str,
    pub(crate) request: &'a ChatRequest,
    pub(crate) response: &'a ChatResponse,
    /// When the request went out, after its wait for a slot.
    pub(crate) sent: Instant,
    pub(crate) first_piece: Option<Instant>,
    /// How long it waited for a slot of its endpoint (`max_in_flight`).
    pub(crate) queue_wait: Duration,
}

/// The token blocks and lengths of one request's prompt.
struct Prompt {
    hash_ids: Vec<u64>,
    input_length: u64,
}

impl TraceRecorder {
    /// A recorder writing to `out`, cutting prompts into blocks of `block_tokens` tokens (approximated
    /// by characters). The header line goes first, written with the first row so that it names the
    /// profile the hints were sent with (or when the recorder is flushed or dropped with no row).
    pub fn new(out: Box<dyn Write + Send>, block_tokens: usize) -> std::io::Result<Self> {
        Self::with_tokenizer(out, block_tokens, None)
    }

    /// Like [`new`](Self::new); with a tokenizer, blocks are exact token blocks and lengths the
    /// server does not report are counted, not estimated.
    pub fn with_tokenizer(
        out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<Tokenizer>,
    ) -> std::io::Result<Self> {
        Self::build(out, block_tokens, tokenizer, TraceFormat::Lllm)
    }

    /// A recorder writing `format` to `out` (see [`with_tokenizer`](Self::with_tokenizer)).
    pub fn with_format(
        out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<Tokenizer>,
        format: TraceFormat,
    ) -> std::io::Result<Self> {
        Self::build(out, block_tokens, tokenizer, format)
    }

    /// A recorder that writes rows only, no header line: a plain Mooncake-style JSONL file, as tools
    /// such as NVIDIA AIPerf read it (`--custom-dataset-type mooncake_trace`).
    pub fn rows_only(
        out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<Tokenizer>,
    ) -> std::io::Result<Self> {
        Self::build(out, block_tokens, tokenizer, TraceFormat::RowsOnly)
    }

    fn build(
        out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<Tokenizer>,
        format: TraceFormat,
    ) -> std::io::Result<Self> {
        let block_tokens = block_tokens.max(1);
        let play = format!("lllm-{}", DialogId::new());
        let blocks = match tokenizer {
            Some(_) => "tokenizer".to_owned(),
            None => format!("chars/{}", lllm_core::internal::CHARS_PER_TOKEN),
        };
        let blocks_header = TraceHeader {
            format: TRACE_FORMAT.to_owned(),
            block_size: block_tokens,
            blocks,
            profile: None,
        };
        let out = match format {
            TraceFormat::Lllm => Output::new(out, Some(blocks_header)),
            TraceFormat::RowsOnly => Output::new(out, None),
            TraceFormat::AgenticMooncake => {
                let mut output = Output::new(out, None);
                output.write_json(&AgenticHeader::new(block_tokens, play.clone()))?;
                output
            }
        };
        Ok(TraceRecorder {
            started: Instant::now(),
            format,
            play,
            block_tokens,
            tokenizer,
            hasher: Mutex::new(BlockHasher::new(block_tokens)),
            chains: Mutex::new(HashMap::new()),
            graph: Mutex::new(Graph::default()),
            windows: Mutex::default(),
            out: Mutex::new(out),
        })
    }

    /// The format this recorder writes.
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Tells the trace that dialog `child` was forked from `parent` (agents do this themselves).
    pub fn forked(&self, parent: DialogId, child: DialogId) {
        self.graph().forked(parent, child);
    }

    /// Tells the trace that the next request of `dialog` waits for the work of the dialogs `on`
    /// (their last answers), as a tactic's step waits for the steps or branches before it.
    /// Tactics written in Rust call it to record their own joins.
    pub fn waits(&self, dialog: DialogId, on: &[DialogId]) {
        self.graph().waits(dialog, on);
    }

    fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A recorder writing `format` to the file at `path` (created or truncated).
    pub fn to_file(
        path: &Path,
        block_tokens: usize,
        tokenizer: Option<Tokenizer>,
        format: TraceFormat,
    ) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        let out = Box::new(std::io::BufWriter::new(file));
        Self::build(out, block_tokens, tokenizer, format)
    }

    /// Loads a Hugging Face `tokenizer.json` (with the `tokenizer` feature; without it, an error
    /// that says so).
    ///
    /// Only a regular file of at most 256 MiB is read (real ones are a few MiB), so that a wrong path
    /// (a device, a FIFO) fails at once instead of reading for ever.
    pub fn load_tokenizer(path: &Path) -> Result<Tokenizer, TokenizerError> {
        crate::tokenizer::load(path)
    }

    /// The token ids of a conversation, when a tokenizer is set.
    fn tokens(&self, messages: &[&Message]) -> Option<Vec<u32>> {
        let tokenizer = self.tokenizer.as_ref()?;
        crate::tokenizer::ids(tokenizer, lllm_core::internal::serialise(messages))
    }

    /// Tokens of `messages`: counted with the tokenizer, else estimated.
    fn count(&self, messages: &[&Message]) -> u64 {
        self.tokens(messages).map_or_else(
            || BlockHasher::estimate_tokens(messages),
            |t| t.len() as u64,
        )
    }

    /// Writes out what is buffered (and the header, if no row has been written yet).
    pub fn flush(&self) -> std::io::Result<()> {
        self.out.lock().unwrap_or_else(|p| p.into_inner()).flush()
    }

    /// The prompt's blocks and length: counted with the tokenizer, else estimated, unless the server
    /// reported usage.
    fn prompt(&self, messages: &[&Message], reported: Option<u64>) -> Prompt {
        let tokens = self.tokens(messages);
        let mut hasher = self.hasher.lock().unwrap_or_else(|p| p.into_inner());
        let hash_ids = match &tokens {
            Some(tokens) => hasher.hash_token_ids(tokens),
            None => hasher.hash_ids(messages),
        };
        let counted = || {
            tokens.as_ref().map_or_else(
                || BlockHasher::estimate_tokens(messages),
                |t| t.len() as u64,
            )
        };
        Prompt {
            hash_ids,
            input_length: reported.unwrap_or_else(counted),
        }
    }

    /// The wait since the chain's last answer, and how much of it was tools running: all of it when
    /// the request carries tool results, since the chain was waiting for them.
    fn chain_waits(&self, chain: String, sent: Instant, after_tools: bool) -> (Duration, Duration) {
        let mut chains = self.chains.lock().unwrap_or_else(|p| p.into_inner());
        let state = chains.entry(chain).or_default();
        let delay = state
            .last_answer
            .map_or(Duration::ZERO, |last| sent.saturating_duration_since(last));
        state.last_answer = Some(Instant::now());
        (delay, if after_tools { delay } else { Duration::ZERO })
    }

    /// Writes the row of one answered request. A trace that cannot be written is reported once in the
    /// log; the run goes on.
    pub(crate) fn record(&self, answered: &Answered<'_>) {
        let line = match self.format {
            TraceFormat::Lllm | TraceFormat::RowsOnly => {
                Line::Row(self.row(answered), answered.request.notes.profile)
            }
            TraceFormat::AgenticMooncake => Line::Agentic(self.agentic_row(answered)),
        };
        let written = self
            .out
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write(line);
        if let Err(error) = written {
            tracing::warn!(%error, "cannot write the trace");
        }
    }

    fn row(&self, answered: &Answered<'_>) -> TraceRow {
        let request = answered.request;
        let chain = request
            .notes
            .dialog
            .map(|d| d.to_string())
            .unwrap_or_default();
        let sent_hints = request.sent_hints();
        let (session_id, parent_session_id) = request.recorded_sessions();
        let session_id = session_id.unwrap_or_default();
        let messages: Vec<&Message> = request.messages.iter().collect();
        let usage = answered.response.message.usage;
        let prompt = self.prompt(&messages, usage.map(|u| u.prompt_tokens));
        let after_tools = messages.last().is_some_and(|m| m.role == Role::Tool);
        let (delay, tool_wait) = self.chain_waits(chain, answered.sent, after_tools);
        let now = Instant::now();
        TraceRow {
            session_id,
            parent_session_id,
            // Set when written: only a row sent with another profile than the header's names it.
            profile: None,
            agent: answered.agent.to_owned(),
            timestamp: millis(answered.sent.saturating_duration_since(self.started)),
            delay: millis(delay),
            tool_wait_ms: millis(tool_wait),
            input_length: prompt.input_length,
            output_length: usage.map_or_else(
                || self.count(&[&answered.response.message]),
                |u| u.completion_tokens,
            ),
            lengths_estimated: usage.is_none(),
            cached_tokens: usage.and_then(|u| u.cached_tokens),
            hash_ids: prompt.hash_ids,
            priority: sent_hints.wire.priority,
            strict_priority: sent_hints.wire.strict_priority,
            osl: sent_hints.wire.osl,
            latency_ms: millis(now.saturating_duration_since(answered.sent)),
            ttft_ms: answered
                .first_piece
                .map(|t| millis(t.saturating_duration_since(answered.sent))),
            prefix_reset: self.first_of_window(request),
            fallback: request.notes.hop,
            endpoint: (request.notes.hop > 0)
                .then(|| request.endpoint())
                .flatten(),
            queue_ms: Some(answered.queue_wait)
                .filter(|w| !w.is_zero())
                .map(millis),
        }
    }

    /// Whether `request` is the first of a compacted window.
    fn first_of_window(&self, request: &ChatRequest) -> bool {
        match request.notes.dialog.filter(|_| request.notes.window > 0) {
            Some(dialog) => self
                .windows
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(dialog),
            None => false,
        }
    }
}

impl TraceRecorder {
    /// The agentic row of one answered request: its place in the request graph, and its prompt cut
    /// into exactly one block id per `block_size` tokens of the length reported.
    fn agentic_row(&self, answered: &Answered<'_>) -> AgenticRow {
        let request = answered.request;
        let now = Instant::now();
        let placed = self.graph().place(request.notes.dialog, answered.sent, now);
        let sent_hints = request.sent_hints();
        let messages: Vec<&Message> = request.messages.iter().collect();
        let usage = answered.response.message.usage;
        let prompt = self.prompt(&messages, usage.map(|u| u.prompt_tokens));
        // Dynamo counts a prompt of no tokens as invalid; every real prompt has some.
        let input_length = prompt.input_length.max(1);
        let blocks =
            usize::try_from(input_length.div_ceil(self.block_tokens as u64)).unwrap_or(usize::MAX);
        let hash_ids = self
            .hasher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fit(prompt.hash_ids, blocks);
        let not_before_ms = if placed.dependencies.is_empty() {
            millis(answered.sent.saturating_duration_since(self.started))
        } else {
            0
        };
        AgenticRow {
            request_id: placed.request_id,
            play_id: self.play.clone(),
            session_id: sent_hints
                .session
                .clone()
                .or_else(|| request.notes.dialog.map(|d| d.to_string()))
                .unwrap_or_else(|| self.play.clone()),
            model: lllm_core::strip_provider_prefix(&request.model).to_owned(),
            input_length,
            output_length: usage.map_or_else(
                || self.count(&[&answered.response.message]),
                |u| u.completion_tokens,
            ),
            hash_ids,
            not_before_ms,
            dependencies: placed.dependencies,
            // Dynamo's format means Dynamo's priority: a value sent with another profile is converted.
            priority: Profile::Dynamo
                .shape()
                .reshape(&sent_hints.wire, sent_hints.profile)
                .priority,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
