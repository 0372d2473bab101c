//! `halt()`: once a program stopping on a signal calls it, no agent sends another request or runs
//! another tool. (A test binary of its own, outside `it`: the switch is process-wide and cannot be
//! undone, so under `cargo test` it would stop every test that shares its process.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lllm_runtime::agent::AgentErrorKind;
use lllm_runtime::testing::ScriptedInvoker;
use lllm_runtime::tools::ToolError;
use lllm_runtime::{tool_fn, Agent, InvokeError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::test]
async fn after_halt_nothing_is_sent_and_no_tool_runs() {
    let invoker = Arc::new(ScriptedInvoker::new().reply("never"));
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let agent = Agent::builder()
        .name("a")
        .system_prompt("s")
        .model("m")
        .invoker(invoker.clone())
        .tool(tool_fn("t", "d", move |_: Nothing| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("ran")
            }
        }))
        .build()
        .expect("agent");
    agent.open("main").expect("open");
    agent.receive("hi").expect("receive");
    lllm_runtime::events::halt();
    let error = agent.respond("main").await.expect_err("halted");
    assert!(
        matches!(
            error.kind(),
            AgentErrorKind::Invoke {
                source: InvokeError::Halted,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(invoker.calls().is_empty(), "nothing reached the invoker");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        agent.dialogs().dialogs[0].dialog.len(),
        2,
        "the dialog is as it was: system prompt and the message"
    );
}
