//! The run events' wire, pinned byte for byte: every kind of event, every status and outcome, text
//! that needs escaping, calls without usage, and labels long enough to be cut.

use std::convert::Infallible;
use std::time::{Duration, UNIX_EPOCH};

use axum::response::sse::Sse;
use axum::response::IntoResponse;
use lllm_core::{DialogId, ToolCall, Usage};

use super::run_event;
use crate::engine::StreamedEvent;
use crate::events::{ModelCall, RunEvent, RunStatus, StepOutcome};

/// The wire as it must stay: a change to it is a change to every client of the events.
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/run_events.sse");

fn dialog(hex: &str) -> DialogId {
    hex.parse().expect("a dialog id")
}

fn model_call() -> ModelCall {
    ModelCall {
        agent: "reviewer".into(),
        alias: Some("main".into()),
        dialog: Some(dialog("0123456789abcdef0123456789abcdef")),
        parent_dialog: Some(dialog("fedcba9876543210fedcba9876543210")),
        session: Some("conv-1".into()),
        parent_session: Some("conv-0".into()),
        priority: Some(-5),
        tier: 2,
        usage: Some(Usage {
            prompt_tokens: 120,
            completion_tokens: 7,
            cached_tokens: Some(96),
        }),
        worker: Some("worker-3".into()),
        hop: 1,
        window: 2,
        queue_wait: Duration::from_micros(3_999),
        took: Duration::from_millis(1_234),
        at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_999),
    }
}

fn events() -> Vec<RunEvent> {
    let mut events: Vec<RunEvent> = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::RequiresAction,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ]
    .into_iter()
    .map(RunEvent::Status)
    .collect();
    events.push(RunEvent::StepStarted {
        step: "steps[2].parallel[1]".into(),
        agent: "reviewer".into(),
        dialog: "main".into(),
    });
    for (outcome, took) in [
        (StepOutcome::Finished, Duration::from_millis(1_500)),
        (StepOutcome::Failed, Duration::from_micros(999)),
        (StepOutcome::Cancelled, Duration::ZERO),
    ] {
        events.push(RunEvent::StepEnded {
            step: "steps[0]".into(),
            agent: "reviewer".into(),
            dialog: "main".into(),
            outcome,
            took,
        });
    }
    events.push(RunEvent::Text {
        agent: "reviewer".into(),
        text: "line \"one\"\nline two: ü <b>&</b>".into(),
    });
    events.push(RunEvent::ToolCall {
        agent: "reviewer".into(),
        call: ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path": "a.txt"}"#.into(),
        },
    });
    events.push(RunEvent::Compacted {
        agent: "reviewer".into(),
        dialog: "main".into(),
        tokens_before: 7_000,
    });
    events.push(RunEvent::ModelCall(Box::new(model_call())));
    let bare = ModelCall {
        alias: None,
        dialog: None,
        parent_dialog: None,
        session: None,
        parent_session: None,
        priority: None,
        tier: 0,
        usage: Some(Usage {
            prompt_tokens: 1,
            completion_tokens: 2,
            cached_tokens: None,
        }),
        worker: None,
        hop: 0,
        window: 0,
        ..model_call()
    };
    events.push(RunEvent::ModelCall(Box::new(bare.clone())));
    events.push(RunEvent::ModelCall(Box::new(ModelCall {
        usage: None,
        ..bare
    })));
    // Labels a hostile client (its session id) or server (its worker's name) chose are cut.
    events.push(RunEvent::ModelCall(Box::new(ModelCall {
        agent: "a".repeat(201),
        session: Some("s".repeat(300)),
        worker: Some("é".repeat(250)),
        ..model_call()
    })));
    for is_error in [false, true] {
        events.push(RunEvent::ToolResult {
            agent: "reviewer".into(),
            call_id: "call_1".into(),
            tool: "read_file".into(),
            content: "no such file: a.txt".into(),
            is_error,
        });
    }
    events
}

/// The events as a client of `/v1/runs/{id}/events` reads them, numbered after `base`.
async fn wire(base: u64) -> String {
    let sent: Vec<Result<_, Infallible>> = events()
        .into_iter()
        .zip(1..)
        .map(|(event, id)| Ok(run_event(base, &StreamedEvent { id, event })))
        .collect();
    let body = Sse::new(futures::stream::iter(sent))
        .into_response()
        .into_body();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("the stream's bytes");
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

#[tokio::test]
async fn the_run_events_on_the_wire_match_the_golden_file() {
    let wire = wire(10).await;
    let golden = std::fs::read_to_string(GOLDEN).expect("the golden file");
    assert!(
        wire == golden,
        "the run events' wire changed; diff against {GOLDEN}:\n{wire}"
    );
}
