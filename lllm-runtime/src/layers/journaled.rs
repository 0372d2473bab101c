//! Answers from the run's journal, and answers recorded into it, as a layer.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallError, DeltaSink, Reply, Service};
use crate::invoker::{ChatRequest, ChatResponse};
use crate::journal::Journal;

/// With a journal, every request of a dialog is numbered: the `n`-th request that the journal already
/// answered (before a crash or a pause) gets that answer and is never sent again; any other is sent,
/// and its answer journaled before the run builds on it. Requests that answer no dialog (Dynamo's
/// end-of-session call) pass through unjournaled.
#[derive(Debug)]
pub(crate) struct Journaled<S> {
    inner: S,
    journal: Option<Arc<Journal>>,
}

impl<S> Journaled<S> {
    pub(crate) fn new(inner: S, journal: Option<Arc<Journal>>) -> Self {
        Journaled { inner, journal }
    }
}

#[async_trait]
impl<S: Service> Service for Journaled<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        let (Some(journal), Some(dialog)) = (&self.journal, request.notes.dialog) else {
            return self.inner.send(request, sink).await;
        };
        let (n, answered) = journal.next_answer(dialog);
        if let Some(message) = answered {
            return Ok(Reply::new(ChatResponse::new(message)));
        }
        let reply = self.inner.send(request, sink).await?;
        journal
            .answered(dialog, n, &reply.response.message)
            .map_err(CallError::Journal)?;
        Ok(reply)
    }
}
