//! Reading the command line. Clap's errors quote the values they refuse (`invalid value '…' for
//! '--queue …'`, `unexpected argument '…'`), before lllm's own checks can say anything: they are
//! printed here, with the credentials of every argument redacted.

use std::process::ExitCode;

use clap::Parser as _;
use lllm_runtime::config::secret::{redact_url, url_credentials};

use crate::cli::Cli;

/// The command line, or the exit code after help, the version or an error was printed (`colour`:
/// with ANSI styles).
#[allow(clippy::print_stderr)]
pub(crate) fn parse(colour: bool) -> Result<Cli, ExitCode> {
    // Parsed as the system gave them (a path need not be UTF-8); read as text only to find the
    // credentials an error might quote.
    let given: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let error = match Cli::try_parse_from(&given) {
        Ok(cli) => return Ok(cli),
        Err(error) => error,
    };
    let arguments: Vec<String> = given
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let code = ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    if !error.use_stderr() {
        // Help and the version, on standard output: no value of the arguments in them.
        error.print().ok();
        return Err(code);
    }
    let rendered = error.render();
    let text = match colour {
        true => rendered.ansi().to_string(),
        false => rendered.to_string(),
    };
    eprint!("{}", without_credentials(&text, &arguments));
    Err(code)
}

/// `text` with each argument that carries credentials (a URL's user info, however written, or a
/// credential-named query parameter) shown redacted; then every form of those credentials
/// (decoded, `user:password`, base64) that is still in it.
fn without_credentials(text: &str, arguments: &[String]) -> String {
    // An argument and, for `--flag=VALUE`, its value: each may be quoted on its own.
    let mut values: Vec<&str> = arguments
        .iter()
        .flat_map(|a| [Some(a.as_str()), a.split_once('=').map(|(_, v)| v)])
        .flatten()
        .filter(|v| !url_credentials(v).is_empty())
        .collect();
    // Longest first: `--queue=URL` before the URL it holds.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut text = text.to_owned();
    for value in values {
        text = text.replace(value, &redact_url(value));
        crate::redact::remember_url(value);
    }
    crate::redact::redact(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_with_credentials_are_redacted_wherever_an_error_quotes_them() {
        let arguments: Vec<String> = [
            "lllm",
            "--queue=nats://user:pa/ss-1@h:1/q",
            "nats://tok-en-2@h:1/q",
            "--input",
            "what?",
        ]
        .map(str::to_owned)
        .into();
        let text = "error: invalid value 'nats://user:pa/ss-1@h:1/q' for '--queue'; unexpected \
                    argument '--queue=nats://user:pa/ss-1@h:1/q', 'nats://tok-en-2@h:1/q', \
                    'what?'";
        let shown = without_credentials(text, &arguments);
        for secret in ["pa/ss-1", "tok-en-2", "user:"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("'nats://[redacted]@h:1/q'"), "{shown}");
        assert!(shown.contains("'what?'"), "no credential: {shown}");
    }
}
