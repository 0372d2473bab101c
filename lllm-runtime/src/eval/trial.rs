//! One trial of one case: the tactic run once with the case's input, then every expectation checked
//! in a fixed order (the run's own failure or drift, forbidden tools, the tool trajectory, the
//! answer, the budgets, the judge), the first that fails said in words.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use lllm_core::eval::{self, MadeCall};
use lllm_core::{EvalCase, Usage};
use serde_json::Value;

use super::report::TrialReport;
use super::tape::{Drift, WireMessage};
use crate::engine::{JournalPlan, PreparedTactic};
use crate::invoker::{ChatRequest, ChatResponse, InvokeError, Invoker};
use crate::{Agent, Engine, RunPlan};

/// What a trial runs with: its invoker (recording, replaying or plain), the drift its replayer
/// saw, and the journal file it writes.
pub(crate) struct TrialSetup {
    pub(crate) invoker: Arc<dyn Invoker>,
    pub(crate) drift: Box<dyn Fn() -> Option<Drift> + Send + Sync>,
    pub(crate) journal: Option<std::path::PathBuf>,
}

/// Counts a run's requests and keeps the tool calls of its answers, in the order they came.
#[derive(Debug)]
struct Watched {
    inner: Arc<dyn Invoker>,
    seen: Mutex<(u64, Vec<MadeCall>)>,
}

#[async_trait]
impl Invoker for Watched {
    async fn invoke(&self, request: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).0 += 1;
        let response = self.inner.invoke(request).await?;
        let calls = response.message.tool_calls.iter().map(|call| MadeCall {
            name: call.name.clone(),
            // Arguments that are not JSON are compared as the string the model wrote.
            args: serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone())),
        });
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .extend(calls);
        Ok(response)
    }
}

/// Runs trial `trial` of `case` and checks it.
pub(crate) async fn run_trial(
    engine: &Engine,
    tactic: &PreparedTactic,
    case: &EvalCase,
    trial: u32,
    setup: TrialSetup,
) -> TrialReport {
    let started = Instant::now();
    let watched = Arc::new(Watched {
        inner: setup.invoker.clone(),
        seen: Mutex::default(),
    });
    let mut plan = RunPlan::new()
        .maybe_input(case.input.clone())
        .vars(case.vars.clone())
        .invoker(watched.clone());
    if let Some(path) = setup.journal {
        plan = plan.journal(JournalPlan::Create(path));
    }
    let outcome = engine.run(tactic, plan).await;
    let (requests, calls) =
        std::mem::take(&mut *watched.seen.lock().unwrap_or_else(|p| p.into_inner()));
    let (answer, usage, run_error) = match outcome {
        Ok(output) => (output.answer, output.usage, None),
        Err(e) => (String::new(), Usage::default(), Some(e.to_string())),
    };
    let drift = (setup.drift)();
    let mut report = TrialReport {
        trial,
        passed: false,
        failure: None,
        drift: drift.clone(),
        answer,
        tool_calls: calls.iter().map(Into::into).collect(),
        judge: None,
        requests,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.cached_tokens.unwrap_or(0),
        seconds: 0.0,
    };
    let failure = match (drift, run_error) {
        (Some(drift), _) => Some(drift_words(&drift)),
        (None, Some(error)) => Some(format!("the run failed: {error}")),
        (None, None) => check(tactic, case, &calls, &mut report, &setup.invoker)
            .await
            .err(),
    };
    report.passed = failure.is_none();
    report.failure = failure;
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// The expectations after a run that answered, in order; the error is the first that failed.
async fn check(
    tactic: &PreparedTactic,
    case: &EvalCase,
    calls: &[MadeCall],
    report: &mut TrialReport,
    invoker: &Arc<dyn Invoker>,
) -> Result<(), String> {
    let expect = &case.expect;
    eval::check_forbidden(&expect.forbid_tools, calls)?;
    eval::check_tools(&expect.tools, expect.tools_order, calls)?;
    if let Some(output) = &expect.output {
        output.check(&report.answer)?;
    }
    if let Some(most) = expect.max_requests.filter(|m| report.requests > *m) {
        return Err(format!(
            "the run sent {} requests, more than max_requests {most}",
            report.requests
        ));
    }
    let tokens = report
        .prompt_tokens
        .saturating_add(report.completion_tokens);
    if let Some(most) = expect.max_tokens.filter(|m| tokens > *m) {
        return Err(format!(
            "the run used {tokens} tokens, more than max_tokens {most}"
        ));
    }
    if let Some(judge) = &expect.judge {
        let question = eval::judge_question(&judge.criteria, &report.answer, calls);
        let reply = ask_judge(tactic, &judge.agent, question, invoker).await?;
        let verdict = eval::parse_verdict(&reply)?;
        report.judge = Some(verdict.reason.clone());
        if !verdict.pass {
            return Err(format!(
                "the judge `{}` failed it: {}",
                judge.agent, verdict.reason
            ));
        }
    }
    Ok(())
}

/// Asks agent `name` of the tactic, in a dialog of its own, and returns its reply's text.
async fn ask_judge(
    tactic: &PreparedTactic,
    name: &str,
    question: String,
    invoker: &Arc<dyn Invoker>,
) -> Result<String, String> {
    let spec = tactic
        .spec()
        .agent(name)
        .ok_or_else(|| format!("the tactic has no agent `{name}` to judge"))?;
    let failed = |e: crate::AgentError| format!("the judge `{name}` could not answer: {e}");
    let mut builder = crate::AgentBuilder::from_spec(spec).invoker(invoker.clone());
    // A judge whose system prompt is a server's prompt (`system_prompt_mcp:`) gets it too.
    let from_server = tactic.servers().system_prompt_for(spec);
    if let Some(prompt) = from_server.map_err(|e| format!("the judge `{name}`: {e}"))? {
        builder = builder.system_prompt(prompt);
    }
    let agent: Agent = builder.build().map_err(failed)?;
    agent.open("judge").map_err(failed)?;
    agent.receive(question).map_err(failed)?;
    let reply = agent.respond("judge").await.map_err(failed)?;
    Ok(reply.text().to_owned())
}

/// A drift in words: which message, and both sides.
pub(crate) fn drift_words(drift: &Drift) -> String {
    let side = |m: &Option<WireMessage>| match m {
        Some(m) => format!(
            "{} {}",
            m.role.as_str(),
            serde_json::to_string(m).unwrap_or_default()
        ),
        None => "nothing".to_owned(),
    };
    format!(
        "drift: the request differs from the recording at message {}: recorded {}; sent {}",
        drift.index,
        side(&drift.recorded),
        side(&drift.sent)
    )
}
