//! The move of a call to its next endpoint (the agent's own, then `model_args.fallback`), as a
//! retry policy that rewrites the request.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use super::policy::{Failure, Policy, Retry};
use crate::endpoints::{Admit, Endpoint, Endpoints};
use crate::invoker::{ChatRequest, InvokeError};

/// One call's endpoints, their circuits, and the one it is at. An overloaded, unreachable or slow
/// endpoint, or one that asks (`Retry-After`) for a longer wait than the call may take, sends the
/// call on at once to the next endpoint whose circuit lets it through.
#[derive(Debug)]
pub(crate) struct FallbackHop<'r> {
    /// The call as the agent asked it: each endpoint's request is made from it.
    request: &'r ChatRequest,
    endpoints: Vec<Arc<Endpoint>>,
    at: usize,
}

impl<'r> FallbackHop<'r> {
    pub(crate) fn new(request: &'r ChatRequest, endpoints: &Endpoints) -> Self {
        let bases = request
            .model_args
            .endpoints()
            .map(|e| e.api_base.as_deref());
        FallbackHop {
            request,
            endpoints: bases.map(|base| endpoints.endpoint(base)).collect(),
            at: 0,
        }
    }

    /// The request to send first: to the first endpoint whose circuit lets a request through;
    /// when every circuit is open, the one that reopens first. A lone endpoint is always tried.
    pub(crate) fn first(&mut self) -> Cow<'r, ChatRequest> {
        let reopening_first = || {
            (0..self.endpoints.len())
                .min_by_key(|&i| self.endpoints[i].breaker.is_open())
                .unwrap_or(0)
        };
        let at = match self.endpoints.len() {
            1 => 0,
            _ => self.first_from(0).unwrap_or_else(reopening_first),
        };
        self.move_to(at, 0)
    }

    fn first_from(&self, from: usize) -> Option<usize> {
        (from..self.endpoints.len())
            .find(|&i| !matches!(self.endpoints[i].breaker.admit(), Admit::Open(_)))
    }

    /// The request as sent to endpoint `at`, the call's `retry`-th retry.
    fn move_to(&mut self, at: usize, retry: u32) -> Cow<'r, ChatRequest> {
        let moved = u32::try_from(at.saturating_sub(self.at)).unwrap_or(u32::MAX);
        self.at = at;
        match at.checked_sub(1).and_then(|i| self.request.on_fallback(i)) {
            Some(mut request) => {
                (request.notes.moved, request.notes.retry) = (moved, retry);
                Cow::Owned(request)
            }
            None => Cow::Borrowed(self.request),
        }
    }
}

impl Policy for FallbackHop<'_> {
    fn retry(&mut self, failure: &Failure<'_>) -> Option<Retry> {
        if !moves_on(failure.error, failure.wait_too_long) {
            return None;
        }
        let (from, error) = (self.at, failure.error);
        let next = self.first_from(from + 1)?;
        tracing::warn!(from, to = next, %error, "model call failed; trying the next endpoint");
        let request = self.move_to(next, failure.request.notes.retry).into_owned();
        let wait = Duration::ZERO;
        Some(Retry { request, wait })
    }
}

/// Whether `error` sends the call on to the next endpoint: an overload (503, 529), no connection,
/// no answer in time, or a rate limit whose wait is longer than the call may wait
/// (`wait_too_long`). Never another client error (authentication, validation, content).
fn moves_on(error: &InvokeError, wait_too_long: bool) -> bool {
    match error {
        InvokeError::Http { status, .. } if matches!(status.as_u16(), 503 | 529) => true,
        InvokeError::Http { status, .. } if status.as_u16() == 429 => wait_too_long,
        InvokeError::Connection { .. } | InvokeError::Timeout(_) => true,
        _ => false,
    }
}
