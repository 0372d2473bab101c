//! `lllm replay`: a recorded trace, sent again.

use std::io::Write;

use anyhow::anyhow;
use lllm_runtime::replay::{check_api_base, replay_trace, ReplayOptions, Trace};
use lllm_runtime::Profile;

use crate::cli::ReplayArgs;
use crate::exit::{failed, stdout_failed, usage, Failure};

pub(crate) fn replay(args: &ReplayArgs) -> Result<(), Failure> {
    // The arguments first (the URL's credentials redacted in any message), then the trace.
    check_api_base(&args.api_base).map_err(usage)?;
    let profile: Profile = serde_json::from_value(serde_json::Value::from(args.profile.as_str()))
        .map_err(|_| {
        usage(anyhow!(
            "--profile `{}`: use openai, dynamo, vllm or sglang",
            args.profile
        ))
    })?;
    let mut options = ReplayOptions::new(args.api_base.clone(), args.model.clone());
    options.profile = profile;
    options.session = !args.no_session;
    options.speed = args.speed;
    options.block_size = usize::try_from(args.block_size).unwrap_or(usize::MAX);
    options.check().map_err(usage)?;
    let trace = Trace::open(&args.trace, options.block_size).map_err(|e| match e {
        lllm_runtime::replay::ReplayError::File { .. } => usage(e),
        other => usage(anyhow::Error::new(other).context(args.trace.display().to_string())),
    })?;
    let report = crate::execute::host()?
        .block_on(replay_trace(&trace, &options))
        .map_err(usage)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        for r in &report.requests {
            let mut line = serde_json::json!({
                "session_id": r.session_id,
                "response_id": r.response_id,
                "prompt_tokens": r.prompt_tokens,
                "cached_tokens": r.cached_tokens,
                "latency_ms": r.latency.as_secs_f64() * 1000.0,
                "error": r.error,
                "dispatched_ms": r.dispatched_at.as_secs_f64() * 1000.0,
            });
            // Agentic traces: which recorded request this was.
            if let Some(object) = line.as_object_mut() {
                if let Some(id) = &r.request_id {
                    object.insert("request_id".into(), id.as_str().into());
                }
                if let Some(play) = &r.play_id {
                    object.insert("play_id".into(), play.as_str().into());
                }
            }
            writeln!(out, "{line}").map_err(stdout_failed)?;
        }
    }
    out.write_all(report.summary().as_bytes())
        .map_err(stdout_failed)?;
    let errors = report.requests.iter().filter(|r| r.error.is_some()).count();
    if errors > 0 {
        return Err(failed(anyhow!(
            "{errors} of {} requests failed",
            report.requests.len()
        )));
    }
    Ok(())
}
