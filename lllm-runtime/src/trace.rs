//! Writing content-free traces of runs (`lllm run --trace FILE`): one JSON line per model request, as
//! described in the trace format of [`TraceHeader`] and [`TraceRow`].

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lllm_core::internal::BlockHasher;
use lllm_core::{Message, Profile, Role};
use lllm_core::{TraceHeader, TraceRow, TRACE_FORMAT};

use crate::invoker::{ChatRequest, ChatResponse, SentHints};

/// When one dialog's chain was last answered.
#[derive(Debug, Default)]
struct Chain {
    last_answer: Option<Instant>,
}

/// Records the requests of a run as trace rows. Share one recorder between every agent of a run.
pub struct TraceRecorder {
    started: Instant,
    tokenizer: Option<tokenizers::Tokenizer>,
    hasher: Mutex<BlockHasher>,
    chains: Mutex<HashMap<String, Chain>>,
    out: Mutex<Box<dyn Write + Send>>,
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
    pub(crate) sent: Instant,
    pub(crate) first_piece: Option<Instant>,
}

/// The token blocks and lengths of one request's prompt.
struct Prompt {
    hash_ids: Vec<u64>,
    input_length: u64,
}

impl TraceRecorder {
    /// A recorder writing to `out`, cutting prompts into blocks of `block_tokens` tokens (approximated
    /// by characters). Writes the header line at once.
    pub fn new(out: Box<dyn Write + Send>, block_tokens: usize) -> std::io::Result<Self> {
        Self::with_tokenizer(out, block_tokens, None)
    }

    /// Like [`new`](Self::new); with a tokenizer, blocks are exact token blocks and lengths the
    /// server does not report are counted, not estimated.
    pub fn with_tokenizer(
        out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<tokenizers::Tokenizer>,
    ) -> std::io::Result<Self> {
        Self::build(out, block_tokens, tokenizer, true)
    }

    /// A recorder that writes rows only, no header line: a plain Mooncake-style JSONL file, as tools
    /// such as NVIDIA AIPerf read it (`--custom-dataset-type mooncake_trace`).
    pub fn rows_only(
        out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<tokenizers::Tokenizer>,
    ) -> std::io::Result<Self> {
        Self::build(out, block_tokens, tokenizer, false)
    }

    fn build(
        mut out: Box<dyn Write + Send>,
        block_tokens: usize,
        tokenizer: Option<tokenizers::Tokenizer>,
        header: bool,
    ) -> std::io::Result<Self> {
        let blocks = match tokenizer {
            Some(_) => "tokenizer".to_owned(),
            None => format!("chars/{}", lllm_core::internal::CHARS_PER_TOKEN),
        };
        let blocks_header = TraceHeader {
            format: TRACE_FORMAT.to_owned(),
            block_size: block_tokens,
            blocks,
        };
        if header {
            writeln!(out, "{}", serde_json::to_string(&blocks_header)?)?;
        }
        Ok(TraceRecorder {
            started: Instant::now(),
            tokenizer,
            hasher: Mutex::new(BlockHasher::new(block_tokens)),
            chains: Mutex::new(HashMap::new()),
            out: Mutex::new(out),
        })
    }

    /// A recorder writing to the file at `path` (created or truncated); with `header: false`, rows
    /// only (see [`rows_only`](Self::rows_only)).
    pub fn to_file(
        path: &Path,
        block_tokens: usize,
        tokenizer: Option<tokenizers::Tokenizer>,
        header: bool,
    ) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        let out = Box::new(std::io::BufWriter::new(file));
        Self::build(out, block_tokens, tokenizer, header)
    }

    /// Loads a Hugging Face `tokenizer.json`.
    ///
    /// Only a regular file of at most 256 MiB is read (real ones are a few MiB), so that a wrong path
    /// (a device, a FIFO) fails at once instead of reading for ever.
    pub fn load_tokenizer(path: &Path) -> Result<tokenizers::Tokenizer, TokenizerError> {
        let fail = |source: tokenizers::Error| TokenizerError {
            path: path.to_owned(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(|e| fail(e.into()))?;
        if !metadata.is_file() {
            return Err(fail("it is not a regular file".into()));
        }
        if metadata.len() > MAX_TOKENIZER_BYTES {
            return Err(fail(
                format!(
                    "it is larger than {} MiB",
                    MAX_TOKENIZER_BYTES / (1024 * 1024)
                )
                .into(),
            ));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_TOKENIZER_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(e.into()))?;
        if bytes.len() as u64 > MAX_TOKENIZER_BYTES {
            return Err(fail("it grew past the size limit while read".into()));
        }
        tokenizers::Tokenizer::from_bytes(bytes).map_err(fail)
    }

    /// The token ids of a conversation, when a tokenizer is set.
    fn tokens(&self, messages: &[&Message]) -> Option<Vec<u32>> {
        let tokenizer = self.tokenizer.as_ref()?;
        let text = lllm_core::internal::serialise(messages);
        tokenizer
            .encode(text, false)
            .ok()
            .map(|encoding| encoding.get_ids().to_vec())
    }

    /// Tokens of `messages`: counted with the tokenizer, else estimated.
    fn count(&self, messages: &[&Message]) -> u64 {
        self.tokens(messages).map_or_else(
            || BlockHasher::estimate_tokens(messages),
            |t| t.len() as u64,
        )
    }

    /// Writes out what is buffered.
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
    fn waits(&self, chain: String, sent: Instant, after_tools: bool) -> (Duration, Duration) {
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
    pub(crate) fn record(&self, answered: Answered<'_>) {
        let row = self.row(&answered);
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let written = serde_json::to_string(&row)
            .map_err(std::io::Error::other)
            .and_then(|line| writeln!(out, "{line}"));
        if let Err(error) = written {
            tracing::warn!(%error, "cannot write the trace");
        }
    }

    fn row(&self, answered: &Answered<'_>) -> TraceRow {
        let request = answered.request;
        let chain = request.dialog.map(|d| d.to_string()).unwrap_or_default();
        let session_id = session_header(request, false).unwrap_or_else(|| chain.clone());
        let parent_session_id =
            session_header(request, true).or_else(|| request.parent_dialog.map(|d| d.to_string()));
        let messages: Vec<&Message> = request.messages.iter().collect();
        let usage = answered.response.message.usage;
        let prompt = self.prompt(&messages, usage.map(|u| u.prompt_tokens));
        let after_tools = messages.last().is_some_and(|m| m.role == Role::Tool);
        let (delay, tool_wait) = self.waits(chain, answered.sent, after_tools);
        let now = Instant::now();
        let sent_hints = SentHints::of(request);
        TraceRow {
            session_id,
            parent_session_id,
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
            priority: sent_hints.priority,
            osl: sent_hints.osl,
            latency_ms: millis(now.saturating_duration_since(answered.sent)),
            ttft_ms: answered
                .first_piece
                .map(|t| millis(t.saturating_duration_since(answered.sent))),
        }
    }
}

/// Largest tokenizer file read.
const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

/// A tokenizer file cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the tokenizer {}", path.display())]
pub struct TokenizerError {
    /// The file.
    pub path: std::path::PathBuf,
    /// Why.
    #[source]
    pub source: tokenizers::Error,
}

/// The session (or parent) header the hints put on the request, whatever the profile.
fn session_header(request: &ChatRequest, parent: bool) -> Option<String> {
    Profile::ALL
        .iter()
        .map(|p| {
            if parent {
                p.parent_header()
            } else {
                p.session_header()
            }
        })
        .find_map(|name| request.hint_fields.header(name))
        .map(str::to_owned)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
