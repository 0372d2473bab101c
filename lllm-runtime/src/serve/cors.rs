//! Cross-origin access for the origins the operator lists (`--cors-origin`): a browser chat UI
//! served from another origin may call the API routes (`/v1/...`). Its preflight is answered here,
//! before the key check (a browser sends no credentials with a preflight); its requests are marked
//! so that the same-origin rule of `origin.rs` lets them through, and their answers name the
//! origin. Every other origin is refused as before, and the console's pages are never shared.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// An origin allowed to call the API from a browser: `http://` or `https://`, a host, and a port
/// unless it is the scheme's own, as a browser writes it in `Origin` (`https://chat.example`,
/// `http://localhost:3000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsOrigin(String);

/// Why a text is not an origin.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{written}` is not an origin: {problem}; write it as a browser sends it in `Origin`, SCHEME://HOST[:PORT] (`https://chat.example`, `http://localhost:3000`), without a path")]
pub struct CorsOriginError {
    written: String,
    problem: &'static str,
}

impl FromStr for CorsOrigin {
    type Err = CorsOriginError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |problem| CorsOriginError {
            written: crate::serve::shorten(text),
            problem,
        };
        let lower = text.to_ascii_lowercase();
        let lower = lower.strip_suffix('/').unwrap_or(&lower);
        let (scheme, authority) = lower
            .split_once("://")
            .ok_or_else(|| fail("it has no scheme"))?;
        let default_port = match scheme {
            "http" => "80",
            "https" => "443",
            _ => return Err(fail("the scheme must be http or https")),
        };
        let (host, port) = split_port(authority)
            .ok_or_else(|| fail("its port is not a number from 1 to 65535"))?;
        if !valid_host(host) {
            return Err(fail("its host must be a name, an IPv4 address or a bracketed IPv6 address (no path, user or query)"));
        }
        Ok(match port {
            Some(port) if port != default_port => CorsOrigin(format!("{scheme}://{host}:{port}")),
            _ => CorsOrigin(format!("{scheme}://{host}")),
        })
    }
}

impl fmt::Display for CorsOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `host` and its port, if any; `None` when the port is not one.
fn split_port(authority: &str) -> Option<(&str, Option<&str>)> {
    let split = match authority.rfind(':') {
        Some(at) if !authority[at..].contains(']') => {
            Some((&authority[..at], &authority[at + 1..]))
        }
        _ => None,
    };
    match split {
        None => Some((authority, None)),
        Some((host, port)) => {
            let number: u16 = port.parse().ok().filter(|p| *p > 0)?;
            (number.to_string() == port).then_some((host, Some(port)))
        }
    }
}

fn valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().is_ok();
    }
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// The origins allowed, shared by the layer.
#[derive(Debug, Clone, Default)]
pub(crate) struct CorsOrigins(pub(crate) Arc<[CorsOrigin]>);

/// Marks a request from an allowed origin, which the same-origin rule then lets through.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllowedOrigin;

/// What a browser may send and read across origins.
const ALLOWED_METHODS: &str = "GET, POST, OPTIONS";
const EXPOSED_HEADERS: &str = "x-lllm-session-id, x-should-retry, retry-after";
/// How long a browser may keep a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// Answers the preflight of an allowed origin on an API route, and names the origin in the answers
/// to its requests. Anything else passes through unchanged.
pub(crate) async fn allow_listed_origins(
    State(origins): State<CorsOrigins>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(origin) = allowed(&origins, request.uri().path(), request.headers()) else {
        return next.run(request).await;
    };
    if request.method() == Method::OPTIONS {
        return preflight(&origin, request.headers());
    }
    request.extensions_mut().insert(AllowedOrigin);
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    response
}

/// The request's `Origin`, when it is one of `origins` and the route is an API route.
fn allowed(origins: &CorsOrigins, path: &str, headers: &HeaderMap) -> Option<HeaderValue> {
    if origins.0.is_empty() || !path.starts_with("/v1/") {
        return None;
    }
    let origin = headers.get(header::ORIGIN)?;
    let text = origin.to_str().ok()?;
    origins
        .0
        .iter()
        .any(|allowed| allowed.0 == text)
        .then(|| origin.clone())
}

/// 204 with what the origin may do; the headers it asks to send are allowed when they are a list
/// of header names (the key still has to be right on the request itself).
fn preflight(origin: &HeaderValue, headers: &HeaderMap) -> Response {
    let asked = headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .filter(|v| {
            v.as_bytes()
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_, ".contains(b))
        });
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(ALLOWED_METHODS),
    );
    if let Some(asked) = asked {
        out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
    }
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(PREFLIGHT_MAX_AGE),
    );
    out.insert(header::VARY, HeaderValue::from_static("Origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::CorsOrigin;

    #[test]
    fn origins_are_written_as_browsers_send_them_and_anything_else_is_refused() {
        for (written, origin) in [
            ("https://chat.example", "https://chat.example"),
            ("HTTP://LocalHost:3000/", "http://localhost:3000"),
            ("https://chat.example:443", "https://chat.example"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://[::1]:5173", "http://[::1]:5173"),
        ] {
            let parsed: CorsOrigin = written.parse().expect(written);
            assert_eq!(parsed.to_string(), origin);
            assert_eq!(origin.parse::<CorsOrigin>().expect(origin), parsed);
        }
        for bad in [
            "*",
            "null",
            "chat.example",
            "ftp://chat.example",
            "https://chat.example/path",
            "https://user@chat.example",
            "https://chat.example:0",
            "https://chat.example:99999",
            "https://chat.example:80x",
            "https://",
            "https://a..b",
            "http://[::1",
            "https://chat.example?x=1",
        ] {
            let error = bad.parse::<CorsOrigin>().expect_err(bad).to_string();
            assert!(error.contains("SCHEME://HOST[:PORT]"), "{error}");
        }
    }
}
