//! What a server asks during a tool call (sampling), routed to the call that is running: each call
//! opens a channel here while it runs, and the server's request goes to the call of its dialog.
//! Per server, never global: the calling dialog travels with the call (its `ToolContext`).

#![allow(deprecated)] // Sampling is deprecated by SEP-2577 in rmcp, and still what servers send.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lllm_core::DialogId;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData,
};
use tokio::sync::{mpsc, oneshot};

/// Requests of a server waiting at one call at a time.
const ASKS_QUEUED: usize = 4;

/// A server's request, handed to the call it belongs to, with where its answer goes.
pub(crate) enum Ask {
    /// `sampling/createMessage`.
    Sample {
        params: CreateMessageRequestParams,
        reply: oneshot::Sender<Result<CreateMessageResult, ErrorData>>,
    },
    /// `elicitation/create`.
    Elicit {
        params: ElicitRequestParams,
        reply: oneshot::Sender<Result<ElicitResult, ErrorData>>,
    },
}

/// The tool calls of one server that are running, each with the dialog that made it.
#[derive(Debug, Default)]
pub(crate) struct OpenCalls {
    next: AtomicU64,
    open: Mutex<Vec<OpenCall>>,
}

#[derive(Debug)]
struct OpenCall {
    id: u64,
    dialog: Option<DialogId>,
    asks: mpsc::Sender<Ask>,
}

/// A running call's place in [`OpenCalls`], given up when the call ends (or is dropped).
pub(crate) struct CallGuard {
    calls: Arc<OpenCalls>,
    id: u64,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.calls.lock().retain(|c| c.id != self.id);
    }
}

impl OpenCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<OpenCall>> {
        // Every update is one push or retain: a poisoned list is whole.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a call made by `dialog`; what the server asks for it arrives on the receiver.
    pub(crate) fn open(
        self: &Arc<Self>,
        dialog: Option<DialogId>,
    ) -> (CallGuard, mpsc::Receiver<Ask>) {
        let (asks, receiver) = mpsc::channel(ASKS_QUEUED);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push(OpenCall { id, dialog, asks });
        let guard = CallGuard {
            calls: self.clone(),
            id,
        };
        (guard, receiver)
    }

    /// The call a server's request belongs to. MCP does not say which call a request is for
    /// (stdio carries no link), so it must be unambiguous: every running call of this server
    /// comes from one dialog. Otherwise the request is refused, never given to a guessed dialog.
    pub(crate) fn route(&self) -> Result<mpsc::Sender<Ask>, ErrorData> {
        let open = self.lock();
        let Some(first) = open.first() else {
            return Err(ErrorData::invalid_request(
                "lllm answers this request only during one of this server's tool calls",
                None,
            ));
        };
        let one_dialog = first.dialog.is_some() && open.iter().all(|c| c.dialog == first.dialog);
        if !one_dialog {
            return Err(ErrorData::invalid_request(
                "calls of several dialogs are running on this server, and the request does not say which one it belongs to",
                None,
            ));
        }
        Ok(first.asks.clone())
    }

    /// Hands a sampling request to its call and waits for the answer.
    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asks = self.route()?;
        let (reply, answer) = oneshot::channel();
        let gone = || ErrorData::internal_error("the tool call ended before an answer", None);
        asks.send(Ask::Sample { params, reply })
            .await
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Hands a question for the user to its call and waits for the answer. A question that
    /// belongs to no call of one dialog is declined: nobody can be asked for it.
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let declined = || Ok(ElicitResult::new(ElicitationAction::Decline));
        let Ok(asks) = self.route() else {
            return declined();
        };
        let (reply, answer) = oneshot::channel();
        if asks.send(Ask::Elicit { params, reply }).await.is_err() {
            return declined();
        }
        answer.await.unwrap_or_else(|_| declined())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_goes_only_to_the_one_dialog_running_calls() {
        let calls = Arc::new(OpenCalls::default());
        assert!(calls.route().is_err(), "no call: refused");
        let a = DialogId::new();
        let (first, _r1) = calls.open(Some(a));
        let (second, _r2) = calls.open(Some(a));
        assert!(calls.route().is_ok(), "two calls of one dialog");
        let (other, _r3) = calls.open(Some(DialogId::new()));
        assert!(calls.route().is_err(), "two dialogs: refused");
        drop(other);
        drop(first);
        assert!(calls.route().is_ok());
        drop(second);
        assert!(calls.route().is_err());
        let (_anonymous, _r4) = calls.open(None);
        assert!(calls.route().is_err(), "a call without a dialog");
    }
}
