//! Turning an error and its causes into one line.

use std::error::Error;

/// The error's message followed by each cause's, joined by `: ` (as `anyhow`'s `{:#}` prints them).
pub fn full_message(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
