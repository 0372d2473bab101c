use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lllm_core::{Dialog, InferenceHints, Message, ModelArgs, Profile};

use super::{CallError, Retrying, Service, TimeLimited};
use crate::endpoints::Endpoints;
use crate::invoker::{ChatRequest, ChatResponse, Delta, InvokeError, Invoker, WaitLimit};
use crate::retry::RetryPolicy;
use crate::testing::ScriptedInvoker;

fn fast(max_call_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_call_retries,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
        max_retry_after: Duration::from_millis(5),
    }
}

fn request(args: ModelArgs) -> ChatRequest {
    let hints = InferenceHints::builder()
        .profile(Profile::Vllm)
        .priority(5)
        .build()
        .expect("hints");
    let dialog = Dialog::with_system("s");
    let fields = hints.dialog_request_fields(&dialog, &args).expect("fields");
    ChatRequest::new("m", dialog.messages().clone(), Arc::new(args), fields)
}

/// The requests sent and the last failure of a call that got no answer.
fn failed(error: CallError) -> (u32, InvokeError) {
    match error {
        CallError::Invoke {
            attempts, error, ..
        } => (attempts, error),
        other => panic!("unexpected {other:?}"),
    }
}

fn unavailable() -> InvokeError {
    InvokeError::Http {
        status: http::StatusCode::SERVICE_UNAVAILABLE,
        message: "busy".into(),
        retry_after: None,
    }
}

#[tokio::test]
async fn every_retry_resends_the_same_hints_and_counts_attempts() {
    let script = ScriptedInvoker::new()
        .fail(unavailable())
        .fail(unavailable())
        .reply("ok");
    let invoker = Arc::new(script);
    let retrying = Retrying::new(invoker.clone(), fast(2), Endpoints::new());
    let answer = retrying
        .send(&request(ModelArgs::new()), None)
        .await
        .expect("answered on the third try");
    assert_eq!(answer.response.message.text(), "ok");
    let calls = invoker.calls();
    assert_eq!(calls.len(), 3);
    for call in &calls {
        assert_eq!(call.request.headers, calls[0].request.headers);
        assert_eq!(call.request.body["priority"], -5);
    }

    let exhausted = Retrying::new(
        Arc::new(
            ScriptedInvoker::new()
                .fail(unavailable())
                .fail(unavailable()),
        ),
        fast(1),
        Endpoints::new(),
    )
    .send(&request(ModelArgs::new()), None)
    .await
    .expect_err("out of retries");
    let (attempts, error) = failed(exhausted);
    assert_eq!(attempts, 2);
    assert_eq!(error.status().map(|s| s.as_u16()), Some(503));
}

/// Streams one piece, then fails as a broken connection would; counts its calls.
#[derive(Debug, Default)]
struct BreaksMidStream {
    calls: AtomicU32,
}

#[async_trait]
impl Invoker for BreaksMidStream {
    async fn invoke(&self, _: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ChatResponse::new(Message::assistant("whole")))
    }

    async fn invoke_stream(
        &self,
        _: &ChatRequest,
        on_delta: &mut (dyn for<'d> FnMut(Delta<'d>) + Send),
    ) -> Result<ChatResponse, InvokeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        on_delta(Delta::Text("half"));
        Err(unavailable())
    }
}

#[tokio::test]
async fn a_stream_that_showed_text_is_not_retried() {
    let invoker = Arc::new(BreaksMidStream::default());
    let retrying = Retrying::new(invoker.clone(), fast(3), Endpoints::new());
    let mut shown = String::new();
    let mut sink = |delta: Delta<'_>| {
        if let Delta::Text(text) = delta {
            shown.push_str(text);
        }
    };
    let err = retrying
        .send(&request(ModelArgs::new()), Some(&mut sink))
        .await
        .expect_err("broken");
    assert_eq!(failed(err).0, 1);
    assert_eq!(shown, "half");
    assert_eq!(invoker.calls.load(Ordering::SeqCst), 1);
}

/// Never answers.
#[derive(Debug)]
struct Silent;

#[async_trait]
impl Invoker for Silent {
    async fn invoke(&self, _: &ChatRequest) -> Result<ChatResponse, InvokeError> {
        futures::future::pending().await
    }
}

#[tokio::test]
async fn the_request_timeout_bounds_each_attempt() {
    let limited = TimeLimited::new(Arc::new(Silent));
    let args = ModelArgs::new().timeout(Duration::from_millis(20));
    let err = limited
        .send(&request(args), None)
        .await
        .expect_err("timed out");
    assert_eq!(
        failed(err).1,
        InvokeError::Timeout(Duration::from_millis(20))
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_the_request_may_wait_fails_at_once() {
    let asks = |secs: u64| InvokeError::Http {
        status: http::StatusCode::TOO_MANY_REQUESTS,
        message: "slow down".into(),
        retry_after: Some(Duration::from_secs(secs)),
    };
    let policy = RetryPolicy {
        max_retry_after: Duration::from_secs(60),
        ..fast(3)
    };
    let cases = [
        (
            ModelArgs::new().timeout(Duration::from_secs(5)),
            WaitLimit::Timeout,
            5,
        ),
        (
            ModelArgs::new().deadline(Duration::from_secs(2)),
            WaitLimit::Deadline,
            2,
        ),
        (ModelArgs::new(), WaitLimit::Policy, 60),
    ];
    for (args, limited_by, allowed) in cases {
        let invoker = Arc::new(ScriptedInvoker::new().fail(asks(3600)).reply("late"));
        let (attempts, error) = failed(
            Retrying::new(invoker.clone(), policy, Endpoints::new())
                .send(&request(args), None)
                .await
                .expect_err("not waited for"),
        );
        assert_eq!(invoker.calls().len(), 1, "{limited_by:?}");
        assert_eq!(attempts, 1);
        let InvokeError::RetryAfterTooLong {
            asked,
            allowed: granted,
            limited_by: by,
            status,
            ..
        } = &error
        else {
            panic!("unexpected {error:?}");
        };
        assert_eq!(
            (*status, *asked, *by),
            (
                http::StatusCode::TOO_MANY_REQUESTS,
                Duration::from_secs(3600),
                limited_by
            )
        );
        assert!(*granted <= Duration::from_secs(allowed), "{granted:?}");
        let shown = error.to_string();
        assert!(
            shown.contains("asked to wait 3600s") && shown.contains("slow down"),
            "{shown}"
        );
        assert!(!error.is_retryable());
    }
}
