//! Context compaction settings (`context:`): when a dialog's window is compacted, what stays word
//! for word, and which session the new window carries. Each setting has one rule, used alike for a
//! tactic file (read from what was written, [`Written`]) and for [`ContextPolicy::with`].

use serde::{Deserialize, Serialize};

use crate::values::{Number, ValueError, Written};

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

/// Read by the rule of a tactic file's `context.window`.
impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = Written::deserialize(deserializer)?;
        read_window(&written).map_err(|e| serde::de::Error::custom(e.problem()))
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

/// One setting of `context:`, for its rule's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ContextSetting {
    /// `window`: the model's context length in tokens, or `auto`.
    Window,
    /// `compact_at`: the fraction of the window at which a dialog is compacted.
    CompactAt,
    /// `keep_last`: messages kept word for word.
    KeepLast,
    /// `session`: `keep` or `rotate`.
    Session,
}

impl ContextSetting {
    /// Its name under `context:`.
    fn name(self) -> &'static str {
        match self {
            ContextSetting::Window => "window",
            ContextSetting::CompactAt => "compact_at",
            ContextSetting::KeepLast => "keep_last",
            ContextSetting::Session => "session",
        }
    }

    /// What it allows, for messages.
    fn allowed(self) -> String {
        match self {
            ContextSetting::Window => format!(
                "the model's context length in tokens (a whole number from 1 to {}), or `auto`",
                u32::MAX
            ),
            ContextSetting::CompactAt => {
                "a fraction of the window above 0 and at most 1 (0.8 compacts at 80 %)".into()
            }
            ContextSetting::KeepLast => {
                format!("a whole number of messages from 0 to {MAX_KEEP_LAST}")
            }
            ContextSetting::Session => "`keep` or `rotate`".into(),
        }
    }

    /// The error of `written` for this setting.
    fn refuse(self, written: String) -> ContextError {
        let allowed = self.allowed();
        let problem = match self {
            ContextSetting::Session => ValueError::Word { allowed, written },
            _ => ValueError::Number { allowed, written },
        };
        ContextError::Invalid {
            field: self.name(),
            problem,
        }
    }
}

/// Why a `context:` setting cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// A setting its rule refuses: which, and what it allows.
    #[error("context.{field}: {problem}")]
    Invalid {
        /// The setting's name under `context:` (`window`, `compact_at`, `keep_last`, `session`).
        field: &'static str,
        /// What is wrong, and what is allowed.
        problem: ValueError,
    },
}

impl ContextError {
    /// The setting's name under `context:`.
    pub fn field(&self) -> &'static str {
        match self {
            ContextError::Invalid { field, .. } => field,
        }
    }

    /// What is wrong, without the setting's name.
    pub fn problem(&self) -> &ValueError {
        match self {
            ContextError::Invalid { problem, .. } => problem,
        }
    }
}

/// `context.window` as written: a whole number of tokens from 1, or `auto`.
pub(crate) fn read_window(written: &Written) -> Result<Window, ContextError> {
    if let Written::Text(text) = written {
        if text.trim() == "auto" {
            return Ok(Window::Auto(AutoWindow::Auto));
        }
    }
    match written.number() {
        Some(Number::Whole(n)) => u32::try_from(n).ok().map(Window::Tokens),
        _ => None,
    }
    .and_then(|window| check_window(window).ok())
    .ok_or_else(|| ContextSetting::Window.refuse(written.shown()))
}

/// `context.compact_at` as written: a number above 0 and at most 1.
pub(crate) fn read_compact_at(written: &Written) -> Result<f64, ContextError> {
    match written.number() {
        Some(n) => check_compact_at(n.as_f64())
            .map_err(|_| ContextSetting::CompactAt.refuse(written.shown())),
        None => Err(ContextSetting::CompactAt.refuse(written.shown())),
    }
}

/// `context.keep_last` as written: a whole number from 0 to [`MAX_KEEP_LAST`].
pub(crate) fn read_keep_last(written: &Written) -> Result<u32, ContextError> {
    match written.number() {
        Some(Number::Whole(n)) => u32::try_from(n).ok().and_then(|n| check_keep_last(n).ok()),
        _ => None,
    }
    .ok_or_else(|| ContextSetting::KeepLast.refuse(written.shown()))
}

/// `context.session` as written: `keep` or `rotate`.
pub(crate) fn read_session(written: &Written) -> Result<SessionOnCompaction, ContextError> {
    match written {
        Written::Text(text) if text == "keep" => Ok(SessionOnCompaction::Keep),
        Written::Text(text) if text == "rotate" => Ok(SessionOnCompaction::Rotate),
        _ => Err(ContextSetting::Session.refuse(written.shown())),
    }
}

fn check_window(window: Window) -> Result<Window, ContextError> {
    match window {
        Window::Tokens(0) => Err(ContextSetting::Window.refuse("`0`".into())),
        window => Ok(window),
    }
}

fn check_compact_at(compact_at: f64) -> Result<f64, ContextError> {
    if compact_at > 0.0 && compact_at <= 1.0 {
        Ok(compact_at)
    } else {
        Err(ContextSetting::CompactAt.refuse(Written::Fraction(compact_at).shown()))
    }
}

fn check_keep_last(keep_last: u32) -> Result<u32, ContextError> {
    if keep_last <= MAX_KEEP_LAST {
        Ok(keep_last)
    } else {
        Err(ContextSetting::KeepLast.refuse(format!("`{keep_last}`")))
    }
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
        Ok(ContextPolicy {
            window: check_window(window)?,
            compact_at: check_compact_at(compact_at)?,
            keep_last: check_keep_last(keep_last)?,
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
        self.window = check_window(Window::Tokens(tokens))?;
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
            ContextPolicy::new(Window::Tokens(0)).map_err(|e| e.field()),
            Err("window")
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
