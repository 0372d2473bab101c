//! `auth:` of an MCP server.

use std::path::Path;

use super::*;

fn env(name: &str) -> Option<String> {
    (name == "CLIENT").then(|| "lllm-ci".to_owned())
}

fn parse(text: &str) -> Result<TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("dir/t.yaml"), &env)
}

fn tactic(server: &str) -> String {
    format!("mcp_servers:\n  remote:\n{server}\nagent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    mcp: [remote]\n")
}

fn error(server: &str) -> String {
    match parse(&tactic(server)) {
        Ok(spec) => panic!("expected an error, got {spec:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn auth_loads_with_its_client_scopes_and_a_token_file_beside_the_tactic() {
    let spec = parse(&tactic(
        "    url: http://127.0.0.1:9/mcp\n    auth: {client_id: \"${CLIENT}\", scopes: [read, write, read], token_file: tokens/r.json}",
    ))
    .expect("valid");
    let auth = spec.mcp_servers()[0].auth.clone().expect("auth");
    assert_eq!(auth.client_id.as_deref(), Some("lllm-ci"));
    assert_eq!(auth.scopes, ["read", "write"]);
    let file = auth.token_file.expect("file");
    assert!(
        file.is_absolute() && file.ends_with("dir/tokens/r.json"),
        "{}",
        file.display()
    );

    let spec = parse(&tactic("    url: http://127.0.0.1:9/mcp\n    auth: {}")).expect("valid");
    assert_eq!(spec.mcp_servers()[0].auth, Some(crate::McpAuth::new()));
    let spec = parse(&tactic("    url: http://127.0.0.1:9/mcp")).expect("valid");
    assert_eq!(spec.mcp_servers()[0].auth, None);
}

#[test]
fn auth_mistakes_name_the_line_column_and_field() {
    let err = error("    command: [cat]\n    auth: {}");
    assert!(
        err.starts_with("dir/t.yaml:4:11: mcp_servers.remote.auth:") && err.contains("`url:`"),
        "{err}"
    );
    let err = error("    url: http://127.0.0.1:9/mcp\n    auth: {client: x}");
    assert!(err.starts_with("dir/t.yaml:4:"), "{err}");
    assert!(err.contains("client"), "{err}");
    let err = error("    url: http://127.0.0.1:9/mcp\n    auth: {scopes: [\"a b\"]}");
    assert!(
        err.contains("mcp_servers.remote.auth.scopes[0]") && err.contains("is not a scope"),
        "{err}"
    );
    let err = error("    url: http://127.0.0.1:9/mcp\n    auth: {client_id: \"\"}");
    assert!(err.contains("mcp_servers.remote.auth.client_id"), "{err}");
    let err = error("    url: http://127.0.0.1:9/mcp\n    auth: {token_file: \"d/\"}");
    assert!(
        err.contains("auth.token_file") && err.contains("must name a file"),
        "{err}"
    );
}

#[test]
fn the_schema_knows_auth() {
    let schema = crate::tactic_schema();
    let auth = schema
        .pointer("/$defs/McpAuth/properties")
        .expect("McpAuth");
    for key in ["client_id", "scopes", "token_file"] {
        assert!(auth.get(key).is_some(), "{key}: {auth}");
    }
    assert_eq!(
        schema.pointer("/$defs/McpAuth/additionalProperties"),
        Some(&serde_json::json!(false))
    );
}
