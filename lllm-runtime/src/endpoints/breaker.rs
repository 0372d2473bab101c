//! A circuit breaker per endpoint: after consecutive failures the endpoint is skipped for a
//! cooldown (or the `Retry-After` it sent, if longer), then tried again with one request.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Consecutive failures that open the circuit.
pub(crate) const FAILURES_TO_OPEN: u32 = 3;
/// How long an open circuit skips its endpoint, unless the endpoint asked for longer.
pub(crate) const COOLDOWN: Duration = Duration::from_secs(30);
/// The longest an endpoint is skipped, whatever it asked for.
pub(crate) const MAX_COOLDOWN: Duration = Duration::from_secs(600);

/// Whether a request may go to the endpoint now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// The circuit is closed.
    Closed,
    /// The cooldown is over: this request is the one probe; others skip the endpoint until it is
    /// answered (or for another cooldown, if it never is).
    Probe,
    /// Skipped until then.
    Open(Instant),
}

#[derive(Debug, Default)]
struct State {
    failures: u32,
    open_until: Option<Instant>,
}

/// One endpoint's circuit.
#[derive(Debug, Default)]
pub(crate) struct Breaker {
    state: Mutex<State>,
}

impl Breaker {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a request may go now. Granting a probe starts another cooldown, so that only one
    /// request at a time finds out whether the endpoint is back.
    pub(crate) fn admit(&self) -> Admit {
        let mut state = self.state();
        match state.open_until {
            None => Admit::Closed,
            Some(until) if Instant::now() < until => Admit::Open(until),
            Some(_) => {
                state.open_until = Some(Instant::now() + COOLDOWN);
                Admit::Probe
            }
        }
    }

    /// Whether the circuit is open now (without taking a probe).
    pub(crate) fn is_open(&self) -> Option<Instant> {
        self.state()
            .open_until
            .filter(|until| Instant::now() < *until)
    }

    /// The endpoint answered (an answer, or an error that is the request's fault, not the
    /// endpoint's): the circuit closes.
    pub(crate) fn answered(&self) {
        let mut state = self.state();
        state.failures = 0;
        state.open_until = None;
    }

    /// The endpoint failed (overloaded, unreachable, too slow, rate-limited); `retry_after` is
    /// what it asked for. Opens the circuit at the threshold, or again after a failed probe.
    pub(crate) fn failed(&self, retry_after: Option<Duration>) {
        let mut state = self.state();
        state.failures = state.failures.saturating_add(1);
        if state.failures >= FAILURES_TO_OPEN {
            let wait = retry_after
                .unwrap_or(COOLDOWN)
                .clamp(COOLDOWN, MAX_COOLDOWN);
            let until = Instant::now() + wait;
            // A shorter wait never cuts a longer one the endpoint asked for.
            state.open_until = Some(state.open_until.map_or(until, |open| open.max(until)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn opens_after_consecutive_failures_then_lets_one_probe_through() {
        let breaker = Breaker::default();
        for _ in 0..FAILURES_TO_OPEN - 1 {
            breaker.failed(None);
            assert_eq!(breaker.admit(), Admit::Closed);
        }
        breaker.answered();
        for _ in 0..FAILURES_TO_OPEN {
            breaker.failed(None);
        }
        assert!(matches!(breaker.admit(), Admit::Open(_)));
        tokio::time::advance(COOLDOWN).await;
        assert_eq!(breaker.admit(), Admit::Probe);
        assert!(
            matches!(breaker.admit(), Admit::Open(_)),
            "one probe at a time"
        );
        // The probe fails: open again; an asked-for wait longer than the cooldown is kept.
        breaker.failed(Some(Duration::from_secs(120)));
        tokio::time::advance(COOLDOWN).await;
        assert!(matches!(breaker.admit(), Admit::Open(_)));
        tokio::time::advance(Duration::from_secs(90)).await;
        assert_eq!(breaker.admit(), Admit::Probe);
        breaker.answered();
        assert_eq!(breaker.admit(), Admit::Closed);
        assert_eq!(breaker.is_open(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_failure_never_shortens_a_longer_wait() {
        let breaker = Breaker::default();
        for _ in 0..FAILURES_TO_OPEN {
            breaker.failed(Some(Duration::from_secs(300)));
        }
        breaker.failed(None);
        tokio::time::advance(COOLDOWN * 2).await;
        assert!(matches!(breaker.admit(), Admit::Open(_)), "still the 300 s");
    }

    #[tokio::test(start_paused = true)]
    async fn an_endpoint_is_never_skipped_for_longer_than_the_cap() {
        let breaker = Breaker::default();
        for _ in 0..FAILURES_TO_OPEN {
            breaker.failed(Some(Duration::from_secs(86_400)));
        }
        tokio::time::advance(MAX_COOLDOWN).await;
        assert_eq!(breaker.admit(), Admit::Probe);
    }
}
