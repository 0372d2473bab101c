//! Reading a request body within the server's size limit and read timeout.

use axum::body::Body;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::error::ApiError;
use super::ServeState;

/// Reads a request body within the server's size limit and read timeout. A body past the limit
/// (one sent in chunks, without a `Content-Length` the router refuses first) is a 413.
pub(crate) async fn read_body(state: &ServeState, body: Body) -> Result<Vec<u8>, ApiError> {
    let read = Limited::new(body, state.max_body).collect();
    match tokio::time::timeout(state.read_timeout, read).await {
        Err(_) => Err(ApiError::invalid(format!(
            "the request body did not arrive within {} s",
            state.read_timeout.as_secs()
        ))
        .code("body_timeout")),
        Ok(Err(error)) if error.is::<LengthLimitError>() => {
            Err(ApiError::too_large(state.max_body))
        }
        Ok(Err(_)) => Err(ApiError::invalid("the request body could not be read")),
        Ok(Ok(collected)) => Ok(collected.to_bytes().to_vec()),
    }
}
