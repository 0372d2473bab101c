//! Context compaction settings (`context:`): when a dialog's window is compacted, what stays word
//! for word, and which session the new window carries.

use serde::{Deserialize, Serialize};

/// Default fraction of the window at which a dialog is compacted.
pub const DEFAULT_COMPACT_AT: f64 = 0.8;
/// Default number of messages kept word for word at the tail of a compacted window.
pub const DEFAULT_KEEP_LAST: u32 = 6;
/// The most messages `keep_last` may keep.
pub const MAX_KEEP_LAST: u32 = 10_000;

/// The model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Window {
    /// This many tokens.
    Tokens(u32),
    /// Read from the server's `/v1/models` (`max_model_len` and its kin) before the first request.
    Auto(AutoWindow),
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Tokens;
        impl serde::de::Visitor<'_> for Tokens {
            type Value = Window;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the model's context length in tokens (a whole number), or `auto`")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Window, E> {
                u32::try_from(v).map(Window::Tokens).map_err(|_| {
                    E::custom(format!(
                        "{v} tokens is more than a window can be (at most {})",
                        u32::MAX
                    ))
                })
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Window, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v} is not a number of tokens")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Window, E> {
                match v {
                    "auto" => Ok(Window::Auto(AutoWindow::Auto)),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Tokens)
    }
}

/// The word `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AutoWindow {
    /// `auto`.
    Auto,
}

/// Which session a compacted window's requests carry.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SessionOnCompaction {
    /// The old window's session id: the router keeps the dialog on its worker, which holds the
    /// system prompt's blocks (the default).
    #[default]
    Keep,
    /// A session of its own, naming the old window's as its parent.
    Rotate,
}

/// When and how an agent's dialogs are compacted, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextPolicy {
    window: Window,
    compact_at: f64,
    keep_last: u32,
    session: SessionOnCompaction,
}

/// Why a `context:` setting cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// `compact_at` is not a fraction.
    #[error("context.compact_at: {0} is not a fraction of the window: use a number above 0 and at most 1 (0.8 compacts at 80 %)")]
    CompactAt(f64),
    /// `window` is 0.
    #[error("context.window: 0 tokens is no window: give the model's context length in tokens, or `auto`")]
    ZeroWindow,
    /// `keep_last` is too large.
    #[error("context.keep_last: {0} is more than {MAX_KEEP_LAST} messages")]
    KeepLast(u32),
}

impl ContextPolicy {
    /// A policy for a window of `window` tokens, compacting at 80 %, keeping the last 6 messages and
    /// the session.
    pub fn new(window: Window) -> Result<Self, ContextError> {
        Self::with(
            window,
            DEFAULT_COMPACT_AT,
            DEFAULT_KEEP_LAST,
            SessionOnCompaction::Keep,
        )
    }

    /// A policy with every setting given.
    pub fn with(
        window: Window,
        compact_at: f64,
        keep_last: u32,
        session: SessionOnCompaction,
    ) -> Result<Self, ContextError> {
        if !(compact_at > 0.0 && compact_at <= 1.0) {
            return Err(ContextError::CompactAt(compact_at));
        }
        if window == Window::Tokens(0) {
            return Err(ContextError::ZeroWindow);
        }
        if keep_last > MAX_KEEP_LAST {
            return Err(ContextError::KeepLast(keep_last));
        }
        Ok(ContextPolicy {
            window,
            compact_at,
            keep_last,
            session,
        })
    }

    /// The window setting.
    pub fn window(&self) -> Window {
        self.window
    }

    /// The fraction of the window at which a dialog is compacted.
    pub fn compact_at(&self) -> f64 {
        self.compact_at
    }

    /// Messages kept word for word at the tail (a tool call and its results count together).
    pub fn keep_last(&self) -> u32 {
        self.keep_last
    }

    /// Which session the new window carries.
    pub fn session(&self) -> SessionOnCompaction {
        self.session
    }

    /// The same policy with the window's size known (`auto` resolved).
    pub fn with_window(mut self, tokens: u32) -> Result<Self, ContextError> {
        if tokens == 0 {
            return Err(ContextError::ZeroWindow);
        }
        self.window = Window::Tokens(tokens);
        Ok(self)
    }

    /// The prompt size past which a dialog is compacted, when the window is known.
    pub fn threshold(&self) -> Option<u64> {
        match self.window {
            Window::Tokens(tokens) => Some((f64::from(tokens) * self.compact_at).floor() as u64),
            Window::Auto(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_the_fraction_of_the_window() {
        let policy = ContextPolicy::new(Window::Tokens(1000)).expect("valid");
        assert_eq!(policy.threshold(), Some(800));
        assert_eq!(policy.keep_last(), DEFAULT_KEEP_LAST);
        let auto = ContextPolicy::new(Window::Auto(AutoWindow::Auto)).expect("valid");
        assert_eq!(auto.threshold(), None);
        assert_eq!(auto.with_window(100).expect("known").threshold(), Some(80));
    }

    #[test]
    fn settings_out_of_range_are_refused() {
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            assert!(
                ContextPolicy::with(Window::Tokens(10), bad, 1, SessionOnCompaction::Keep).is_err()
            );
        }
        assert_eq!(
            ContextPolicy::new(Window::Tokens(0)),
            Err(ContextError::ZeroWindow)
        );
        assert!(ContextPolicy::with(
            Window::Tokens(9),
            0.5,
            MAX_KEEP_LAST + 1,
            SessionOnCompaction::Keep
        )
        .is_err());
    }
}
