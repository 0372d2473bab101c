//! Typed errors of model calls.

use std::time::Duration;

/// A model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvokeError {
    /// The server answered with an error status.
    #[error("the server answered HTTP {status}: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The server's message (from its JSON error, else its text, shortened).
        message: String,
        /// How long the server asked to wait (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// No answer: the connection failed or broke.
    #[error("cannot reach the server at {url}: {message}")]
    Connection {
        /// Where the request went.
        url: String,
        /// What failed.
        message: String,
    },
    /// No answer within the per-request timeout.
    #[error("no answer within {0:?} (raise model_args.timeout if the model needs longer)")]
    Timeout(Duration),
    /// The server answered 2xx with something that is not a chat completion.
    #[error("the server's answer is not a chat completion: {problem}")]
    InvalidResponse {
        /// What is wrong with it (a short excerpt at most).
        problem: String,
    },
    /// A header of the request cannot be sent. Its value is not shown: it may be a credential.
    #[error("the header `{name}` cannot be sent: its name or value is not valid HTTP")]
    InvalidHeader {
        /// The header's name.
        name: String,
    },
    /// The client library could not build or send the request.
    #[error("cannot build the request: {problem}")]
    Request {
        /// What failed.
        problem: String,
    },
}

impl InvokeError {
    /// Whether trying again may help: 408, 409, 429, 5xx, connection failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            InvokeError::Http { status, .. } => {
                matches!(status, 408 | 409 | 429) || (500..=599).contains(status)
            }
            InvokeError::Connection { .. } | InvokeError::Timeout(_) => true,
            InvokeError::InvalidResponse { .. }
            | InvokeError::InvalidHeader { .. }
            | InvokeError::Request { .. } => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            InvokeError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether no answer came within the per-request timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, InvokeError::Timeout(_))
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            InvokeError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}
