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

/// One line on stderr per step or task event, timed from `started`.
pub(crate) fn progress_lines_since(started: std::time::Instant) -> RunObserver {
    RunObserver::new(move |event| show_step(started, event))
}

#[allow(clippy::print_stderr)]
fn show_step(started: std::time::Instant, event: &RunEvent) {
    if let Some(line) = progress_line(started.elapsed().as_secs_f64(), event) {
        eprintln!("{line}");
    }
}

/// The progress line of `event` at `at` seconds into the run: steps, and tasks (background
/// subagents) as they start and end, named by their id so a person can tell them apart.
fn progress_line(at: f64, event: &RunEvent) -> Option<String> {
    let mark = |outcome: &StepOutcome| match outcome {
        StepOutcome::Finished => ("✓", ""),
        StepOutcome::Failed => ("✗", " failed"),
        StepOutcome::Cancelled => ("–", " stopped"),
    };
    Some(match event {
        RunEvent::StepStarted {
            step,
            agent,
            dialog,
        } => format!("{at:6.1}s ▸ {step} {agent}/{dialog}"),
        RunEvent::StepEnded {
            step,
            agent,
            dialog,
            outcome,
            took,
        } => {
            let (mark, suffix) = match mark(outcome) {
                // The run's error says why a step failed; the mark is enough here.
                ("✗", _) => ("✗", ""),
                shown => shown,
            };
            format!(
                "{at:6.1}s {mark} {step} {agent}/{dialog}{suffix} ({:.1}s)",
                took.as_secs_f64()
            )
        }
        RunEvent::TaskStarted {
            task,
            subagent,
            agent,
            parent_agent,
            mode,
            background,
            ..
        } => {
            let by = if agent == parent_agent {
                String::new()
            } else {
                format!("{agent}, ")
            };
            let when = if *background {
                "in the background"
            } else {
                "answered at once"
            };
            format!(
                "{at:6.1}s ▸ task {task} {subagent} ({by}{}, {when}) started by {parent_agent}",
                mode.as_str()
            )
        }
        RunEvent::TaskEnded {
            task,
            agent,
            outcome,
        } => {
            let (mark, suffix) = mark(outcome);
            format!("{at:6.1}s {mark} task {task} {agent}{suffix}")
        }
        RunEvent::ToolProgress {
            agent,
            tool,
            status,
            message,
            ..
        } => {
            let message = message.as_deref().unwrap_or_default();
            let line = format!("{at:6.1}s … {agent}: {tool} {status} {message}");
            crate::screen::visible(line.trim_end())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lllm_runtime::agent::tasks::SubagentMode;
    use lllm_runtime::DialogId;

    #[test]
    fn tasks_show_as_they_start_and_end_beside_the_steps() {
        let started = RunEvent::TaskStarted {
            task: "t2".into(),
            subagent: "outsider".into(),
            agent: "scout".into(),
            parent_agent: "lead".into(),
            parent_dialog: DialogId::new(),
            dialog: DialogId::new(),
            mode: SubagentMode::Isolated,
            background: true,
        };
        assert_eq!(
            progress_line(1.25, &started).as_deref(),
            Some("   1.2s ▸ task t2 outsider (scout, isolated, in the background) started by lead")
        );
        let lines: Vec<String> = [
            StepOutcome::Finished,
            StepOutcome::Failed,
            StepOutcome::Cancelled,
        ]
        .into_iter()
        .filter_map(|outcome| {
            progress_line(
                3.0,
                &RunEvent::TaskEnded {
                    task: "t2".into(),
                    agent: "scout".into(),
                    outcome,
                },
            )
        })
        .collect();
        assert_eq!(
            lines,
            [
                "   3.0s ✓ task t2 scout",
                "   3.0s ✗ task t2 scout failed",
                "   3.0s – task t2 scout stopped"
            ]
        );
        let step = RunEvent::StepEnded {
            step: "steps[0]".into(),
            agent: "lead".into(),
            dialog: "main".into(),
            outcome: StepOutcome::Cancelled,
            took: std::time::Duration::from_millis(1500),
        };
        assert_eq!(
            progress_line(2.0, &step).as_deref(),
            Some("   2.0s – steps[0] lead/main stopped (1.5s)")
        );
        let text = RunEvent::Text {
            agent: "lead".into(),
            text: "x".into(),
        };
        assert_eq!(progress_line(2.0, &text), None);
    }
}
