//! Which endpoint a request goes to: one identity for every spelling of its `api_base`, so that
//! its admission gate (`max_in_flight`) and its breaker are one per server, not one per way of
//! writing the URL.

/// An endpoint's identity: its `api_base` normalized as the HTTP client reads it. The scheme and
/// host are lower case, the scheme's default port is dropped, and so are a trailing slash and the
/// credentials (the server is the same whoever calls it; the key holds no secret). The default
/// server (no `api_base`) is one endpoint of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct EndpointKey(String);

impl EndpointKey {
    /// The endpoint at `api_base` (`None`: the default server).
    pub(crate) fn of(api_base: Option<&str>) -> Self {
        let Some(text) = api_base else {
            return EndpointKey(String::new());
        };
        // `api_base` was checked at load (`check_http_url`); text that still does not parse is
        // its own endpoint, as written.
        let Ok(url) = url::Url::parse(text) else {
            return EndpointKey(text.trim_end_matches('/').to_owned());
        };
        let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
        let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
        EndpointKey(format!(
            "{}://{}{port}{}{query}",
            url.scheme(),
            url.host_str().unwrap_or(""),
            url.path().trim_end_matches('/'),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_one_endpoint_is_one_key() {
        let one = EndpointKey::of(Some("http://127.0.0.1:8000/v1"));
        for spelling in [
            "http://127.0.0.1:8000/v1/",
            "HTTP://127.0.0.1:8000/v1",
            "http://user:pw@127.0.0.1:8000/v1",
        ] {
            assert_eq!(EndpointKey::of(Some(spelling)), one, "{spelling}");
        }
        let host = EndpointKey::of(Some("https://api.example.com/v1"));
        for spelling in [
            "https://API.Example.COM/v1",
            "https://api.example.com:443/v1/",
            "HTTPS://api.example.com/v1//",
        ] {
            assert_eq!(EndpointKey::of(Some(spelling)), host, "{spelling}");
        }
    }

    #[test]
    fn other_endpoints_stay_apart() {
        let one = EndpointKey::of(Some("http://127.0.0.1:8000/v1"));
        for other in [
            "http://127.0.0.1:8001/v1",
            "https://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v2",
            "http://127.0.0.1:8000/V1",
            "http://127.0.0.1:8000/v1?tenant=a",
        ] {
            assert_ne!(EndpointKey::of(Some(other)), one, "{other}");
        }
        assert_ne!(EndpointKey::of(None), one, "the default server is its own");
    }
}
