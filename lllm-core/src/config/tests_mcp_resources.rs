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

fn with_prompt(agent: &str) -> String {
    format!("mcp_servers:\n  every: {{command: [sh, -c, \"exec cat\"]}}\nagent_configs:\n  - name: a\n    model_name: m\n    mcp: [every]\n{agent}")
}

#[test]
fn a_system_prompt_from_a_server_is_the_third_form_of_the_prompt() {
    let spec = parse(&with_prompt(
        "    system_prompt_mcp: {server: every, prompt: p, arguments: {city: Paris}}\n",
    ))
    .expect("valid");
    let source = spec.agents()[0].system_prompt_mcp().expect("set");
    assert_eq!(
        (source.server.as_str(), source.prompt.as_str()),
        ("every", "p")
    );
    assert_eq!(
        source.arguments.get("city").map(String::as_str),
        Some("Paris")
    );
    assert_eq!(
        source.at.as_deref(),
        Some("t.yaml:7:48: agent_configs[0] (a).system_prompt_mcp.prompt")
    );
    let both = parse(&with_prompt(
        "    system_prompt: hi\n    system_prompt_mcp: {server: every, prompt: p}\n",
    ))
    .expect_err("two prompts");
    assert!(
        both.to_string()
            .contains("set one of system_prompt, system_prompt_path and system_prompt_mcp"),
        "{both}"
    );
    for (agent, expected) in [
        (
            "    system_prompt_mcp: {server: every, promt: p}\n",
            "t.yaml:7:40",
        ),
        ("    system_prompt_mcp: {server: every}\n", "t.yaml:7:25"),
        (
            "    system_prompt_mcp: {server: every, prompt: \"\"}\n",
            "t.yaml:7:48",
        ),
        (
            "    system_prompt_mcp: {server: every, prompt: p, arguments: {city: [a]}}\n",
            "t.yaml:7:",
        ),
    ] {
        let error = parse(&with_prompt(agent)).expect_err(agent);
        assert!(error.to_string().starts_with(expected), "{agent}: {error}");
    }
    let missing = parse(&with_prompt("")).expect_err("no prompt");
    assert!(
        missing.to_string().contains("system_prompt_mcp"),
        "{missing}"
    );
}

#[test]
fn global_gives_a_servers_prompt_unless_the_agent_has_its_own() {
    let text = "mcp_servers:\n  every: {command: [sh, -c, \"exec cat\"]}\nglobal:\n  mcp: [every]\n  system_prompt_mcp: {server: every, prompt: p}\nagent_configs:\n  - {name: a, model_name: m}\n  - {name: b, model_name: m, system_prompt: own}\n";
    let spec = parse(text).expect("valid");
    assert!(spec.agents()[0].system_prompt_mcp().is_some());
    assert!(spec.agents()[1].system_prompt_mcp().is_none());
    assert_eq!(spec.agents()[1].system_prompt().template(), "own");
    assert!(crate::tactic_schema()
        .pointer("/$defs/Agent/properties/system_prompt_mcp")
        .is_some());
}
