//! One `Host` header, or none of the request is served. The origin check reads the first `Host`;
//! a proxy or a router in front of the server may read the last, so a request with two could be
//! checked as one host and routed as another. HTTP/1.1 makes such a request a 400 (RFC 9112,
//! section 3.2), and so does this layer, the outermost, before any other reads the header.

use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Answers 400 to a request with more than one `Host` header.
pub(crate) async fn one_host_only(request: Request, next: Next) -> Response {
    if request
        .headers()
        .get_all(header::HOST)
        .iter()
        .nth(1)
        .is_some()
    {
        return ApiError::invalid(
            "the request has more than one Host header: send exactly one, naming this server",
        )
        .code("duplicate_host")
        .into_response();
    }
    next.run(request).await
}
