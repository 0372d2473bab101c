//! `lllm mcp login`: the OAuth flow of a tactic's MCP servers, once, from a terminal or a script;
//! the tokens it stores are what later runs send. Everything it says goes to stderr, never a token.

use std::time::Duration;

use lllm_runtime::load_tactic;
use lllm_runtime::mcp::{login as authorize, McpServerConfig, McpTransport};

use crate::cli::McpLoginArgs;
use crate::exit::{failed, usage, Failure};

pub(crate) fn login(args: &McpLoginArgs) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    let servers = chosen(spec.mcp_servers(), args.server.as_deref())?;
    let host = crate::execute::host()?;
    let wait = Duration::from_secs(args.wait);
    for server in servers {
        let file = host
            .block_on(authorize(server, wait, &mut say))
            .map_err(failed)?;
        say(&format!(
            "MCP server `{}`: authorized; the tokens are kept in {} (owner-only)",
            server.name,
            file.display()
        ));
    }
    Ok(())
}

/// The servers to authorize: `name`, which must be an HTTP server with `auth:`, else every server
/// with `auth:` (at least one).
fn chosen<'a>(
    servers: &'a [McpServerConfig],
    name: Option<&str>,
) -> Result<Vec<&'a McpServerConfig>, Failure> {
    let Some(name) = name else {
        let with_auth: Vec<_> = servers.iter().filter(|s| s.auth.is_some()).collect();
        if with_auth.is_empty() {
            return Err(usage(anyhow::anyhow!(
                "no MCP server of this tactic has `auth:`; add `auth: {{}}` under a `url:` server that needs OAuth"
            )));
        }
        return Ok(with_auth);
    };
    let Some(server) = servers.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        return Err(usage(anyhow::anyhow!(
            "--server {name}: the tactic has no MCP server of that name; its servers: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    };
    if !matches!(server.transport, McpTransport::Http { .. }) || server.auth.is_none() {
        return Err(usage(anyhow::anyhow!(
            "--server {name}: OAuth is for servers reached by `url:` with `auth:` under them (such as `auth: {{}}`)"
        )));
    }
    Ok(vec![server])
}

/// Through the redaction of the tactic's secrets, like every other line on stderr (the URL
/// printed holds the server's address, which may carry a key).
#[allow(clippy::print_stderr)]
fn say(text: &str) {
    eprintln!("lllm: {}", crate::redact::redact(text));
}
