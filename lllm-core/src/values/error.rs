//! What is wrong with a value, and what is allowed instead.

/// A value its rule refuses. The message starts with what is wrong (`must be ...`, `is not ...`): the
/// caller puts the field before it (`limits.max_seconds: must be ...`, `--limit max_seconds=0:
/// max_seconds must be ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A number outside its range, or not a number at all.
    #[error("must be {allowed}, not {written}")]
    Number {
        /// What the rule allows (`a number of seconds from 0.001 to 86400 (a day)`).
        allowed: String,
        /// What was written, quoted and shortened (`` `-1` ``), or its kind (`a list`).
        written: String,
    },
    /// A word that is not one of those the value takes (or not a word at all).
    #[error("must be {allowed}, not {written}")]
    Word {
        /// The words allowed (`` `keep` or `rotate` ``).
        allowed: String,
        /// What was written, quoted and shortened, or its kind (`a list`).
        written: String,
    },
    /// Not an http or https URL the HTTP client can use. The URL is never quoted: it may carry a
    /// password or a key.
    #[error("is not a usable http(s) URL ({problem})")]
    Url {
        /// Why (`it has no host`).
        problem: String,
    },
    /// A header name that cannot be sent.
    #[error("is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)")]
    HeaderName,
    /// A header value that cannot be sent. The value is never quoted: it may be a credential.
    #[error("the value contains a control character (such as a newline) or is not visible text")]
    HeaderValue,
}
