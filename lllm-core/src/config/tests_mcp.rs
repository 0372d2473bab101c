//! `mcp_servers:`, each agent's `mcp:`, and `confirm:` on command tools.

use std::path::Path;

use super::*;
use crate::mcp::{ConfirmTools, McpTransport, ToolFilter};

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("tok-secret-123".into()),
        "PORT" => Some("3001".into()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &env)
}

fn parse_ok(text: &str) -> TacticSpec {
    parse(text).unwrap_or_else(|e| panic!("expected a valid tactic, got: {e}"))
}

fn parse_err(text: &str) -> String {
    match parse(text) {
        Ok(spec) => panic!("expected an error, got {spec:?}"),
        Err(e) => e.to_string(),
    }
}

fn with_agent(servers: &str, mcp: &str) -> String {
    format!("mcp_servers:\n{servers}\nagent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    mcp: {mcp}\n")
}

const SERVERS: &str = r#"  files:
    command: [sh, -c, "exec cat"]
    env: {API_TOKEN: "${TOKEN}", MODE: plain}
    timeout_s: 5
    prefix: fs_
    confirm: [write_file]
  search:
    url: "http://127.0.0.1:${PORT}/mcp"
    headers: {Authorization: "Bearer ${TOKEN}"}
    confirm: true"#;

#[test]
fn servers_load_with_their_transport_and_settings() {
    let spec = parse_ok(&with_agent(SERVERS, "[files, search]"));
    let servers = spec.mcp_servers();
    assert_eq!(servers.len(), 2);
    let files = &servers[0];
    assert_eq!(files.name, "files");
    match &files.transport {
        McpTransport::Stdio { command, env, cwd } => {
            assert_eq!(command, &["sh", "-c", "exec cat"]);
            assert_eq!(
                env.get("API_TOKEN").map(String::as_str),
                Some("tok-secret-123")
            );
            assert_eq!(env.get("MODE").map(String::as_str), Some("plain"));
            assert!(cwd.is_absolute(), "{}", cwd.display());
        }
        other => panic!("expected stdio, got {other:?}"),
    }
    assert_eq!(files.timeout_s, 5.0);
    assert_eq!(
        files.startup_timeout_s,
        crate::DEFAULT_MCP_STARTUP_TIMEOUT_S
    );
    assert_eq!(files.prefix.as_deref(), Some("fs_"));
    assert_eq!(files.confirm, ConfirmTools::Some(vec!["write_file".into()]));
    let search = &servers[1];
    match &search.transport {
        McpTransport::Http { url, headers } => {
            assert_eq!(url, "http://127.0.0.1:3001/mcp");
            assert_eq!(
                headers,
                &[(
                    "Authorization".to_owned(),
                    "Bearer tok-secret-123".to_owned()
                )]
            );
        }
        other => panic!("expected http, got {other:?}"),
    }
    assert_eq!(search.timeout_s, crate::DEFAULT_MCP_TIMEOUT_S);
    assert_eq!(search.confirm, ConfirmTools::All);
    let agent = &spec.agents()[0];
    assert_eq!(agent.mcp().len(), 2);
    assert_eq!(agent.mcp()[0].filter, ToolFilter::All);
    assert_eq!(spec.used_mcp_servers().count(), 2);
}

#[test]
fn agents_take_subsets_and_unused_servers_are_not_started() {
    let spec = parse_ok(&with_agent(SERVERS, "{search: {include: [echo]}}"));
    let uses = spec.agents()[0].mcp();
    assert_eq!(uses[0].server, "search");
    assert_eq!(uses[0].filter, ToolFilter::Include(vec!["echo".into()]));
    let at = uses[0].at.as_deref().expect("where");
    assert!(
        at.starts_with("t.yaml:16:") && at.ends_with(": agent_configs[0] (a).mcp.search.include"),
        "{at}"
    );
    let confirm_at = spec.mcp_servers()[0].confirm_at.as_deref().expect("where");
    assert!(
        confirm_at.starts_with("t.yaml:7:") && confirm_at.ends_with(": mcp_servers.files.confirm"),
        "{confirm_at}"
    );
    let used: Vec<&str> = spec.used_mcp_servers().map(|s| s.name.as_str()).collect();
    assert_eq!(used, ["search"]);
    let spec = parse_ok(&with_agent(
        SERVERS,
        "{files: {exclude: [write_file]}, search: null}",
    ));
    let uses = spec.agents()[0].mcp();
    assert_eq!(
        uses[0].filter,
        ToolFilter::Exclude(vec!["write_file".into()])
    );
    assert_eq!(uses[1].filter, ToolFilter::All);
}

#[test]
fn global_mcp_reaches_every_agent_unless_an_agent_sets_its_own() {
    let yaml = format!("mcp_servers:\n{SERVERS}\nglobal: {{mcp: [search]}}\nagent_configs:\n  - {{name: a, model_name: m, system_prompt: hi}}\n  - {{name: b, model_name: m, system_prompt: hi, mcp: [files]}}\n");
    let spec = parse_ok(&yaml);
    assert_eq!(spec.agents()[0].mcp()[0].server, "search");
    assert_eq!(spec.agents()[1].mcp()[0].server, "files");
}

#[test]
fn mistakes_name_the_file_line_column_and_field() {
    let err = parse_err(&with_agent(SERVERS, "[serach]"));
    assert!(
        err.starts_with("t.yaml:16:11: agent_configs[0] (a).mcp.serach:"),
        "{err}"
    );
    assert!(err.contains("did you mean `search`?"), "{err}");

    let err = parse_err(&with_agent("  x: {timeout_s: 3}", "[x]"));
    assert!(
        err.contains("mcp_servers.x.command") && err.contains("`url:`"),
        "{err}"
    );

    let err = parse_err(&with_agent(
        "  x: {command: [cat], url: \"http://127.0.0.1:1/mcp\"}",
        "[x]",
    ));
    assert!(err.contains("not both"), "{err}");

    let err = parse_err(&with_agent(
        "  x: {command: [no-such-program-lllm-test]}",
        "[x]",
    ));
    assert!(
        err.contains("t.yaml:2:")
            && err.contains("mcp_servers.x.command[0]")
            && err.contains("not an executable program"),
        "{err}"
    );

    let err = parse_err(&with_agent(
        "  x: {url: \"ftp://user:hunter22@127.0.0.1/mcp\"}",
        "[x]",
    ));
    assert!(
        err.contains("mcp_servers.x.url") && !err.contains("hunter22"),
        "{err}"
    );

    let err = parse_err(&with_agent(
        "  x: {url: \"http://127.0.0.1:1/mcp\", env: {A: b}}",
        "[x]",
    ));
    assert!(err.contains("mcp_servers.x.env"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat], headers: {A: b}}", "[x]"));
    assert!(err.contains("mcp_servers.x.headers"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat], timeout_s: 0}", "[x]"));
    assert!(err.contains("mcp_servers.x.timeout_s"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat], prefix: \"fs.\"}", "[x]"));
    assert!(err.contains("mcp_servers.x.prefix"), "{err}");

    let err = parse_err(&with_agent(
        "  x: {command: [cat], cwd: no-such-folder}",
        "[x]",
    ));
    assert!(
        err.contains("mcp_servers.x.cwd") && err.contains("not a folder"),
        "{err}"
    );

    let err = parse_err(&with_agent(
        "  x: {command: [cat], env: {\"1A\": b}}",
        "[x]",
    ));
    assert!(err.contains("mcp_servers.x.env.1A"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat], confirm: [a, a]}", "[x]"));
    assert!(err.contains("already used"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat], comand: [cat]}", "[x]"));
    assert!(
        err.contains("unknown key `comand`") && err.contains("did you mean `command`"),
        "{err}"
    );

    let err = parse_err(&with_agent("  \"bad name\": {command: [cat]}", "[x]"));
    assert!(err.contains("server name"), "{err}");

    let err = parse_err(&with_agent(
        "  x: {command: [cat]}",
        "{x: {include: [a], exclude: [b]}}",
    ));
    assert!(
        err.contains("mcp.x.exclude") && err.contains("not both"),
        "{err}"
    );

    let err = parse_err(&with_agent("  x: {command: [cat]}", "{x: {include: []}}"));
    assert!(err.contains("mcp.x.include"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat]}", "[x, x]"));
    assert!(err.contains("already used"), "{err}");

    let err = parse_err(&with_agent("  x: {command: [cat]}", "{x: {inclde: [a]}}"));
    assert!(err.contains("unknown key `inclde`"), "{err}");

    let err = parse_err(&with_agent(
        "  x: {command: [cat], env: {A: \"${NOT_SET_ANYWHERE}\"}}",
        "[x]",
    ));
    assert!(
        err.contains("mcp_servers.x.env.A") && err.contains("NOT_SET_ANYWHERE"),
        "{err}"
    );

    let err =
        parse_err("agent_configs:\n  - {name: a, model_name: m, system_prompt: hi, mcp: [x]}\n");
    assert!(err.contains("mcp_servers:"), "{err}");
}

#[test]
fn header_values_that_cannot_be_sent_are_refused_without_quoting_them() {
    let err = parse_err(&with_agent(
        "  x: {url: \"http://127.0.0.1:1/mcp\", headers: {Authorization: \"Bearer a\\nsecret-value\"}}",
        "[x]",
    ));
    assert!(
        err.contains("mcp_servers.x.headers.Authorization") && !err.contains("secret-value"),
        "{err}"
    );
}

#[test]
fn a_base_files_servers_merge_server_by_server() {
    let dir = std::env::temp_dir().join(format!("lllm-mcp-base-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("base.yaml"),
        "mcp_servers:\n  a: {command: [cat]}\n  b: {command: [cat], timeout_s: 7}\n",
    )
    .expect("base");
    let top = "base: base.yaml\nmcp_servers:\n  b: {command: [cat], timeout_s: 9}\nagent_configs: [{name: x, model_name: m, system_prompt: hi, mcp: [a, b]}]\n";
    std::fs::write(dir.join("t.yaml"), top).expect("top");
    let spec = crate::load_tactic(&dir.join("t.yaml")).expect("loads");
    let timeouts: Vec<(String, f64)> = spec
        .mcp_servers()
        .iter()
        .map(|s| (s.name.clone(), s.timeout_s))
        .collect();
    assert_eq!(timeouts, [("a".to_owned(), 60.0), ("b".to_owned(), 9.0)]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn command_tools_may_ask_before_they_run() {
    let spec = parse_ok("agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    tools:\n      - {name: rm, description: d, command: [cat], confirm: true}\n      - {name: ls, description: d, command: [cat]}\n");
    let tools = spec.agents()[0].tools();
    assert!(tools[0].confirm);
    assert!(!tools[1].confirm);
}

#[test]
fn the_schema_knows_the_new_keys() {
    let schema = crate::tactic_schema();
    assert!(
        schema.pointer("/properties/mcp_servers").is_some(),
        "{schema}"
    );
    assert!(schema.pointer("/$defs/Agent/properties/mcp").is_some());
    assert!(schema
        .pointer("/$defs/CommandTool/properties/confirm")
        .is_some());
    assert!(
        schema.pointer("/$defs/McpServer/properties/url").is_some(),
        "{schema:#}"
    );
}
