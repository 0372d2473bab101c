//! The one rule of a header lllm sends.

use super::ValueError;

/// Checks a header by the rules the HTTP client applies when it sends it, so that a header that loads
/// is a header that can be sent: a name of letters, digits and ``!#$%&'*+-.^_`|~``, a value without
/// control characters (tabs aside). The rule of `model_args.extra_headers` (in a file or
/// [`ModelArgs::extra_header`](crate::ModelArgs::extra_header)), of an MCP server's `headers` (in a file
/// or its builder's `header`), and of every header of a model request.
pub fn check_header(name: &str, value: &str) -> Result<(), ValueError> {
    typed_header(name, value).map(|_| ())
}

/// [`check_header`], giving the name and value as the HTTP client takes them.
pub fn typed_header(
    name: &str,
    value: &str,
) -> Result<(http::HeaderName, http::HeaderValue), ValueError> {
    let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| ValueError::HeaderName)?;
    let value = http::HeaderValue::from_str(value).map_err(|_| ValueError::HeaderValue)?;
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_follow_the_http_rules() {
        assert_eq!(check_header("X-Team", "a b\tc"), Ok(()));
        assert_eq!(check_header("x team", "a"), Err(ValueError::HeaderName));
        assert_eq!(check_header("", "a"), Err(ValueError::HeaderName));
        assert_eq!(
            check_header("x-a", "1\r\nx-b: 2"),
            Err(ValueError::HeaderValue)
        );
        assert_eq!(
            check_header("x-a", "a\u{7f}b"),
            Err(ValueError::HeaderValue)
        );
    }
}
