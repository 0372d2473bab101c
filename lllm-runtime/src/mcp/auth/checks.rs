//! What discovery found, checked before anything is sent there: the authorization server's
//! endpoints must be on the issuer's own origin, over HTTPS unless on the loopback. rmcp already
//! checks that the issuer is the server the resource named, refuses discovery redirects to another
//! origin, and checks the `iss` of the redirect back (RFC 9207).

use rmcp::transport::auth::AuthorizationMetadata;
use url::{Host, Url};

/// `metadata`'s endpoints, all on its issuer's origin (the MCP server's when it names no issuer).
pub(crate) fn endpoints(metadata: &AuthorizationMetadata, server: &str) -> Result<(), String> {
    let issuer_text = metadata.issuer.as_deref().unwrap_or(server);
    let issuer = Url::parse(issuer_text)
        .map_err(|_| "the authorization server's issuer is not a URL".to_owned())?;
    secure(&issuer, "the authorization server")?;
    let named = [
        (
            "authorization_endpoint",
            Some(&metadata.authorization_endpoint),
        ),
        ("token_endpoint", Some(&metadata.token_endpoint)),
        (
            "registration_endpoint",
            metadata.registration_endpoint.as_ref(),
        ),
    ];
    for (field, value) in named {
        let Some(value) = value else { continue };
        let endpoint = Url::parse(value)
            .map_err(|_| format!("the authorization server's {field} is not a URL"))?;
        if endpoint.origin() != issuer.origin() {
            return Err(format!(
                "the authorization server {} sends its {field} to another host ({}); refused: \
                 the flow would take the user and the tokens elsewhere",
                shown(&issuer),
                shown(&endpoint)
            ));
        }
        secure(&endpoint, field)?;
    }
    Ok(())
}

/// HTTPS, or HTTP on the loopback.
fn secure(url: &Url, what: &str) -> Result<(), String> {
    let loopback = match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "{what} is at {}: OAuth needs HTTPS (plain HTTP only on the loopback)",
            shown(url)
        )),
    }
}

/// A URL's scheme, host and port, for a message (never its path or query).
pub(crate) fn shown(url: &Url) -> String {
    super::super::printable(&url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(issuer: &str, authorize: &str, token: &str) -> AuthorizationMetadata {
        let mut m = AuthorizationMetadata::default();
        m.issuer = Some(issuer.into());
        m.authorization_endpoint = authorize.into();
        m.token_endpoint = token.into();
        m
    }

    #[test]
    fn endpoints_on_another_host_or_in_clear_text_are_refused() {
        let ok = metadata(
            "http://127.0.0.1:5/",
            "http://127.0.0.1:5/authorize",
            "http://127.0.0.1:5/token",
        );
        assert_eq!(endpoints(&ok, "http://127.0.0.1:5/mcp"), Ok(()));
        let elsewhere = metadata(
            "http://127.0.0.1:5",
            "http://127.0.0.2:5/authorize",
            "http://127.0.0.1:5/token",
        );
        let refused = endpoints(&elsewhere, "http://127.0.0.1:5/mcp").expect_err("other host");
        assert!(
            refused.contains("authorization_endpoint to another host (http://127.0.0.2:5)"),
            "{refused}"
        );
        let port = metadata(
            "http://127.0.0.1:5",
            "http://127.0.0.1:5/authorize",
            "http://127.0.0.1:6/token",
        );
        assert!(endpoints(&port, "x")
            .expect_err("other port")
            .contains("token_endpoint"));
        let clear = metadata(
            "http://auth.example",
            "http://auth.example/a",
            "http://auth.example/t",
        );
        assert!(endpoints(&clear, "x")
            .expect_err("http")
            .contains("needs HTTPS"));
        let tls = metadata(
            "https://auth.example",
            "https://auth.example/a",
            "https://auth.example/t",
        );
        assert_eq!(endpoints(&tls, "https://mcp.example/mcp"), Ok(()));
    }
}
