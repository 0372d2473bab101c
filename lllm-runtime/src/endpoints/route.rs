//! The endpoints one call may go to, in order (the agent's own, then `model_args.fallback`), and
//! what their circuits allow.

use std::borrow::Cow;
use std::sync::Arc;

use http::StatusCode;

use super::{endpoint, Admit, Endpoint};
use crate::invoker::{ChatRequest, InvokeError};

/// One call's endpoints and their shared state.
#[derive(Debug)]
pub(crate) struct Route<'r> {
    request: &'r ChatRequest,
    endpoints: Vec<Arc<Endpoint>>,
}

impl<'r> Route<'r> {
    pub(crate) fn new(request: &'r ChatRequest) -> Self {
        let args = &request.model_args;
        let bases = std::iter::once(args.api_base.as_deref())
            .chain(args.fallback.iter().map(|f| f.args.api_base.as_deref()));
        Route {
            request,
            endpoints: bases.map(endpoint).collect(),
        }
    }

    /// The endpoint to try first: the first whose circuit lets a request through; when every
    /// circuit is open, the one that reopens first. A lone endpoint is always tried.
    pub(crate) fn start(&self) -> usize {
        if self.endpoints.len() == 1 {
            return 0;
        }
        self.first_from(0).unwrap_or_else(|| self.reopening_first())
    }

    /// The next endpoint after `at` whose circuit lets a request through.
    pub(crate) fn next(&self, at: usize) -> Option<usize> {
        self.first_from(at + 1)
    }

    fn first_from(&self, from: usize) -> Option<usize> {
        (from..self.endpoints.len())
            .find(|&i| !matches!(self.endpoints[i].breaker.admit(), Admit::Open(_)))
    }

    fn reopening_first(&self) -> usize {
        (0..self.endpoints.len())
            .min_by_key(|&i| self.endpoints[i].breaker.is_open())
            .unwrap_or(0)
    }

    /// The request as sent to endpoint `at`.
    pub(crate) fn request(&self, at: usize) -> Cow<'r, ChatRequest> {
        match at.checked_sub(1).and_then(|i| self.request.on_fallback(i)) {
            Some(request) => Cow::Owned(request),
            None => Cow::Borrowed(self.request),
        }
    }

    /// Endpoint `at` answered.
    pub(crate) fn answered(&self, at: usize) {
        if let Some(endpoint) = self.endpoints.get(at) {
            endpoint.breaker.answered();
        }
    }

    /// Endpoint `at` failed with `error`: a failure of the endpoint (overloaded, unreachable, too
    /// slow, rate-limited) counts towards its circuit; a refusal of the request (4xx) shows that
    /// the endpoint is up.
    pub(crate) fn failed(&self, at: usize, error: &InvokeError) {
        let Some(endpoint) = self.endpoints.get(at) else {
            return;
        };
        match error {
            e if e.is_retryable() => endpoint.breaker.failed(e.retry_after()),
            InvokeError::Http { .. } => endpoint.breaker.answered(),
            _ => {}
        }
    }
}

/// Whether `error` sends the call on to the next endpoint: an overload (503, 529), no connection,
/// no answer in time, or a rate limit whose wait is longer than the call may wait
/// (`wait_too_long`). Never another client error (authentication, validation, content).
pub(crate) fn moves_on(error: &InvokeError, wait_too_long: bool) -> bool {
    match error {
        InvokeError::Http { status, .. } if matches!(status.as_u16(), 503 | 529) => true,
        InvokeError::Http { status, .. } if *status == StatusCode::TOO_MANY_REQUESTS => {
            wait_too_long
        }
        InvokeError::Connection { .. } | InvokeError::Timeout(_) => true,
        _ => false,
    }
}
