//! What `lllm run` and `lllm resume` print: the `--json` summary and the steps' progress.

use lllm_runtime::agent::{ContextStats, DialogTree, Usage};
use lllm_runtime::engine::AgentSummary;
use lllm_runtime::events::{RunEvent, RunObserver, StepOutcome};
use lllm_runtime::invoker::CallStats;
use lllm_runtime::RunOutput;
use serde_json::{json, Value};

/// `{"answer", "usage", "dialogs", "dialog_usage"}` of a run; a chat's (`chat_agent`) also names
/// its agent, and gives the answer as JSON when the agent has an output schema.
pub(crate) fn summary(output: &RunOutput, chat_agent: Option<(&str, bool)>) -> Value {
    let Some((agent, structured)) = chat_agent else {
        let ids: serde_json::Map<_, _> = output
            .agents
            .iter()
            .map(|a| (a.name.clone(), dialog_ids(&a.dialogs)))
            .collect();
        let usage: serde_json::Map<_, _> = output
            .agents
            .iter()
            .map(|a| (a.name.clone(), dialog_usage(&a.dialogs)))
            .collect();
        return json!({
            "answer": output.answer,
            "usage": with_calls(
                with_context(usage_json(&output.usage), &output.context),
                &output.calls,
            ),
            "dialogs": ids,
            "dialog_usage": usage,
        });
    };
    let first = output.agents.iter().find(|a| a.name == agent);
    let answer = if structured {
        serde_json::from_str(&output.answer).unwrap_or_else(|_| Value::from(output.answer.as_str()))
    } else {
        Value::from(output.answer.as_str())
    };
    json!({
        "agent": agent,
        "answer": answer,
        "usage": with_calls(
            with_context(
                usage_json(&first.map_or(output.usage, |a| a.usage)),
                &first.map_or(output.context, |a| a.context),
            ),
            first.map_or(&output.calls, |a| &a.calls),
        ),
        "dialogs": {agent: first.map_or(json!({}), |a| dialog_ids(&a.dialogs))},
        "dialog_usage": {agent: first.map_or(json!({}), |a: &AgentSummary| dialog_usage(&a.dialogs))},
    })
}

fn dialog_ids(tree: &DialogTree) -> Value {
    tree.dialogs
        .iter()
        .map(|d| (d.alias.clone(), Value::from(d.dialog.id().to_string())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn dialog_usage(tree: &DialogTree) -> Value {
    tree.dialogs
        .iter()
        .map(|d| (d.alias.clone(), usage_json(&d.dialog.usage())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `{"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens"?}`.
pub(crate) fn usage_json(usage: &Usage) -> Value {
    let mut value = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens(),
    });
    if let Some(cached) = usage.cached_tokens {
        value["cached_tokens"] = Value::from(cached);
    }
    value
}

/// `usage` with `"context": {"compactions", "tokens_before", "tokens_after"}` when the run
/// compacted a window (absent otherwise, so runs without `context:` print what they always did).
fn with_context(mut usage: Value, context: &ContextStats) -> Value {
    if context.compactions > 0 {
        usage["context"] = json!({
            "compactions": context.compactions,
            "tokens_before": context.tokens_before,
            "tokens_after": context.tokens_after,
        });
    }
    usage
}

/// `usage` with `"calls": {"answered_by": {endpoint: answers}, "fallback_answers", "hops",
/// "queue_wait_ms"}` when a call fell back, waited for a slot, or several endpoints answered
/// (absent otherwise).
fn with_calls(mut usage: Value, calls: &CallStats) -> Value {
    if calls.is_notable() {
        usage["calls"] = json!({
            "answered_by": calls.answered_by,
            "fallback_answers": calls.fallback_answers,
            "hops": calls.hops,
            "queue_wait_ms": u64::try_from(calls.queue_wait.as_millis()).unwrap_or(u64::MAX),
        });
    }
    usage
}

/// One line on stderr per step event, timed from `started`.
pub(crate) fn progress_lines_since(started: std::time::Instant) -> RunObserver {
    RunObserver::new(move |event| show_step(started, event))
}

#[allow(clippy::print_stderr)]
fn show_step(started: std::time::Instant, event: &RunEvent) {
    let at = started.elapsed().as_secs_f64();
    match event {
        RunEvent::StepStarted {
            step,
            agent,
            dialog,
        } => eprintln!("{at:6.1}s ▸ {step} {agent}/{dialog}"),
        RunEvent::StepEnded {
            step,
            agent,
            dialog,
            outcome,
            took,
        } => {
            let (mark, suffix) = match outcome {
                StepOutcome::Finished => ("✓", ""),
                StepOutcome::Failed => ("✗", ""),
                StepOutcome::Cancelled => ("–", " stopped"),
            };
            eprintln!(
                "{at:6.1}s {mark} {step} {agent}/{dialog}{suffix} ({:.1}s)",
                took.as_secs_f64()
            );
        }
        _ => {}
    }
}
