//! The console: a page that lists the server's runs and shows each one (its dialog tree, each
//! request's session, priority, tokens and cache, its tasks, its tool calls) and answers its
//! confirmations.
//! Three static files compiled into the binary; the page reads `GET /v1/runs` (streamed),
//! `GET /v1/runs/{id}`, `GET /v1/runs/{id}/dialogs` and posts approvals, as any client would.
//!
//! Its policy allows scripts and styles from the server itself only, so text a run holds (a model's
//! answer, a tool's result) can never run as script even if it reached the page as markup; the page
//! itself only ever sets text, never markup.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("app.js");
const STYLE: &str = include_str!("style.css");

/// What the browser may load and run on the console's pages: its own files, nothing inline.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                      connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /`.
pub(crate) async fn index() -> Response {
    file(INDEX, "text/html; charset=utf-8")
}

/// `GET /console/app.js`.
pub(crate) async fn script() -> Response {
    file(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /console/style.css`.
pub(crate) async fn style() -> Response {
    file(STYLE, "text/css; charset=utf-8")
}

fn file(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
