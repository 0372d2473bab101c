//! 1,000 dialogs × 10 turns, all in flight at once, against a local stand-in server (the `testing`
//! stub on 127.0.0.1). Prints throughput, peak memory, and checks that no message was lost or crossed
//! into another dialog. Run with `scripts/bench_concurrency.sh` (it raises the open-files limit).
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::testing::StubServer;
use lllm_runtime::{Agent, InferenceHints, ModelArgs, OpenAiInvoker, Profile};

const DIALOGS: usize = 1_000;
const TURNS: usize = 10;

/// Peak resident memory of this process, from the kernel (kB → MiB).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

#[tokio::main]
async fn main() {
    let dialogs: usize = std::env::var("LLLM_DIALOGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DIALOGS);
    let server = StubServer::start().await.expect("stub server");
    let agent = Arc::new(
        Agent::builder()
            .name("load")
            .system_prompt("You answer.")
            .model("stub")
            .invoker(Arc::new(OpenAiInvoker::with_defaults(
                ServerDefaults::none(),
            )))
            .model_args(ModelArgs::new().api_base(server.base_url()).max_tokens(16))
            .inference_hints(InferenceHints::for_profile(Profile::Dynamo))
            .build()
            .expect("agent"),
    );
    for d in 0..dialogs {
        agent.open(&format!("d{d}")).expect("open");
    }
    let started = Instant::now();
    let runs = (0..dialogs).map(|d| {
        let agent = agent.clone();
        async move {
            let alias = format!("d{d}");
            for t in 0..TURNS {
                agent
                    .receive_in(&alias, format!("{alias} turn {t}"))
                    .expect("receive");
                agent.respond(&alias).await.expect("answer");
            }
        }
    });
    join_all(runs).await;
    let elapsed = started.elapsed();

    // Every dialog holds its own turns, in order, each answered by its own message.
    let mut lost = 0;
    for d in 0..dialogs {
        let dialog = agent.dialog(&format!("d{d}")).expect("dialog");
        let texts: Vec<&str> = dialog.messages().iter().map(|m| m.text()).collect();
        let expected = 1 + 2 * TURNS;
        let ok = texts.len() == expected
            && (0..TURNS).all(|t| {
                texts[1 + 2 * t] == format!("d{d} turn {t}")
                    && texts[2 + 2 * t] == format!("stub answer to: d{d} turn {t}")
            });
        if !ok {
            lost += 1;
        }
    }
    let requests = server.requests().len();
    println!(
        "{}",
        serde_json::json!({
            "dialogs": dialogs,
            "turns_per_dialog": TURNS,
            "requests": requests,
            "seconds": elapsed.as_secs_f64(),
            "turns_per_second": (dialogs * TURNS) as f64 / elapsed.as_secs_f64(),
            "peak_rss_mib": peak_rss_mib(),
            "dialogs_with_lost_or_crossed_messages": lost,
        })
    );
    assert_eq!(lost, 0, "messages were lost");
    assert_eq!(requests, dialogs * TURNS);
}
