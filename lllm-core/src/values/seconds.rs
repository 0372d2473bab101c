//! The one rule of a number of seconds.

use std::time::Duration;

use super::{shown_number, ValueError, Written};

/// The range a number of seconds may take, named for the values that take it. Every number of
/// seconds lllm reads (in a tactic file, a flag, a Rust builder) is read by one of these:
///
/// - [`TOOL`](Self::TOOL): a tool call or a tool server's start.
/// - [`RUN`](Self::RUN): a model request, a respond, a whole run.
///
/// Both start at a millisecond: a shorter time is no time at all to a process or a server, and a
/// value such as `1e-300` is a typo.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SecondsRange {
    min: f64,
    max: f64,
    /// The maximum in words.
    max_words: &'static str,
}

impl SecondsRange {
    /// From 0.001 to 86400 seconds (a day): a command tool's `timeout_s`, an MCP server's
    /// `timeout_s` and `startup_timeout_s` (in a file, in [`CommandToolConfig`](crate::CommandToolConfig),
    /// in the MCP server builder's `timeout` and `startup_timeout`). Work that takes longer is a job,
    /// not a call.
    pub const TOOL: SecondsRange = SecondsRange {
        min: 0.001,
        max: 86_400.0,
        max_words: "a day",
    };

    /// From 0.001 to 1000000000 seconds (about 31 years): `model_args.timeout` and
    /// `model_args.deadline` (in a file or [`ModelArgs`](crate::ModelArgs)), and the run limit
    /// `max_seconds` (`limits:`, `--limit`, [`RunLimits`](crate::RunLimits)). The ceiling only keeps
    /// clock arithmetic from overflowing.
    pub const RUN: SecondsRange = SecondsRange {
        min: 0.001,
        max: 1e9,
        max_words: "about 31 years",
    };

    /// The fewest seconds allowed.
    pub fn min(&self) -> f64 {
        self.min
    }

    /// The most seconds allowed.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Reads `written` as a number of seconds (whole or with a fraction) within the range.
    pub fn read(&self, written: &Written) -> Result<f64, ValueError> {
        match written.number().map(|n| n.as_f64()) {
            Some(seconds) if self.contains(seconds) => Ok(seconds),
            _ => Err(self.refuse(written.shown())),
        }
    }

    /// Checks a number of seconds already read as a number (a YAML number, a Rust setting).
    pub fn check(&self, seconds: f64) -> Result<f64, ValueError> {
        if self.contains(seconds) {
            Ok(seconds)
        } else {
            Err(self.refuse(format!("`{}`", shown_number(seconds))))
        }
    }

    /// Checks a duration given in Rust.
    pub fn check_duration(&self, duration: Duration) -> Result<Duration, ValueError> {
        self.check(duration.as_secs_f64()).map(|_| duration)
    }

    /// What the range allows, for messages.
    pub fn allowed(&self) -> String {
        format!(
            "a number of seconds from {} to {} ({})",
            self.min, self.max, self.max_words
        )
    }

    fn contains(&self, seconds: f64) -> bool {
        // NaN is in no range.
        seconds >= self.min && seconds <= self.max
    }

    fn refuse(&self, written: String) -> ValueError {
        ValueError::Number {
            allowed: self.allowed(),
            written,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_range_is_inclusive_and_says_what_it_allows() {
        let tool = SecondsRange::TOOL;
        assert_eq!(tool.check(0.001), Ok(0.001));
        assert_eq!(tool.check(86_400.0), Ok(86_400.0));
        for bad in [0.0, -1.0, 0.0009, 86_400.5, f64::NAN, f64::INFINITY, 1e-300] {
            assert!(tool.check(bad).is_err(), "{bad}");
        }
        assert_eq!(
            tool.check(0.0).expect_err("0 s").to_string(),
            "must be a number of seconds from 0.001 to 86400 (a day), not `0`"
        );
        assert_eq!(
            SecondsRange::RUN
                .read(&"1e-300".into())
                .expect_err("below a millisecond")
                .to_string(),
            "must be a number of seconds from 0.001 to 1000000000 (about 31 years), not `1e-300`"
        );
        assert_eq!(SecondsRange::RUN.read(&Written::Whole(5)), Ok(5.0));
        assert_eq!(SecondsRange::RUN.read(&" 0.5 ".into()), Ok(0.5));
        assert!(SecondsRange::RUN.read(&"soon".into()).is_err());
        assert!(SecondsRange::RUN
            .check_duration(Duration::from_secs(u64::MAX))
            .is_err());
        assert!(SecondsRange::RUN.check_duration(Duration::ZERO).is_err());
    }
}
