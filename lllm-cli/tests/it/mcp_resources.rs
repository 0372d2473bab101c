//! MCP beyond tools, end to end through the recording stub: resources as tools (`resources: true`)
//! and a prompt as a system prompt against the reference server
//! (`@modelcontextprotocol/server-everything`); `list_changed` against `tests/mcp/changing_server.py`
//! and both handshakes against `tests/mcp/era_server.py` (the official Python SDK). Gated like
//! `mcp.rs` on `LLLM_MCP_EVERYTHING`.

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;

use super::mcp::{list, offered_tools, servers, tactic};
use crate::support::{arg, lllm, tool_messages, TempDir};

#[tokio::test(flavor = "multi_thread")]
async fn resources_are_offered_as_two_prefixed_tools_listed_and_read_into_the_next_request() {
    let Some(s) = servers("resources") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[("c1", "ev_list_resources", "{}")]));
    server.push(StubReply::tool_calls(&[
        (
            "c2",
            "ev_read_resource",
            r#"{"uri": "demo://resource/dynamic/text/7"}"#,
        ),
        (
            "c3",
            "ev_read_resource",
            r#"{"uri": "demo://resource/dynamic/blob/2"}"#,
        ),
        (
            "c4",
            "ev_read_resource",
            r#"{"uri": "demo://resource/static/document/features.md"}"#,
        ),
    ]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-resources");
    let servers = format!(
        "  every: {{command: {}, prefix: ev_, resources: true, max_output_bytes: 2000}}",
        list(&[&s.everything, "stdio"])
    );
    let file = dir.write(
        "t.yaml",
        tactic(
            &server.base_url(),
            &servers,
            "{every: {include: [echo]}}",
            "",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go", "--json"])
        .run()
        .await;
    outcome.assert_clean(0, &[]);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        offered_tools(&requests[0]),
        ["ev_echo", "ev_list_resources", "ev_read_resource"],
        "the filter names the server's tools; the resource tools come with `resources: true`"
    );
    let listing = &tool_messages(&requests[1])[0];
    assert!(
        listing.starts_with("resources:\n- demo://resource/static/document/"),
        "{listing}"
    );
    assert!(
        listing.contains(
            "(features.md, text/markdown): Static document file exposed from /docs: features.md"
        ),
        "{listing}"
    );
    assert!(
        listing.contains("templates (fill in the {placeholders}, then read the URI):\n- demo://resource/dynamic/text/{resourceId} (Dynamic Text Resource"),
        "{listing}"
    );
    let read = tool_messages(&requests[2]);
    assert_eq!(read.len(), 4, "{read:?}");
    assert!(
        read[1].starts_with("Resource 7: This is a plaintext resource created at "),
        "{read:?}"
    );
    assert!(
        read[2].starts_with("[binary resource: demo://resource/dynamic/blob/2, text/plain, ")
            && read[2].ends_with("bytes; not shown]"),
        "{read:?}"
    );
    let (shown, marker) = read[3].rsplit_once('\n').expect("a marker line");
    assert!(
        shown.starts_with("# Everything Server - Features"),
        "{shown}"
    );
    assert!(
        shown.len() <= 2000
            && marker.starts_with("[truncated: ")
            && marker.ends_with(" bytes shown (max_output_bytes of the server)]"),
        "{marker}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_resources_no_resource_tool_is_offered_and_a_bad_uri_is_an_error_result() {
    let Some(s) = servers("resources off") else {
        return;
    };
    let dir = TempDir::new("mcp-resources-off");
    let listing = |setting: &str| {
        let servers = format!(
            "  every: {{command: {}{setting}}}",
            list(&[&s.everything, "stdio"])
        );
        dir.write(
            "t.yaml",
            tactic(
                "http://127.0.0.1:9/v1",
                &servers,
                "{every: {include: [echo]}}",
                "",
            ),
        )
    };
    for (setting, expected) in [
        ("", vec!["echo"]),
        (", resources: false", vec!["echo"]),
        (
            ", resources: true",
            vec!["echo", "list_resources", "read_resource"],
        ),
    ] {
        let outcome = lllm(&["tools", arg(&listing(setting)), "--json"])
            .run()
            .await;
        outcome.assert_clean(0, &[]);
        let report: Value = serde_json::from_slice(&outcome.stdout).expect("JSON");
        let names: Vec<&str> = report["agents"][0]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, expected, "{setting}");
    }
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[
        ("c1", "read_resource", r#"{"uri": "demo://no/such/thing"}"#),
        ("c2", "read_resource", r#"{"uri": ""}"#),
    ]));
    server.push(StubReply::text("done"));
    let servers = format!(
        "  every: {{command: {}, resources: true}}",
        list(&[&s.everything, "stdio"])
    );
    let file = dir.write(
        "t.yaml",
        tactic(&server.base_url(), &servers, "[every]", ""),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let results = tool_messages(&server.requests()[1]);
    assert!(
        results[0].starts_with("error: the server refused the call: ")
            && results[0].contains("demo://no/such/thing"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("error: `uri` must be a resource URI"),
        "{results:?}"
    );
}

/// A tactic whose agent takes its system prompt from the reference server (`prompt` is the YAML of
/// `system_prompt_mcp:`).
fn prompt_tactic(everything: &str, api_base: &str, prompt: &str) -> String {
    format!(
        "mcp_servers:\n  every: {{command: {}}}\n  other: {{command: {}}}\nagent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{api_base}\", timeout: 60}}\n    mcp: {{every: {{include: [echo]}}}}\n    system_prompt_mcp: {prompt}\n",
        list(&[everything, "stdio"]),
        list(&[everything, "stdio"]),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_prompt_with_arguments_is_the_agents_system_prompt() {
    let Some(s) = servers("prompt as system prompt") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::text("sunny"));
    let dir = TempDir::new("mcp-prompt");
    let file = dir.write(
        "t.yaml",
        prompt_tactic(
            &s.everything,
            &server.base_url(),
            "{server: every, prompt: args-prompt, arguments: {city: \"{{ Paris }}\", state: \"{% raw %}Texas\"}}",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let requests = server.requests();
    assert_eq!(
        requests[0].body["messages"][0],
        serde_json::json!({"role": "system", "content": "What's weather in {{ Paris }}, {% raw %}Texas?"}),
        "the server's text as written, not a template"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_of_another_server_or_one_that_does_not_exist_is_refused_saying_where() {
    let Some(s) = servers("prompt refusals") else {
        return;
    };
    let dir = TempDir::new("mcp-prompt-refused");
    let base = "http://127.0.0.1:9/v1";
    let file = dir.write(
        "t.yaml",
        prompt_tactic(
            &s.everything,
            base,
            "{server: other, prompt: simple-prompt}",
        ),
    );
    let outcome = lllm(&["check", arg(&file)]).run().await;
    let stderr = &outcome.stderr;
    assert_eq!(outcome.code, Some(2), "{stderr}");
    assert!(
        stderr.contains("t.yaml:9:33: agent_configs[0] (a).system_prompt_mcp.server: `other` is not one of the agent's MCP servers (every); add it to the agent's `mcp:`"),
        "{stderr}"
    );
    let file = dir.write(
        "t.yaml",
        prompt_tactic(
            &s.everything,
            base,
            "{server: every, prompt: no-such-prompt}",
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    let stderr = &outcome.stderr;
    assert_eq!(outcome.code, Some(2), "{stderr}");
    assert!(
        stderr.contains("t.yaml:9:48: agent_configs[0] (a).system_prompt_mcp.prompt: MCP server `every` has no prompt `no-such-prompt`; its prompts are: simple-prompt, args-prompt"),
        "{stderr}"
    );
    let file = dir.write(
        "t.yaml",
        prompt_tactic(&s.everything, base, "{server: every, prompt: args-prompt}"),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    let stderr = &outcome.stderr;
    assert_eq!(outcome.code, Some(2), "{stderr}");
    assert!(
        stderr.contains("system_prompt_mcp.prompt: MCP server `every` did not give prompt `args-prompt`: the server answered with error")
            && stderr.contains("check its `arguments:`"),
        "{stderr}"
    );
}

/// The changing server on stdio.
fn changing(python: &str) -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/changing_server.py");
    format!("{{command: {}}}", list(&[python, arg(&script)]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_added_by_the_server_is_offered_from_the_next_request() {
    let Some(s) = servers("list_changed") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[("c1", "add_tool", "{}")]));
    server.push(StubReply::tool_calls(&[("c2", "added", "{}")]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-list-changed");
    let servers = format!("  ch: {}", changing(&s.python));
    let file = dir.write("t.yaml", tactic(&server.base_url(), &servers, "[ch]", ""));
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        offered_tools(&requests[0]),
        ["add_tool", "flood", "count_listings"]
    );
    assert_eq!(
        offered_tools(&requests[1]),
        ["add_tool", "flood", "count_listings", "added"],
        "listed again before the next request"
    );
    assert_eq!(tool_messages(&requests[2]), ["added `added`", "added ran"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_list_changed_costs_at_most_one_listing_per_request() {
    let Some(s) = servers("list_changed flood") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[(
        "c1",
        "flood",
        r#"{"count": 3000}"#,
    )]));
    server.push(StubReply::tool_calls(&[(
        "c2",
        "flood",
        r#"{"count": 2000}"#,
    )]));
    server.push(StubReply::tool_calls(&[("c3", "count_listings", "{}")]));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-list-flood");
    let servers = format!("  ch: {}", changing(&s.python));
    let file = dir.write("t.yaml", tactic(&server.base_url(), &servers, "[ch]", ""));
    let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
    outcome.assert_clean(0, &[]);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(
            offered_tools(request),
            ["add_tool", "flood", "count_listings"]
        );
    }
    // The start's listing, then one before each of the two requests that followed a flood.
    let results = tool_messages(&requests[3]);
    assert_eq!(results, ["sent 3000", "sent 2000", "3"], "{results:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_of_both_eras_are_used_with_their_own_handshake() {
    let Some(s) = servers("handshakes") else {
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/era_server.py");
    let dir = TempDir::new("mcp-era");
    let tactic_for = |era: &str, setting: &str, api_base: &str| {
        let servers = format!(
            "  era: {{command: {}{setting}}}",
            list(&[&s.python, arg(&script), era])
        );
        dir.write("t.yaml", tactic(api_base, &servers, "[era]", ""))
    };
    for (era, setting, version) in [
        ("modern", ", protocol: \"2026-07-28\"", "2026-07-28"),
        ("legacy", "", "2025-11-25"),
        ("legacy", ", protocol: \"2025-11-25\"", "2025-11-25"),
    ] {
        let server = StubServer::start().await.expect("stub");
        server.push(StubReply::tool_calls(&[("c1", "protocol", "{}")]));
        server.push(StubReply::text("done"));
        let file = tactic_for(era, setting, &server.base_url());
        let outcome = lllm(&["run", arg(&file), "--input", "go"]).run().await;
        outcome.assert_clean(0, &[]);
        assert_eq!(tool_messages(&server.requests()[1]), [version], "{era}");
    }
    for (era, setting, hint) in [
        (
            "modern",
            "",
            "the server speaks only the 2026-07-28 protocol: add `protocol: \"2026-07-28\"` to it",
        ),
        (
            "legacy",
            ", protocol: \"2026-07-28\"",
            "the server may speak an older protocol, with `initialize`: leave `protocol:` out",
        ),
    ] {
        let file = tactic_for(era, setting, "http://127.0.0.1:9/v1");
        let outcome = lllm(&["tools", arg(&file)]).run().await;
        assert_eq!(outcome.code, Some(1), "{}", outcome.stderr);
        assert!(
            outcome
                .stderr
                .contains("MCP server `era` did not start: the MCP handshake failed: ")
                && outcome.stderr.contains(hint),
            "{era}: {}",
            outcome.stderr
        );
    }
    let file = tactic_for("legacy", ", protocol: \"2027\"", "http://127.0.0.1:9/v1");
    let outcome = lllm(&["check", arg(&file)]).run().await;
    assert_eq!(outcome.code, Some(2), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("t.yaml:2:")
            && outcome
                .stderr
                .contains("mcp_servers.era.protocol: must be \"2025-11-25\""),
        "{}",
        outcome.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_answers_a_sample_already_answered_from_its_journal() {
    let Some(s) = servers("sampling resume") else {
        return;
    };
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::tool_calls(&[("c1", "sample_and_wait", "{}")]));
    server.push(StubReply::text("teal"));
    server.push(StubReply::text("done"));
    let dir = TempDir::new("mcp-sample-resume");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/resume_server.py");
    let servers = format!(
        "  ask: {{command: {}, sampling: true}}",
        list(&[&s.python, arg(&script)])
    );
    let file = dir.write("t.yaml", tactic(&server.base_url(), &servers, "[ask]", ""));
    let journal = dir.path("run.jsonl");
    let sampled = dir.path("sampled");
    let running = lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
    ])
    .spawn();
    let answered = (0..400).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(25));
        std::fs::read_to_string(&sampled).is_ok_and(|t| !t.is_empty())
    });
    assert!(answered, "the server got its sample");
    running.signal(nix::sys::signal::Signal::SIGINT);
    let stopped = tokio::task::spawn_blocking(move || running.wait())
        .await
        .expect("wait");
    stopped.assert_clean(130, &["stopped by SIGINT"]);
    assert_eq!(server.requests().len(), 2, "the call and the sample");
    std::fs::write(dir.path("go"), "").expect("go");
    let resumed = lllm(&["resume", arg(&journal)]).run().await;
    resumed.assert_clean(0, &[]);
    assert_eq!(resumed.stdout_text().trim(), "done");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the sample was answered from the journal, not asked again"
    );
    assert_eq!(tool_messages(&requests[2]), ["sampled: teal"]);
    assert_eq!(
        std::fs::read_to_string(&sampled).expect("sampled"),
        "teal\nteal\n",
        "the idempotent tool ran again and got the same sample"
    );
}
