//! `lllm serve`: the tactics as models over HTTP, until a signal stops the process.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::anyhow;
use lllm_runtime::engine::tactic_name;
use lllm_runtime::serve::Served;
use lllm_runtime::{load_tactic, Engine, Host, TacticRegistry, TacticSpec};

use crate::cli::ServeArgs;
use crate::execute::announce_servers;
use crate::exit::{failed, run_failure, usage, Failure};

/// The environment variable holding the serve key when `--api-key` is not given.
pub(crate) const KEY_VAR: &str = "LLLM_SERVE_KEY";

/// Serves `args.tactics` on `args.listen`.
#[allow(clippy::print_stderr)]
pub(crate) fn serve(args: ServeArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let key = serve_key(&args)?;
    let mut specs = Vec::new();
    for path in &args.tactics {
        let spec = load_tactic(path).map_err(usage)?;
        crate::redact::remember_tactic(&spec);
        specs.push((tactic_name(path), spec));
    }
    let state = args.state.clone().unwrap_or_else(default_state_dir);
    let host = Host::multi_thread()
        .map_err(|e| failed(anyhow::Error::new(e).context("cannot start the async runtime")))?;
    host.block_on(async {
        let engine = Engine::new(registry.clone());
        let mut builder = Served::builder(engine.clone())
            .state_dir(&state)
            .max_runs(args.max_runs)
            .max_body_bytes(args.max_body)
            .read_timeout(std::time::Duration::from_secs(args.read_timeout))
            .keep_conversations(args.keep_conversations)
            .keep_conversation_bytes(args.keep_conversation_bytes)
            .paused_runs(
                args.keep_paused,
                std::time::Duration::from_secs(args.pause_seconds),
            );
        for key in key {
            builder = builder.api_key(key);
        }
        for origin in &args.cors_origins {
            builder = builder.cors_origin(origin.clone());
        }
        let mut prepared = Vec::new();
        for (name, spec) in specs {
            announce_servers(&spec);
            announce_sessionless(&name, &spec);
            let tactic = engine.prepare(spec).await.map_err(run_failure)?;
            prepared.push(tactic.clone());
            builder = builder.tactic(name, tactic);
        }
        let served = builder.build().map_err(usage)?;
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| failed(anyhow!(e).context(format!("cannot listen on {}", args.listen))))?;
        let address = listener.local_addr().map_err(|e| failed(anyhow!(e)))?;
        eprintln!(
            "lllm: serving {} on http://{address}/v1 (runs kept in {}); the console is http://{address}/",
            served.models().join(", "),
            state.display()
        );
        // A signal ends the process (see `signals`): runs waiting for an approval are in their
        // journals already; a run cut mid-way is reported failed by the next server, resumable.
        let outcome = served.serve(listener, std::future::pending()).await;
        for tactic in prepared {
            tactic.shutdown().await;
        }
        outcome.map_err(|e| failed(anyhow!(e)))
    })
}

/// Says, at start-up, that the agents of `model` without `inference_hints` send no session
/// downstream: the caller's conversation cannot reach a KV-aware router through them.
#[allow(clippy::print_stderr)]
fn announce_sessionless(model: &str, spec: &TacticSpec) {
    let agents: Vec<&str> = spec
        .agents()
        .iter()
        .filter(|agent| agent.inference_hints().is_none())
        .map(|agent| agent.name())
        .collect();
    if agents.is_empty() {
        return;
    }
    let all = if agents.len() == spec.agents().len() {
        "no session"
    } else {
        "no session from some agents"
    };
    eprintln!(
        "lllm: {model} sends {all} downstream (without inference_hints: {}): a KV-aware router sees each of its requests apart; add `inference_hints: {{profile: ...}}` to keep a conversation on one worker",
        agents.join(", ")
    );
}

/// The keys, from `--api-key` or the environment (separated by commas); required off loopback.
fn serve_key(args: &ServeArgs) -> Result<Vec<String>, Failure> {
    let keys: Vec<String> = if args.api_key.is_empty() {
        std::env::var(KEY_VAR)
            .map(|keys| keys.split(',').map(str::to_owned).collect())
            .unwrap_or_default()
    } else {
        args.api_key.clone()
    };
    let keys: Vec<String> = keys.into_iter().filter(|k| !k.is_empty()).collect();
    for key in &keys {
        crate::redact::remember(key);
    }
    if keys
        .iter()
        .any(|key| !key.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(usage(anyhow!(
            "a serve key must be visible ASCII characters (no spaces): it is sent as `Authorization: Bearer KEY`"
        )));
    }
    if keys.is_empty() && !is_loopback(&args.listen) {
        return Err(usage(anyhow!(
            "--listen {}: not a loopback address; serving beyond this machine needs a key: --api-key KEY or {KEY_VAR}",
            args.listen
        )));
    }
    Ok(keys)
}

fn is_loopback(address: &SocketAddr) -> bool {
    address.ip().is_loopback()
}

/// `serve/` under lllm's cache directory (`LLLM_CACHE_DIR`, else `$XDG_CACHE_HOME/lllm`, else
/// `~/.cache/lllm`).
fn default_state_dir() -> PathBuf {
    lllm_runtime::config::cache_dir().join("serve")
}
