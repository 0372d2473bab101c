//! The run's limits, as a layer.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallError, DeltaSink, Reply, Service};
use crate::budget::RunBudget;
use crate::invoker::ChatRequest;

/// Counts every call against the run's [`RunBudget`] before it goes on, and the tokens of its answer
/// after: a limit reached fails the call with [`CallError::Limit`] before anything is sent, and
/// `max_seconds` stops a request still unanswered when the run's time is up.
#[derive(Debug)]
pub(crate) struct Budgeted<S> {
    inner: S,
    budget: Option<Arc<RunBudget>>,
}

impl<S> Budgeted<S> {
    pub(crate) fn new(inner: S, budget: Option<Arc<RunBudget>>) -> Self {
        Budgeted { inner, budget }
    }
}

#[async_trait]
impl<S: Service> Service for Budgeted<S> {
    async fn send(
        &self,
        request: &ChatRequest,
        sink: Option<&mut DeltaSink<'_>>,
    ) -> Result<Reply, CallError> {
        let Some(budget) = &self.budget else {
            return self.inner.send(request, sink).await;
        };
        budget.request().map_err(CallError::Limit)?;
        // A request still unanswered when the run's time is up (a server that never answers a
        // child) is dropped there, so `max_seconds` bounds the run and not just its next step.
        let reply = budget
            .within(self.inner.send(request, sink))
            .await
            .map_err(CallError::Limit)??;
        budget.answered(reply.response.message.usage.as_ref());
        Ok(reply)
    }
}
