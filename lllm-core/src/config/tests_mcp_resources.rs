//! `resources:` on a server and an agent's `system_prompt_mcp:`.

use std::path::Path;

use super::*;

fn parse(text: &str) -> Result<TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None)
}

fn server(settings: &str) -> String {
    format!("mcp_servers:\n  every: {{command: [sh, -c, \"exec cat\"]{settings}}}\nagent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    mcp: [every]\n")
}

#[test]
fn resources_are_off_unless_set_and_a_wrong_type_is_named_where_written() {
    let resources =
        |settings: &str| parse(&server(settings)).expect("valid").mcp_servers()[0].resources;
    assert!(!resources(""));
    assert!(!resources(", resources: false"));
    assert!(resources(", resources: true"));
    let error = parse(&server(", resources: yes please")).expect_err("not a boolean");
    assert!(
        error
            .to_string()
            .starts_with("t.yaml:2:53: invalid boolean"),
        "{error}"
    );
    let schema = crate::tactic_schema();
    assert!(schema
        .pointer("/$defs/McpServer/properties/resources")
        .is_some());
}
