//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use lllm_runtime::config::LimitSetting;

/// Run agent tactics written in YAML against any OpenAI-compatible server, with inference hints that
/// tell the server which calls belong to the same reasoning chain.
#[derive(Debug, Parser)]
#[command(name = "lllm", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a tactic: its steps, a tactic written in Rust, or (without steps) a chat with its first agent.
    Run(RunArgs),
    /// Load and validate a tactic without running it.
    Check(CheckArgs),
    /// Resume a run from its journal (`run --journal FILE`): answered requests and finished tool calls
    /// are taken from the journal, the rest runs; a finished run prints its output.
    Resume(ResumeArgs),
    /// Run a tactic once per line of a JSONL file ({"id", "input", "vars"}), items concurrently, each
    /// result appended to the output as it finishes; running the same command again skips the items
    /// already answered and retries the failed ones.
    Batch(BatchArgs),
    /// List every agent's tools (command tools, the tools of its MCP servers, which are started
    /// for this, and the skill tools) with their parameter schemas, and its skills.
    Tools(ToolsArgs),
    /// Print the JSON Schema of the tactic format (for editors); `--evals`: of the eval file format.
    Schema(SchemaArgs),
    /// Run an eval file's cases against its tactic, each `trials` times, and check their tool
    /// calls, answers, budgets and judges; exit 0 when every case reaches the pass rate, 1
    /// otherwise, 2 for a bad file.
    Eval(EvalArgs),
    /// Replay a trace written by `lllm run --trace` against a server, with synthetic prompts of the same
    /// structure, the recorded timing and forks, and the chosen profile's hints.
    Replay(ReplayArgs),
    /// Take items of `lllm batch --queue` off a NATS JetStream queue and run them; each item's
    /// journal lives in JetStream, so an item redelivered after its worker died resumes.
    Worker(WorkerArgs),
    /// Serve tactics as models over HTTP: OpenAI's Chat Completions and Responses, and runs
    /// (`/v1/runs`) that pause for approvals. The caller's conversation id (Codex's `thread-id`,
    /// Claude Code's `x-claude-code-session-id`, ...) becomes the downstream session.
    Serve(ServeArgs),
    /// MCP servers: `lllm mcp login` authorizes lllm with the OAuth servers of a tactic once and
    /// stores their tokens, which later runs use (and refresh).
    #[command(subcommand)]
    Mcp(McpCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Authorize lllm with a tactic's MCP servers that have `auth:` (OAuth 2.1): prints the URL to
    /// open, waits for the authorization server's redirect to 127.0.0.1, and stores the tokens
    /// owner-only (the server's `auth.token_file`, else `mcp-auth/` under the cache directory).
    Login(McpLoginArgs),
}

#[derive(Debug, Args)]
pub(crate) struct McpLoginArgs {
    /// The tactic file.
    pub(crate) tactic: PathBuf,
    /// The server to authorize (a key of `mcp_servers:`); default: every server with `auth:`.
    #[arg(long, value_name = "NAME")]
    pub(crate) server: Option<String>,
    /// Seconds to wait for the redirect after the URL is printed.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) wait: u64,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The tactic files; each is a model named after its file (a `tactic.yaml` after its folder).
    #[arg(required = true)]
    pub(crate) tactics: Vec<PathBuf>,
    /// The address to listen on. A non-loopback address needs a key.
    #[arg(long, default_value = "127.0.0.1:8642", value_name = "ADDR:PORT")]
    pub(crate) listen: std::net::SocketAddr,
    /// A key requests must carry as `Authorization: Bearer KEY` (repeatable: each key is a caller
    /// of its own, whose conversations no other key continues); prefer the LLLM_SERVE_KEY variable,
    /// keys separated by commas (a command line is visible to other users of the machine).
    #[arg(long, value_name = "KEY")]
    pub(crate) api_key: Vec<String>,
    /// Where the runs' journals and records live (default: `serve/` under the cache directory,
    /// LLLM_CACHE_DIR or ~/.cache/lllm).
    #[arg(long, value_name = "DIR")]
    pub(crate) state: Option<PathBuf>,
    /// Runs at once (at least 1); past it, requests get 429 with Retry-After.
    #[arg(long, default_value_t = lllm_runtime::serve::DEFAULT_MAX_RUNS, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_runs: usize,
    /// The largest request body, in bytes; past it, 413.
    #[arg(long, default_value_t = lllm_runtime::serve::DEFAULT_MAX_BODY_BYTES, value_name = "BYTES")]
    pub(crate) max_body: usize,
    /// Seconds a client may take to send a request's headers, and its body.
    #[arg(long, default_value_t = 30, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) read_timeout: u64,
    /// Conversations kept for their next turns (at least 1); past it, the least recently used is
    /// forgotten and its next turn starts fresh dialogs from the client's history.
    #[arg(long, default_value_t = lllm_runtime::serve::DEFAULT_KEPT_CONVERSATIONS, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) keep_conversations: usize,
    /// Bytes of kept conversations (their dialogs and transcripts, as written under --state);
    /// past it, the least recently used are forgotten.
    #[arg(long, default_value_t = lllm_runtime::serve::DEFAULT_KEPT_CONVERSATION_BYTES, value_name = "BYTES", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) keep_conversation_bytes: usize,
    /// Runs paused on calls of the caller's tools (agents with `client_tools`) held for the
    /// caller's results (at least 1); past it, the oldest is forgotten and its results get 400.
    #[arg(long, default_value_t = lllm_runtime::serve::DEFAULT_MAX_PAUSED_RUNS, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) keep_paused: usize,
    /// Seconds a paused run waits for the caller's results (at most a week); then it is
    /// forgotten, its journal removed, and its results get 400.
    #[arg(long, default_value_t = lllm_runtime::serve::DEFAULT_PAUSE_KEPT.as_secs(), value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=604_800))]
    pub(crate) pause_seconds: u64,
    /// An origin whose browser pages may call the API routes (/v1/...), as a browser writes it:
    /// `https://chat.example`, `http://localhost:3000` (repeatable). The console stays same-origin
    /// only.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub(crate) cors_origins: Vec<lllm_runtime::serve::CorsOrigin>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The tactic file.
    pub(crate) tactic: PathBuf,
    /// The input; without it, standard input is read when it is not a terminal, and an interactive chat
    /// starts when it is.
    #[arg(long, short)]
    pub(crate) input: Option<String>,
    /// A variable for prompt templates, as KEY=VALUE (repeatable).
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub(crate) vars: Vec<String>,
    /// Call no server: print each request the run would send as a JSON line {"url","headers","body"},
    /// credentials redacted, and continue with placeholder answers.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Print one JSON object with the answer, usage and the dialogs' ids.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write a content-free trace of every model request to FILE (JSON lines; no text, keyed block
    /// hashes of the prompts).
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<std::path::PathBuf>,
    /// Tokens per prompt block in the trace.
    #[arg(long, value_name = "TOKENS", default_value_t = 64, requires = "trace", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub(crate) trace_block_size: u32,
    /// The trace's format: `lllm` (lllm-trace/1, the default) or `agentic-mooncake` (NVIDIA
    /// Dynamo's dynamo.agentic_mooncake v2, with each request's dependencies, for Dynamo's offline
    /// simulator and planner).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = TraceFormatArg::Lllm, requires = "trace")]
    pub(crate) trace_format: TraceFormatArg,
    /// Write trace rows only, without the header line: plain Mooncake JSONL for tools such as AIPerf.
    #[arg(long, requires = "trace", conflicts_with = "trace_format")]
    pub(crate) trace_rows_only: bool,
    /// Cut trace blocks with this Hugging Face tokenizer (`tokenizer.json`) instead of approximating
    /// tokens by characters (in a build with the `tokenizer` feature).
    #[arg(long, value_name = "FILE", requires = "trace")]
    pub(crate) tokenizer: Option<std::path::PathBuf>,
    /// Print the answer as it arrives (the default when stdout is a terminal).
    #[arg(long, conflicts_with = "json")]
    pub(crate) stream: bool,
    /// Approve every call of a tool that needs confirmation (`confirm:`) without asking. Without
    /// it, lllm asks on the terminal, or declines such calls when there is no terminal.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Journal the run in FILE (JSON lines, appended as the run goes): `lllm resume FILE` continues it
    /// after a crash, a pause for a confirmation, or a limit. The journal holds the conversation.
    #[arg(long, value_name = "FILE")]
    pub(crate) journal: Option<PathBuf>,
    /// How the run's requests rank under `inference_hints.priority: auto`: `interactive` (the
    /// default) above every `batch` request, whatever waits for them.
    #[arg(long, value_name = "CLASS", value_enum, default_value_t = RunClassArg::Interactive)]
    pub(crate) priority_class: RunClassArg,
    /// Sets or overrides a limit of the run (`limits:` in the tactic): max_requests,
    /// max_total_tokens, max_tool_calls or max_seconds (repeatable).
    #[arg(long = "limit", value_name = "KEY=VALUE")]
    pub(crate) limits: Vec<LimitSetting>,
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The journal.
    pub(crate) journal: PathBuf,
    /// Approve every call that waits for a confirmation (and every later one).
    #[arg(long, short = 'y', conflicts_with = "reject")]
    pub(crate) yes: bool,
    /// Decline every call that waits for a confirmation (and every later one): the model is told
    /// the user declined.
    #[arg(long)]
    pub(crate) reject: bool,
    /// Resume even though the tactic file changed since the run started.
    #[arg(long)]
    pub(crate) force: bool,
    /// Sets or raises a limit for the rest of the run (repeatable).
    #[arg(long = "limit", value_name = "KEY=VALUE")]
    pub(crate) limits: Vec<LimitSetting>,
    /// Print one JSON object with the answer, usage and the dialogs' ids.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// The tactic file.
    pub(crate) tactic: PathBuf,
    /// Print one JSON object: {"agents": [{"name", "tools": [{"name", "source", "description",
    /// "confirm", "parameters"}], "skills": [{"name", "description", "allowed_tools", "dir"}]}]}.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The trace file: `lllm-trace/1` (what `lllm run --trace` writes) or NVIDIA Dynamo's agentic
    /// trace (`dynamo.agentic_mooncake` version 2, `--trace-format agentic-mooncake`), whose requests
    /// are sent when what they wait for is done.
    pub(crate) trace: std::path::PathBuf,
    /// The server's API base, an http or https URL such as http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    pub(crate) api_base: String,
    /// The model to ask.
    #[arg(long)]
    pub(crate) model: String,
    /// The hints' profile: openai, dynamo, vllm or sglang.
    #[arg(long, default_value = "dynamo")]
    pub(crate) profile: String,
    /// Send no session identity.
    #[arg(long)]
    pub(crate) no_session: bool,
    /// Time factor: 2 replays twice as fast (from 0.001 to 1000000).
    #[arg(long, value_name = "X", default_value_t = 1.0, allow_hyphen_values = true, value_parser = parse_speed)]
    pub(crate) speed: f64,
    /// Also print every request as a JSON line (session, response id, tokens, latency, error, when
    /// it was sent; for agentic traces, its request and play ids).
    #[arg(long)]
    pub(crate) json: bool,
    /// Tokens per block, for a trace written without its header (`--trace-rows-only`).
    #[arg(long, value_name = "TOKENS", default_value_t = 64, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub(crate) block_size: u32,
}

/// `--speed`: a number within the replay's limits, refused while the arguments are parsed.
fn parse_speed(text: &str) -> Result<f64, String> {
    let speed: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number; use a number from 0.001 to 1000000"))?;
    lllm_runtime::replay::check_speed(speed)
        .map(|()| speed)
        .map_err(|_| {
            format!(
                "{text} is out of range; use a number from {} to {} (2 replays twice as fast)",
                lllm_runtime::replay::limits::MIN_SPEED,
                lllm_runtime::replay::limits::MAX_SPEED
            )
        })
}

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// The eval file (`tactic:`, `pass_rate:`, `cases:`).
    pub(crate) evals: PathBuf,
    /// Trials of every case, over the cases' own `trials:`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) trials: Option<u32>,
    /// Keep every trial's model answers (and its journal) in DIR/<case>/<trial>.jsonl.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub(crate) record: Option<PathBuf>,
    /// Answer from the recordings in DIR with no server; a request they do not hold is drift.
    #[arg(long, value_name = "DIR")]
    pub(crate) replay: Option<PathBuf>,
    /// Write the report as JUnit XML.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Write the report as JSON (the shape `--baseline` reads).
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// An earlier `--json` report: print per case the changes in pass rate, tokens, requests and
    /// cached share.
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The eval file format's schema (`lllm eval`) instead of the tactic format's.
    #[arg(long)]
    pub(crate) evals: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The tactic file.
    pub(crate) tactic: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct BatchArgs {
    /// The tactic file.
    pub(crate) tactic: PathBuf,
    /// The items: one JSON object a line, {"id": .., "input": "..", "vars": {..}}; `id` (a string or
    /// a number) defaults to the line number.
    #[arg(long, value_name = "FILE")]
    pub(crate) inputs: PathBuf,
    /// Where each item's result is appended: {"id", "output", "usage", "seconds"} or {"id", "error",
    /// "seconds"}.
    #[arg(long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// Items run at the same time.
    #[arg(long, value_name = "N", default_value_t = lllm_runtime::batch::DEFAULT_BATCH_CONCURRENCY as u16, allow_negative_numbers = true, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub(crate) concurrency: u16,
    /// A variable for every item (an item's own `vars` win), as KEY=VALUE (repeatable).
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub(crate) vars: Vec<String>,
    /// Approve every call of a tool that needs confirmation; without it lllm asks on a terminal,
    /// and declines such calls when there is none.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// How the items' requests rank under `inference_hints.priority: auto`: `batch` (the default)
    /// below every interactive run, or `interactive`.
    #[arg(long, value_name = "CLASS", value_enum, default_value_t = RunClassArg::Batch)]
    pub(crate) priority_class: RunClassArg,
    /// Run only shard K of N (1-based; a stable split by item id), so N machines can share one
    /// items file: the shards are disjoint and together they are the whole batch.
    #[arg(long, value_name = "K/N")]
    pub(crate) shard: Option<lllm_runtime::batch::Shard>,
    /// Put the items on this NATS JetStream queue instead of running them here (`lllm worker`s
    /// run them), and collect their results into --output as they arrive.
    #[arg(long, value_name = "nats://HOST:PORT/NAME")]
    pub(crate) queue: Option<lllm_runtime::queue::QueueAddress>,
}

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The tactic file (the same file the batch was started with: items are matched by its SHA-256).
    pub(crate) tactic: PathBuf,
    /// The queue, as `lllm batch --queue` named it.
    #[arg(long, value_name = "nats://HOST:PORT/NAME")]
    pub(crate) queue: lllm_runtime::queue::QueueAddress,
    /// Items run at the same time.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) concurrency: u16,
    /// Seconds an item may go without a sign of life before the queue gives it to another worker
    /// (a running item sends one every third of it).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u16).range(1..=3600))]
    pub(crate) ack_wait: u16,
    /// How the items' requests rank under `inference_hints.priority: auto`.
    #[arg(long, value_name = "CLASS", value_enum, default_value_t = RunClassArg::Batch)]
    pub(crate) priority_class: RunClassArg,
}

/// The classes `--priority-class` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RunClassArg {
    /// Someone waits for the run.
    Interactive,
    /// Work nobody watches.
    Batch,
}

impl From<RunClassArg> for lllm_runtime::hints::RunClass {
    fn from(class: RunClassArg) -> Self {
        match class {
            RunClassArg::Interactive => lllm_runtime::hints::RunClass::Interactive,
            RunClassArg::Batch => lllm_runtime::hints::RunClass::Batch,
        }
    }
}

/// The formats `--trace-format` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TraceFormatArg {
    /// lllm-trace/1.
    Lllm,
    /// dynamo.agentic_mooncake version 2.
    AgenticMooncake,
}
