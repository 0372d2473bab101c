//! Limits of one run (`limits:` in a tactic file).

/// Limits of one run; `None` is no limit. Reaching one stops the run.
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

impl RunLimits {
    /// The names `limits:` and `--limit` take.
    pub const NAMES: [&'static str; 4] = [
        "max_requests",
        "max_total_tokens",
        "max_tool_calls",
        "max_seconds",
    ];

    /// Sets the limit `name` from `value` (as `--limit KEY=VALUE` gives it).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let whole = || {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("`{value}` is not a whole number for {name}"))
        };
        match name {
            "max_requests" => self.max_requests = Some(whole()?),
            "max_total_tokens" => self.max_total_tokens = Some(whole()?),
            "max_tool_calls" => self.max_tool_calls = Some(whole()?),
            "max_seconds" => {
                let seconds: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("`{value}` is not a number of seconds above 0"))?;
                self.max_seconds = Some(seconds);
            }
            other => {
                return Err(format!(
                    "unknown limit `{other}`; the limits are {}",
                    Self::NAMES.join(", ")
                ))
            }
        }
        Ok(())
    }
}
