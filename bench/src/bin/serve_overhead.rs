//! What `lllm serve` adds to a run: the latency of one chat turn asked over HTTP
//! (`POST /v1/chat/completions`, a keep-alive client) against the same turn run in process
//! (`Engine::run`, the path of `lllm run`), legs alternating, both against the testing kit's
//! stand-in server in this process; the requests per second the server sustains with 16 clients;
//! and the resident memory of a `lllm serve` process (the release binary) with 100 conversations
//! that each made a chat request and a stored response and keep an idle connection open.
//!
//! ```text
//! serve_overhead [--lllm PATH] [--requests N]   # prints one JSON object (`report serve` renders it)
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lllm_bench::percentile;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::serve::Served;
use lllm_runtime::testing::StubServer;
use lllm_runtime::{load_tactic, Engine, OpenAiInvoker, RunPlan, TacticRegistry};
use serde_json::json;

const CLIENTS: usize = 16;
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(5);
const CONVERSATIONS: usize = 100;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    // Without the binary (the test command's smoke run), the RSS leg is left out.
    let lllm = flag("--lllm");
    let requests: usize = flag("--requests").map_or(Ok(2000), |n| n.parse())?;
    let runtime = tokio::runtime::Runtime::new()?;
    let stub = runtime.block_on(StubServer::start())?;
    let dir = std::env::temp_dir().join(format!("lllm-serve-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let tactic = dir.join("helper.yaml");
    std::fs::write(
        &tactic,
        format!(
            "global:\n  model_name: m\n  model_args: {{api_base: \"{}\", timeout: 30}}\n  inference_hints: {{profile: dynamo}}\nagent_configs:\n  - name: helper\n    system_prompt: You help.\n",
            stub.base_url()
        ),
    )?;
    let (inline, served) = runtime.block_on(latency(&tactic, requests))?;
    let rps = runtime.block_on(throughput(&tactic))?;
    let rss = lllm
        .map(|lllm| resident(&lllm, &tactic, &dir))
        .transpose()?;
    std::fs::remove_dir_all(&dir).ok();
    let legs = |sorted: &[f64]| json!({"p50_ms": percentile(sorted, 0.50), "p99_ms": percentile(sorted, 0.99)});
    let figures = json!({
        "requests": requests,
        "in_process": legs(&inline),
        "served": legs(&served),
        "clients": CLIENTS,
        "window_s": THROUGHPUT_WINDOW.as_secs(),
        "requests_per_second": rps,
        "conversations": CONVERSATIONS,
        "rss_started_mib": rss.map(|r| r.0),
        "rss_conversations_mib": rss.map(|r| r.1),
    });
    println!("{figures}");
    Ok(())
}

async fn served_engine(
    tactic: &std::path::Path,
) -> anyhow::Result<(Engine, Arc<lllm_runtime::engine::PreparedTactic>)> {
    let engine = Engine::new(TacticRegistry::new()).with_invoker(Arc::new(
        OpenAiInvoker::with_defaults(ServerDefaults::none()),
    ));
    let prepared = engine.prepare(load_tactic(tactic)?).await?;
    Ok((engine, prepared))
}

async fn start_server(
    tactic: &std::path::Path,
    max_runs: usize,
) -> anyhow::Result<(String, Engine, Arc<lllm_runtime::engine::PreparedTactic>)> {
    let (engine, prepared) = served_engine(tactic).await?;
    let served = Served::builder(engine.clone())
        .tactic("helper", prepared.clone())
        .max_runs(max_runs)
        .build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { served.serve(listener, std::future::pending()).await.ok() });
    Ok((base, engine, prepared))
}

/// Milliseconds per turn: in process, and over HTTP.
async fn latency(
    tactic: &std::path::Path,
    requests: usize,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let (base, engine, prepared) = start_server(tactic, 64).await?;
    let client = reqwest::Client::new();
    let url = format!("{base}/v1/chat/completions");
    let body =
        json!({"model": "helper", "messages": [{"role": "user", "content": "hello"}]}).to_string();
    let (mut inline, mut served) = (Vec::new(), Vec::new());
    for i in 0..requests + 50 {
        let started = Instant::now();
        engine.run(&prepared, RunPlan::new().input("hello")).await?;
        let a = started.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        let response = client.post(&url).body(body.clone()).send().await?;
        anyhow::ensure!(response.status().is_success(), "HTTP {}", response.status());
        response.bytes().await?;
        let b = started.elapsed().as_secs_f64() * 1e3;
        if i >= 50 {
            inline.push(a);
            served.push(b);
        }
    }
    inline.sort_by(f64::total_cmp);
    served.sort_by(f64::total_cmp);
    Ok((inline, served))
}

/// Completed chat requests per second with `CLIENTS` clients at once.
async fn throughput(tactic: &std::path::Path) -> anyhow::Result<f64> {
    let (base, _, _) = start_server(tactic, 256).await?;
    let url = format!("{base}/v1/chat/completions");
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + THROUGHPUT_WINDOW;
    let clients = (0..CLIENTS).map(|i| {
        let (url, done) = (url.clone(), done.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let body = json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]})
                .to_string();
            while Instant::now() < deadline {
                let sent = client
                    .post(&url)
                    .header("x-session-id", format!("c{i}"))
                    .body(body.clone())
                    .send()
                    .await;
                if let Ok(response) = sent {
                    if response.status().is_success() && response.bytes().await.is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    });
    futures::future::join_all(clients).await;
    Ok(done.load(Ordering::Relaxed) as f64 / THROUGHPUT_WINDOW.as_secs_f64())
}

/// The RSS of a `lllm serve` process (MiB) after it started, and with 100 conversations held.
fn resident(
    lllm: &str,
    tactic: &std::path::Path,
    dir: &std::path::Path,
) -> anyhow::Result<(f64, f64)> {
    let mut child = std::process::Command::new(lllm)
        .args([
            "serve",
            &tactic.display().to_string(),
            "--listen",
            "127.0.0.1:0",
            "--state",
        ])
        .arg(dir.join("state"))
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let mut address = String::new();
    for line in BufReader::new(stderr).lines() {
        let line = line?;
        if let Some(rest) = line.split("on http://").nth(1) {
            address = rest.split('/').next().unwrap_or_default().to_owned();
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let start = rss_mib(child.id());
    let mut idle = Vec::new();
    for i in 0..CONVERSATIONS {
        for (path, body) in [
            (
                "/v1/chat/completions",
                json!({"model": "helper", "messages": [{"role": "user", "content": "hello there"}]}),
            ),
            (
                "/v1/responses",
                json!({"model": "helper", "input": "hello there"}),
            ),
        ] {
            let body = body.to_string();
            let mut stream = std::net::TcpStream::connect(&address)?;
            write!(stream, "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nthread-id: conversation-{i}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())?;
            let mut reader = BufReader::new(stream.try_clone()?);
            let mut status = String::new();
            reader.read_line(&mut status)?;
            anyhow::ensure!(status.contains(" 200 "), "{path}: {status}");
            idle.push(stream);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let busy = rss_mib(child.id());
    child.kill().ok();
    child.wait().ok();
    Ok((start, busy))
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
