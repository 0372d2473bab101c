//! The one rule of a server's URL.

use super::ValueError;

/// Checks that `url` can be the address of a server lllm talks to: an absolute `http` or `https` URL
/// with a host and without a `#fragment`, parsed as the HTTP client parses it. The rule of
/// `model_args.api_base` (in a file or [`ModelArgs::api_base`](crate::ModelArgs::api_base)), of an
/// MCP server's `url` (in a file or its builder), and of `lllm replay --api-base`. The error never
/// quotes the URL, nor any part of it: it may hold a password or a key.
pub fn check_http_url(url: &str) -> Result<(), ValueError> {
    let problem = match url::Url::parse(url) {
        Err(e) => e.to_string(),
        Ok(url) if !matches!(url.scheme(), "http" | "https") => {
            "the scheme must be http or https".into()
        }
        Ok(url) if url.host_str().is_none_or(str::is_empty) => "it has no host".into(),
        Ok(url) if url.fragment().is_some() => "it may not have a #fragment".into(),
        Ok(_) => return Ok(()),
    };
    Err(ValueError::Url { problem })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_pass_and_none_is_quoted() {
        for good in ["http://127.0.0.1:8000/v1", "https://u:p@h.example/v1?x=1"] {
            assert_eq!(check_http_url(good), Ok(()), "{good}");
        }
        for bad in [
            "ftp://user:hunter22@127.0.0.1/mcp",
            "127.0.0.1:8000",
            "http://",
            "file:///etc/passwd",
            "http://h/v1#hunter22",
            "sk-hunter22:x",
            "",
        ] {
            let error = check_http_url(bad).expect_err(bad).to_string();
            assert!(
                error.starts_with("is not a usable http(s) URL ("),
                "{error}"
            );
            assert!(!error.contains("hunter22"), "{error}");
        }
    }
}
