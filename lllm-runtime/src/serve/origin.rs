//! Requests a web page made on its visitor's behalf are refused. A browser showing some other site
//! can send a POST to `127.0.0.1:8642` (it attaches a cached console password, too), and a site
//! whose name it rebinds to `127.0.0.1` reads the answers as its own; either could start runs or
//! approve a tool call. So: a request naming another origin than the server (`Origin`, or
//! `Sec-Fetch-Site: cross-site`) may only read nothing, and without a key the server answers only
//! to an address or `localhost`, never to a name someone else's DNS controls. Clients that are not
//! browsers send neither header and are not affected. The origins the operator lists
//! (`--cors-origin`) may call the API routes (`cors.rs` marks their requests).

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::cors::AllowedOrigin;
use super::error::ApiError;

/// Whether the server has a key (then a rebound name gets no password from the browser).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keyed(pub(crate) bool);

/// Refuses cross-site writes and, without a key, requests for a host that is not an address or
/// `localhost` (403).
pub(crate) async fn same_origin_only(
    State(keyed): State<Keyed>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !keyed.0 && !host.is_some_and(is_local_host) {
        return refused(
            "the Host header must be an address or localhost: this server has no key, so it answers \
             no name a DNS server could point at it; connect by address, or give the server a key",
        );
    }
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    // An origin the operator listed (`--cors-origin`), on an API route: see `cors.rs`.
    let listed = request.extensions().get::<AllowedOrigin>().is_some();
    if !reads && !listed && from_another_site(headers, host) {
        return refused(
            "a request from another site's page is refused: only the server's own console and \
             clients that are not browsers may start, cancel or approve runs",
        );
    }
    next.run(request).await
}

fn refused(message: &str) -> Response {
    ApiError::forbidden(message)
        .code("cross_origin")
        .into_response()
}

/// Whether the browser says the request comes from a page of another origin.
fn from_another_site(headers: &HeaderMap, host: Option<&str>) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(fetch_site, Some("cross-site" | "same-site")) {
        return true;
    }
    match headers.get(header::ORIGIN).map(|v| v.to_str()) {
        None => false,
        Some(Ok(origin)) => {
            let authority = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            authority.is_none_or(|a| Some(a) != host)
        }
        Some(Err(_)) => true,
    }
}

/// Whether `host` (a `Host` header: name or address, maybe a port) is an IP address or localhost.
pub(crate) fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // [::1]:8642
        Some(rest) => {
            return rest.split_once(']').is_some_and(|(address, port)| {
                address.parse::<std::net::Ipv6Addr>().is_ok()
                    && port
                        .strip_prefix(':')
                        .map_or(port.is_empty(), |p| p.bytes().all(|b| b.is_ascii_digit()))
            })
        }
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_addresses_and_localhost_are_local_hosts() {
        for host in [
            "127.0.0.1:8642",
            "127.0.0.1",
            "[::1]:8642",
            "localhost:8642",
            "LOCALHOST.",
            "app.localhost:1",
            "10.0.0.5:80",
        ] {
            assert!(is_local_host(host), "{host}");
        }
        for host in [
            "evil.example:8642",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "[::1",
            "",
        ] {
            assert!(!is_local_host(host), "{host}");
        }
    }

    #[test]
    fn another_origin_is_another_site_and_no_origin_is_not() {
        let with = |pairs: &[(&'static str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, value.parse().expect("value"));
            }
            headers
        };
        let host = Some("127.0.0.1:8642");
        assert!(!from_another_site(&with(&[]), host));
        assert!(!from_another_site(
            &with(&[("origin", "http://127.0.0.1:8642")]),
            host
        ));
        assert!(from_another_site(
            &with(&[("origin", "http://evil.example")]),
            host
        ));
        assert!(from_another_site(&with(&[("origin", "null")]), host));
        assert!(from_another_site(
            &with(&[("sec-fetch-site", "cross-site")]),
            host
        ));
        assert!(!from_another_site(
            &with(&[("sec-fetch-site", "same-origin")]),
            host
        ));
    }
}
