//! What lllm adds to an MCP tool call: the same server program, started twice, called the same number
//! of times through lllm's tool (argument check against the server's schema, the call with its
//! timeout, the result made into the model's text) and through the bare SDK client. The difference
//! of the medians is lllm's own time per call. Blocks of calls alternate between the two, so that
//! drift in the machine's speed falls on both.
//!
//!   mcp_overhead CALLS MESSAGE_BYTES -- PROGRAM ARGS...     # prints one JSON object
//!
//! The server must have an `echo` tool taking `message` (the reference server-everything has).

use std::time::{Duration, Instant};

use lllm_runtime::mcp::McpServer;
use lllm_runtime::tools::ToolFilter;
use lllm_runtime::Tool;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

/// Calls in one block before switching to the other client.
const BLOCK: usize = 100;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

fn summary(mut times: Vec<Duration>) -> serde_json::Value {
    times.sort();
    let mean = times.iter().sum::<Duration>().as_secs_f64() * 1e6 / times.len() as f64;
    json!({"p50_us": percentile(&times, 0.5), "p90_us": percentile(&times, 0.9), "p99_us": percentile(&times, 0.99), "mean_us": mean})
}

/// The command line: how many calls, the message's size, and the server program.
struct Args {
    calls: usize,
    message_bytes: usize,
    command: Vec<String>,
}

fn parse_args() -> Result<Args, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: mcp_overhead CALLS MESSAGE_BYTES -- PROGRAM ARGS...";
    let calls: usize = args.first().ok_or(usage)?.parse()?;
    let message_bytes: usize = args.get(1).ok_or(usage)?.parse()?;
    let command: Vec<String> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .cloned()
        .collect();
    if command.is_empty() {
        return Err(usage.into());
    }
    Ok(Args {
        calls,
        message_bytes,
        command,
    })
}

/// The bare SDK client over a second copy of the server; the child is returned so that it lives
/// (it is killed when dropped) as long as the client is used.
async fn start_bare(
    command: &[String],
) -> Result<(RunningService<RoleClient, ()>, tokio::process::Child), Box<dyn std::error::Error>> {
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let io = (
        child.stdout.take().ok_or("no stdout")?,
        child.stdin.take().ok_or("no stdin")?,
    );
    let bare = ().serve(io).await?;
    Ok((bare, child))
}

/// The times of `calls` calls through lllm's tool and through the bare client, in alternating
/// blocks after a warm-up block of each.
async fn measure(
    tool: &dyn Tool,
    bare: &RunningService<RoleClient, ()>,
    message_bytes: usize,
    calls: usize,
) -> Result<(Vec<Duration>, Vec<Duration>), Box<dyn std::error::Error>> {
    let message: String = "the quick brown fox jumps over the lazy dog "
        .chars()
        .cycle()
        .take(message_bytes)
        .collect();
    let arguments = json!({ "message": message });
    let object = arguments.as_object().cloned().ok_or("not an object")?;
    let call_bare = || {
        bare.peer()
            .call_tool(CallToolRequestParams::new("echo").with_arguments(object.clone()))
    };
    // Warm both paths up (JIT of the server, first allocations).
    for _ in 0..BLOCK {
        tool.call(arguments.clone()).await?;
        call_bare().await?;
    }
    let (mut through_lllm, mut through_sdk) =
        (Vec::with_capacity(calls), Vec::with_capacity(calls));
    while through_lllm.len() < calls {
        for _ in 0..BLOCK {
            let start = Instant::now();
            let output = tool.call(arguments.clone()).await?;
            through_lllm.push(start.elapsed());
            std::hint::black_box(output.into_content());
        }
        for _ in 0..BLOCK {
            let start = Instant::now();
            let result = call_bare().await?;
            through_sdk.push(start.elapsed());
            std::hint::black_box(result);
        }
    }
    Ok((through_lllm, through_sdk))
}

/// The figures of both paths and what lllm adds.
fn report(
    args: &Args,
    through_lllm: Vec<Duration>,
    through_sdk: Vec<Duration>,
) -> serde_json::Value {
    let lllm = summary(through_lllm);
    let sdk = summary(through_sdk);
    let overhead_p50 =
        lllm["p50_us"].as_f64().unwrap_or(0.0) - sdk["p50_us"].as_f64().unwrap_or(0.0);
    let overhead_mean =
        lllm["mean_us"].as_f64().unwrap_or(0.0) - sdk["mean_us"].as_f64().unwrap_or(0.0);
    json!({
        "server": args.command.join(" "),
        "calls": args.calls,
        "message_bytes": args.message_bytes,
        "through_lllm": lllm,
        "through_sdk": sdk,
        "overhead_p50_us": overhead_p50,
        "overhead_mean_us": overhead_mean,
    })
}

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let server = McpServer::stdio("bench", args.command.clone())
        .start()
        .await?;
    let tool = server
        .tools(&ToolFilter::Include(vec!["echo".into()]))?
        .pop()
        .ok_or("the server has no `echo` tool")?;
    let (bare, _child) = start_bare(&args.command).await?;
    let (through_lllm, through_sdk) =
        measure(tool.as_ref(), &bare, args.message_bytes, args.calls).await?;
    println!("{}", report(&args, through_lllm, through_sdk));
    server.shutdown().await;
    bare.cancel().await.ok();
    Ok(())
}
