//! What OpenTelemetry export costs a run: a 100-turn dialog of one agent against the testing kit's
//! stand-in server (in this process), under three subscribers, the legs alternating over several
//! repetitions so that drift in the machine's speed falls on all of them:
//!
//! - `none`: no subscriber at all (lllm's GenAI spans are then disabled at their call sites);
//! - `export`: the stack `lllm` sets up when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: a
//!   `tracing_subscriber` registry with a `tracing-opentelemetry` layer filtered to the spans of
//!   target `lllm::gen_ai`, an `SdkTracerProvider` with a `BatchSpanProcessor` (queue of 4,096) and
//!   the OTLP HTTP/protobuf exporter, sending to a collector in this process on 127.0.0.1 (it
//!   counts the requests, bytes and spans it receives, and answers each with an empty protobuf);
//! - `dead`: the same, sending to 127.0.0.1:9, where nothing listens.
//!
//! Each run is one `invoke_workflow` span (as `lllm run` makes) around 100 turns (`receive` +
//! `respond`, one text answer each): 1 + 100 `invoke_agent` + 100 `chat` = 201 spans. A run is timed
//! from building the agent to the end of the workflow span, so the time includes making the spans and
//! handing them to the batch queue. The batch processor exports on a thread of its own (every 5 s or
//! per 512 spans, so here at the flush): after each run the provider is flushed (`force_flush`),
//! timed apart, and the spans the collector received are counted, so every figure is of a run whose
//! spans did arrive. lllm's own log layer (`warn`) is left out of every leg.
//!
//! The stand-in server answers at once, so the run is as short as a run can be and export's share of
//! it as large as it can be. The runtime is tokio's multi-threaded one, as in `lllm run`.
//!
//! ```text
//! otel_overhead [REPETITIONS]    # default 101 per leg; prints one JSON object
//! otel_overhead --sink           # only the collector: prints its base URL, then serves
//! ```
//!
//! With `--sink`, `GET /stats` answers the collector's counts as JSON (`requests`, `bytes`, `spans`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::{get, post};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::StubServer;
use lllm_runtime::{Agent, Invoker, ModelArgs, OpenAiInvoker};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use serde_json::json;
use tracing::instrument::{Instrument as _, WithSubscriber as _};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::Layer as _;

use lllm_bench::percentile;

const TURNS: usize = 100;
/// Runs of each leg before the measured ones (connection pool, allocator, the exporter's client).
const WARMUP: usize = 3;
/// Spans of one run: the workflow, and an `invoke_agent` and a `chat` per turn.
const SPANS_PER_RUN: u64 = 1 + 2 * TURNS as u64;
/// As `lllm` (`lllm-cli/src/otel.rs`).
const MAX_QUEUED_SPANS: usize = 4096;
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// Where nothing listens (the discard port), for the `dead` leg.
const DEAD_ENDPOINT: &str = "http://127.0.0.1:9/v1/traces";

// --- the collector -----------------------------------------------------------------------------

/// What the collector received.
#[derive(Default)]
struct Sink {
    requests: AtomicU64,
    bytes: AtomicU64,
    spans: AtomicU64,
    undecodable: AtomicU64,
    /// Spans by name with the agent's and model's names cut off (`invoke_agent bench` → `invoke_agent`).
    names: Mutex<BTreeMap<String, u64>>,
}

#[derive(Clone, Copy, Default)]
struct Counts {
    requests: u64,
    bytes: u64,
    spans: u64,
}

impl Sink {
    fn counts(&self) -> Counts {
        Counts {
            requests: self.requests.load(Ordering::SeqCst),
            bytes: self.bytes.load(Ordering::SeqCst),
            spans: self.spans.load(Ordering::SeqCst),
        }
    }

    fn receive(&self, body: &[u8]) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        self.bytes.fetch_add(body.len() as u64, Ordering::SeqCst);
        let mut names = Vec::new();
        match span_names(body, &mut names) {
            Ok(()) => {
                self.spans.fetch_add(names.len() as u64, Ordering::SeqCst);
                let mut tally = self.names.lock().unwrap_or_else(|p| p.into_inner());
                for name in names {
                    let operation = name.split(' ').next().unwrap_or_default().to_owned();
                    *tally.entry(operation).or_default() += 1;
                }
            }
            Err(_) => {
                self.undecodable.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// Calls `each` with every length-delimited field of a protobuf message (number, bytes), skipping
/// the other wire types.
fn length_delimited<'a>(
    mut buf: &'a [u8],
    mut each: impl FnMut(u64, &'a [u8]) -> Result<(), String>,
) -> Result<(), String> {
    fn varint(buf: &mut &[u8]) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = buf.split_first().ok_or("truncated varint")?;
            *buf = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint too long".into())
    }
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let skip = match key & 7 {
            0 => {
                varint(&mut buf)?;
                0
            }
            1 => 8,
            5 => 4,
            2 => {
                let len = usize::try_from(varint(&mut buf)?).map_err(|e| e.to_string())?;
                let field = buf.get(..len).ok_or("truncated field")?;
                each(key >> 3, field)?;
                len
            }
            other => return Err(format!("wire type {other}")),
        };
        buf = buf.get(skip..).ok_or("truncated field")?;
    }
    Ok(())
}

/// The names of the spans in an OTLP `ExportTraceServiceRequest`: `resource_spans` (1) →
/// `scope_spans` (2) → `spans` (2) → `name` (5).
fn span_names(body: &[u8], names: &mut Vec<String>) -> Result<(), String> {
    length_delimited(body, |field, resource_spans| {
        if field != 1 {
            return Ok(());
        }
        length_delimited(resource_spans, |field, scope_spans| {
            if field != 2 {
                return Ok(());
            }
            length_delimited(scope_spans, |field, span| {
                if field != 2 {
                    return Ok(());
                }
                let mut name = None;
                length_delimited(span, |field, value| {
                    if field == 5 {
                        name = Some(String::from_utf8_lossy(value).into_owned());
                    }
                    Ok(())
                })?;
                names.push(name.ok_or("a span without a name")?);
                Ok(())
            })
        })
    })
}

/// Starts the collector on 127.0.0.1 (a free port); returns its base URL.
async fn start_sink(sink: Arc<Sink>) -> std::io::Result<String> {
    let received = sink.clone();
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            post(move |body: Bytes| {
                received.receive(&body);
                // An empty ExportTraceServiceResponse: zero bytes.
                async {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        )
        .route(
            "/stats",
            get(move || {
                let counts = sink.counts();
                let names = sink.names.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let undecodable = sink.undecodable.load(Ordering::SeqCst);
                async move {
                    axum::Json(json!({
                        "requests": counts.requests,
                        "bytes": counts.bytes,
                        "spans": counts.spans,
                        "undecodable": undecodable,
                        "names": names,
                    }))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        axum::serve(listener, app).await.ok();
    });
    Ok(url)
}

// --- the legs ----------------------------------------------------------------------------------

/// An exporting provider, set up as `lllm` sets up its own (`lllm-cli/src/otel.rs`).
fn provider(endpoint: &str) -> Result<SdkTracerProvider, Box<dyn std::error::Error>> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()?;
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(MAX_QUEUED_SPANS)
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch)
        .build();
    let resource = opentelemetry_sdk::Resource::builder()
        .with_attribute(opentelemetry::KeyValue::new("service.version", "bench"))
        .with_service_name("lllm")
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build())
}

/// The subscriber `lllm` uses when exporting (`init_logging` in `lllm-cli/src/lib.rs`), without its
/// log layer.
fn exporting_dispatch(provider: &SdkTracerProvider) -> Dispatch {
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("lllm"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            meta.is_span() && meta.target() == lllm_runtime::telemetry::TARGET
        }));
    Dispatch::new(tracing_subscriber::registry().with(spans))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Leg {
    None,
    Export,
    Dead,
}

/// One measured run of a leg.
struct Run {
    time: Duration,
    /// `force_flush` after the run (zero without export).
    flush: Duration,
    /// What the collector received from this run.
    received: Counts,
    flush_failed: bool,
}

/// The 100 turns of one run, inside a workflow span as `lllm run` makes.
async fn turns(
    server: &StubServer,
    invoker: &Arc<dyn Invoker>,
) -> Result<String, Box<dyn std::error::Error>> {
    let span = lllm_runtime::telemetry::workflow_span("bench");
    async {
        let agent = Agent::builder()
            .name("bench")
            .system_prompt("You are a concise assistant.")
            .model("stub")
            .invoker(invoker.clone())
            .model_args(ModelArgs::new().api_base(server.base_url()).max_tokens(16))
            .build()?;
        agent.open("main")?;
        let mut last = String::new();
        for turn in 0..TURNS {
            agent.receive(format!("turn {turn}: say something short"))?;
            last = agent.respond("main").await?.content.unwrap_or_default();
        }
        Ok(last)
    }
    .instrument(span)
    .await
}

struct Setup {
    server: StubServer,
    invoker: Arc<dyn Invoker>,
    sink: Arc<Sink>,
    export: SdkTracerProvider,
    dead: SdkTracerProvider,
}

/// Runs one leg. `flush`: flush the provider after the run (always for `export`, so that every run's
/// spans are counted; for `dead` only in the warm-up, since each flush there waits out the
/// exporter's retries).
async fn run(setup: &Setup, leg: Leg, flush: bool) -> Result<Run, Box<dyn std::error::Error>> {
    let provider = match leg {
        Leg::None => None,
        Leg::Export => Some(&setup.export),
        Leg::Dead => Some(&setup.dead),
    };
    // A fresh dispatcher per run, made before the clock starts (making one rebuilds every call
    // site's interest), and gone before the next run: with none left, the call sites are disabled
    // again, so that `none` is a process without a subscriber.
    let dispatch = provider.map(exporting_dispatch);
    let before = setup.sink.counts();
    let started = Instant::now();
    let last = match &dispatch {
        Some(dispatch) => {
            turns(&setup.server, &setup.invoker)
                .with_subscriber(dispatch.clone())
                .await?
        }
        None => turns(&setup.server, &setup.invoker).await?,
    };
    let time = started.elapsed();
    drop(dispatch);
    tracing::callsite::rebuild_interest_cache();
    let (flush, flush_failed) = match provider {
        Some(provider) if flush || leg == Leg::Export => {
            let provider = provider.clone();
            let started = Instant::now();
            let outcome = tokio::task::spawn_blocking(move || provider.force_flush()).await?;
            (started.elapsed(), outcome.is_err())
        }
        _ => (Duration::ZERO, false),
    };
    if !last.starts_with("stub answer to: turn") {
        return Err(format!("unexpected last answer: {last:?}").into());
    }
    let requests = setup.server.requests().len();
    if requests != TURNS {
        return Err(format!("{requests} requests, expected {TURNS}").into());
    }
    setup.server.clear_requests();
    let after = setup.sink.counts();
    let received = Counts {
        requests: after.requests - before.requests,
        bytes: after.bytes - before.bytes,
        spans: after.spans - before.spans,
    };
    let expected = if leg == Leg::Export { SPANS_PER_RUN } else { 0 };
    if received.spans != expected {
        return Err(format!(
            "{leg:?}: the collector received {} spans of the run, expected {expected}",
            received.spans
        )
        .into());
    }
    if leg == Leg::Export && flush_failed {
        return Err("the flush to the collector failed".into());
    }
    Ok(Run {
        time,
        flush,
        received,
        flush_failed,
    })
}

// --- figures -----------------------------------------------------------------------------------

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

fn leg_figures(runs: &[Run]) -> serde_json::Value {
    let ms = sorted(runs.iter().map(|r| r.time.as_secs_f64() * 1e3).collect());
    json!({
        "median_ms": percentile(&ms, 0.5),
        "p90_ms": percentile(&ms, 0.9),
        "min_ms": ms[0],
        "mean_ms": ms.iter().sum::<f64>() / ms.len() as f64,
    })
}

/// What a leg adds to `none`, per request: each run against the `none` run of the same repetition.
fn added(runs: &[Run], baseline: &[Run]) -> serde_json::Value {
    let per_request = sorted(
        runs.iter()
            .zip(baseline)
            .map(|(r, b)| (r.time.as_secs_f64() - b.time.as_secs_f64()) * 1e6 / TURNS as f64)
            .collect(),
    );
    let pct = sorted(
        runs.iter()
            .zip(baseline)
            .map(|(r, b)| (r.time.as_secs_f64() / b.time.as_secs_f64() - 1.0) * 100.0)
            .collect(),
    );
    let flush_ms = sorted(runs.iter().map(|r| r.flush.as_secs_f64() * 1e3).collect());
    let (base, this) = (leg_figures(baseline), leg_figures(runs));
    let medians = (this["median_ms"].as_f64().unwrap_or(f64::NAN)
        - base["median_ms"].as_f64().unwrap_or(f64::NAN))
        * 1e3
        / TURNS as f64;
    json!({
        "added_us_per_request_median": percentile(&per_request, 0.5),
        "added_us_per_request_p90": percentile(&per_request, 0.9),
        "added_us_per_request_of_medians": medians,
        "overhead_paired_median_pct": percentile(&pct, 0.5),
        "flush_median_ms": percentile(&flush_ms, 0.5),
        "flush_p90_ms": percentile(&flush_ms, 0.9),
        "flush_us_per_span": percentile(&flush_ms, 0.5) * 1e3 / SPANS_PER_RUN as f64,
        "flushes_failed": runs.iter().filter(|r| r.flush_failed).count(),
    })
}

/// `--sink`: only the collector, serving until killed.
#[allow(clippy::print_stdout)]
async fn serve_sink(sink: Arc<Sink>) -> Result<(), Box<dyn std::error::Error>> {
    let url = start_sink(sink).await?;
    println!("{url}");
    // Serves until killed.
    std::future::pending::<()>().await;
    Ok(())
}

/// The legs' shared parts: the stand-in server, the invoker, the collector and both providers.
async fn setup(sink: Arc<Sink>) -> Result<Setup, Box<dyn std::error::Error>> {
    if std::net::TcpStream::connect_timeout(&"127.0.0.1:9".parse()?, Duration::from_millis(200))
        .is_ok()
    {
        return Err(
            "something listens on 127.0.0.1:9, which the `dead` leg needs unanswered".into(),
        );
    }
    let url = start_sink(sink.clone()).await?;
    Ok(Setup {
        server: StubServer::start().await?,
        invoker: Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none())),
        export: provider(&format!("{url}/v1/traces"))?,
        dead: provider(DEAD_ENDPOINT)?,
        sink,
    })
}

const LEGS: [Leg; 3] = [Leg::None, Leg::Export, Leg::Dead];

/// The warm-up runs of every leg. They flush the `dead` leg after each run too: what one flush to a
/// dead collector takes (what `lllm` waits at exit, up to its 3 s limit), in milliseconds.
async fn warm_up(setup: &Setup) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let mut dead_flushes = Vec::new();
    for _ in 0..WARMUP {
        for leg in LEGS {
            let run = run(setup, leg, true).await?;
            if leg == Leg::Dead {
                if !run.flush_failed {
                    return Err("a flush to the dead collector succeeded".into());
                }
                dead_flushes.push(run.flush.as_secs_f64() * 1e3);
            }
        }
    }
    Ok(dead_flushes)
}

/// The measured runs, by leg name.
type Runs = BTreeMap<&'static str, Vec<Run>>;

/// `repetitions` measured runs of every leg; also the seconds they took.
async fn measure(
    setup: &Setup,
    repetitions: usize,
) -> Result<(Runs, f64), Box<dyn std::error::Error>> {
    let mut runs: Runs = BTreeMap::new();
    let started = Instant::now();
    for i in 0..repetitions {
        // Which leg goes first turns round from one repetition to the next.
        for k in 0..LEGS.len() {
            let leg = LEGS[(i + k) % LEGS.len()];
            let name = match leg {
                Leg::None => "none",
                Leg::Export => "export",
                Leg::Dead => "dead",
            };
            runs.entry(name)
                .or_default()
                .push(run(setup, leg, false).await?);
        }
    }
    Ok((runs, started.elapsed().as_secs_f64()))
}

/// The `export` leg's figures: what it adds to `none`, and what the collector received.
fn export_figures(sink: &Sink, export: &[Run], none: &[Run]) -> serde_json::Value {
    let received = export.iter().fold(Counts::default(), |total, r| Counts {
        requests: total.requests + r.received.requests,
        bytes: total.bytes + r.received.bytes,
        spans: total.spans + r.received.spans,
    });
    let mut figures = added(export, none);
    let spans_per_run = received.spans as f64 / export.len() as f64;
    let bytes_per_run = received.bytes as f64 / export.len() as f64;
    for (key, value) in [
        ("spans_per_run", json!(spans_per_run)),
        (
            "spans_by_operation",
            json!(*sink.names.lock().unwrap_or_else(|p| p.into_inner())),
        ),
        (
            "posts_per_run",
            json!(received.requests as f64 / export.len() as f64),
        ),
        ("bytes_per_run", json!(bytes_per_run)),
        ("bytes_per_span", json!(bytes_per_run / spans_per_run)),
        (
            "undecodable_posts",
            json!(sink.undecodable.load(Ordering::SeqCst)),
        ),
    ] {
        figures[key] = value;
    }
    figures
}

/// The `dead` leg's figures: what it adds to `none`, with the flushes timed in the warm-up.
fn dead_figures(dead: &[Run], none: &[Run], dead_flushes: Vec<f64>) -> serde_json::Value {
    let mut figures = added(dead, none);
    let dead_flushes = sorted(dead_flushes);
    for key in ["flush_p90_ms", "flush_us_per_span", "flushes_failed"] {
        if let Some(figures) = figures.as_object_mut() {
            figures.remove(key);
        }
    }
    figures["flush_median_ms"] = json!(percentile(&dead_flushes, 0.5));
    figures["flush_max_ms"] = json!(dead_flushes[dead_flushes.len() - 1]);
    figures["flushes_timed"] = json!(dead_flushes.len());
    figures
}

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sink = Arc::new(Sink::default());
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some("--sink") {
        return serve_sink(sink).await;
    }
    let repetitions: usize = match arg {
        Some(n) => n.parse()?,
        None => 101,
    };
    let setup = setup(sink).await?;
    let dead_flushes = warm_up(&setup).await?;
    // The spans counted by name are those of the measured runs.
    setup
        .sink
        .names
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    let (runs, measured_s) = measure(&setup, repetitions).await?;
    let (none, export, dead) = (&runs["none"], &runs["export"], &runs["dead"]);
    let report = json!({
        "turns": TURNS,
        "requests_per_run": TURNS,
        "repetitions": repetitions,
        "warmup": WARMUP,
        "measured_s": measured_s,
        "legs": {
            "none": leg_figures(none),
            "export": leg_figures(export),
            "dead": leg_figures(dead),
        },
        "export": export_figures(&setup.sink, export, none),
        "dead": dead_figures(dead, none, dead_flushes),
    });
    setup.export.shutdown().ok();
    // Its export thread may be waiting out retries: do not wait for it.
    setup
        .dead
        .shutdown_with_timeout(Duration::from_millis(100))
        .ok();
    println!("{report}");
    Ok(())
}
