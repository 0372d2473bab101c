//! Limits of one run (`limits:` in a tactic file, `--limit KEY=VALUE` on the command line), read by
//! one parser for both.

use crate::values::{Number, SecondsRange, ValueError, Written};

/// Limits of one run; `None` is no limit. Reaching one stops the run.
///
/// The counts are whole numbers from 0 to `u64::MAX`; 0 allows none (`max_tool_calls: 0` runs no tool
/// call). `max_seconds` is a number of seconds in [`SecondsRange::RUN`]. A tactic file's `limits:` and
/// `--limit KEY=VALUE` are both read by [`set_limit`](Self::set_limit), so a value means the same
/// thing in either.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunLimits {
    /// Most model requests sent.
    pub max_requests: Option<u64>,
    /// Most tokens (prompt and completion) of all answers together.
    pub max_total_tokens: Option<u64>,
    /// Most tool calls run.
    pub max_tool_calls: Option<u64>,
    /// Most seconds the run may take.
    pub max_seconds: Option<f64>,
}

/// One limit of [`RunLimits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `max_requests`.
    MaxRequests,
    /// `max_total_tokens`.
    MaxTotalTokens,
    /// `max_tool_calls`.
    MaxToolCalls,
    /// `max_seconds`.
    MaxSeconds,
}

impl Limit {
    /// Every limit, in the order of [`RunLimits::NAMES`].
    pub const ALL: [Limit; 4] = [
        Limit::MaxRequests,
        Limit::MaxTotalTokens,
        Limit::MaxToolCalls,
        Limit::MaxSeconds,
    ];

    /// Its name in `limits:` and `--limit`.
    pub fn name(self) -> &'static str {
        match self {
            Limit::MaxRequests => "max_requests",
            Limit::MaxTotalTokens => "max_total_tokens",
            Limit::MaxToolCalls => "max_tool_calls",
            Limit::MaxSeconds => "max_seconds",
        }
    }

    /// The limit called `name`.
    pub fn named(name: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// A limit setting (`--limit KEY=VALUE`, a journal's `limits`) that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// No limit has this name.
    #[error("unknown limit `{name}`; the limits are {}", RunLimits::NAMES.join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// The value is not one the limit takes.
    #[error("{name} {problem}")]
    Invalid {
        /// The limit.
        name: &'static str,
        /// What is wrong, and what is allowed.
        problem: ValueError,
    },
    /// Not `KEY=VALUE`.
    #[error("{written} is not KEY=VALUE: write a limit and its value, such as max_requests=5")]
    NotKeyValue {
        /// What was written, quoted and shortened.
        written: String,
    },
}

/// One limit with its value, read by its rule (the value of [`LimitSetting`](crate::LimitSetting)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SetLimit {
    /// `max_requests`.
    Requests(u64),
    /// `max_total_tokens`.
    TotalTokens(u64),
    /// `max_tool_calls`.
    ToolCalls(u64),
    /// `max_seconds`, within [`SecondsRange::RUN`].
    Seconds(f64),
}

impl SetLimit {
    /// `limit` set to `value` as written: the one rule of every limit.
    pub(crate) fn read(limit: Limit, value: &Written) -> Result<SetLimit, ValueError> {
        let count = || {
            match value.number() {
                Some(Number::Whole(n)) => u64::try_from(n).ok(),
                _ => None,
            }
            .ok_or_else(|| ValueError::Number {
                allowed: COUNT_ALLOWED.to_owned(),
                written: value.shown(),
            })
        };
        Ok(match limit {
            Limit::MaxRequests => SetLimit::Requests(count()?),
            Limit::MaxTotalTokens => SetLimit::TotalTokens(count()?),
            Limit::MaxToolCalls => SetLimit::ToolCalls(count()?),
            Limit::MaxSeconds => SetLimit::Seconds(SecondsRange::RUN.read(value)?),
        })
    }

    /// The limit set.
    pub(crate) fn limit(self) -> Limit {
        match self {
            SetLimit::Requests(_) => Limit::MaxRequests,
            SetLimit::TotalTokens(_) => Limit::MaxTotalTokens,
            SetLimit::ToolCalls(_) => Limit::MaxToolCalls,
            SetLimit::Seconds(_) => Limit::MaxSeconds,
        }
    }

    /// Sets it in `limits`.
    pub(crate) fn apply(self, limits: &mut RunLimits) {
        match self {
            SetLimit::Requests(n) => limits.max_requests = Some(n),
            SetLimit::TotalTokens(n) => limits.max_total_tokens = Some(n),
            SetLimit::ToolCalls(n) => limits.max_tool_calls = Some(n),
            SetLimit::Seconds(s) => limits.max_seconds = Some(s),
        }
    }
}

/// What a count allows, for messages.
const COUNT_ALLOWED: &str = "a whole number from 0 to 18446744073709551615 (0 allows none)";

impl RunLimits {
    /// The names `limits:` and `--limit` take.
    pub const NAMES: [&'static str; 4] = [
        "max_requests",
        "max_total_tokens",
        "max_tool_calls",
        "max_seconds",
    ];

    /// Sets `limit` from `value` as written in a tactic file or on the command line: the one parser
    /// of every limit. A count takes a whole number from 0 to `u64::MAX` (0 allows none; a fraction,
    /// a negative or a larger number is refused); `max_seconds` a number in [`SecondsRange::RUN`].
    pub fn set_limit(&mut self, limit: Limit, value: &Written) -> Result<(), ValueError> {
        SetLimit::read(limit, value)?.apply(self);
        Ok(())
    }

    /// Checks limits built in Rust by the same rules (`max_seconds` within [`SecondsRange::RUN`];
    /// every count is valid).
    pub fn check(&self) -> Result<(), LimitError> {
        match self.max_seconds.map(|s| SecondsRange::RUN.check(s)) {
            Some(Err(problem)) => Err(LimitError::Invalid {
                name: Limit::MaxSeconds.name(),
                problem,
            }),
            _ => Ok(()),
        }
    }
}
