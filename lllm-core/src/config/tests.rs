use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::hints::Profile;

fn env(name: &str) -> Option<String> {
    match name {
        "PORT" => Some("8123".into()),
        "KEY" => Some("sk-from-env".into()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &env)
}

fn parse_ok(text: &str) -> TacticSpec {
    match parse(text) {
        Ok(spec) => spec,
        Err(e) => panic!("expected a valid tactic, got: {e}"),
    }
}

fn parse_err(text: &str) -> String {
    match parse(text) {
        Ok(spec) => panic!("expected an error, got {spec:?}"),
        Err(e) => e.to_string(),
    }
}

const BASE: &str = r#"
global:
  model_name: hosted_vllm/Qwen/Qwen2.5-7B-Instruct
  model_args: {api_base: "http://127.0.0.1:${PORT}/v1", max_tokens: 512, extra_body: {nvext: {extra_fields: [a]}}}
  inference_hints: {profile: dynamo, priority: 5, speculative_prefill: true}
agent_configs:
  - name: planner
    system_prompt: You plan for {{ team }}.
    inference_hints: {priority: 9}
    model_args: {temperature: 0.1, extra_body: {nvext: {agent_hints: {osl: 3}}}}
  - name: critic
    system_prompt: You criticise.
    model_name: openai/gpt-4o-mini
"#;

#[test]
fn global_is_deep_merged_under_each_agent() {
    let spec = parse_ok(BASE);
    let planner = spec.agent("planner").expect("planner");
    assert_eq!(planner.model(), "hosted_vllm/Qwen/Qwen2.5-7B-Instruct");
    assert_eq!(
        planner.model_args().endpoint.api_base.as_deref(),
        Some("http://127.0.0.1:8123/v1")
    );
    assert_eq!(
        planner.model_args().endpoint.params.get("max_tokens"),
        Some(&json!(512))
    );
    assert_eq!(
        planner.model_args().endpoint.params.get("temperature"),
        Some(&json!(0.1))
    );
    assert_eq!(
        serde_json::Value::Object(planner.model_args().endpoint.extra_body.clone()),
        json!({"nvext": {"extra_fields": ["a"], "agent_hints": {"osl": 3}}})
    );
    let hints = planner.inference_hints().expect("hints");
    assert_eq!(hints.profile(), Profile::Dynamo);
    assert_eq!(hints.priority(), Some(9));
    assert_eq!(hints.speculative_prefill(), Some(true));

    let critic = spec.agent("critic").expect("critic");
    assert_eq!(critic.model(), "openai/gpt-4o-mini");
    assert_eq!(critic.inference_hints().and_then(|h| h.priority()), Some(5));
    assert!(
        !critic
            .model_args()
            .endpoint
            .params
            .contains_key("temperature"),
        "no leak between agents"
    );
    assert_eq!(
        serde_json::Value::Object(critic.model_args().endpoint.extra_body.clone()),
        json!({"nvext": {"extra_fields": ["a"]}}),
        "no leak from one agent's merge into global"
    );
    assert_eq!(critic.max_call_retries(), DEFAULT_MAX_CALL_RETRIES);
}

#[test]
fn misspelt_key_reports_line_column_and_suggestion() {
    let text = "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    modle_args: {}\n";
    let err = parse(text).expect_err("unknown key");
    assert_eq!(err.position(), Some(Position { line: 5, column: 5 }));
    let text = err.to_string();
    assert!(text.starts_with("t.yaml:5:5: "), "{text}");
    assert!(text.contains("unknown key `modle_args`"), "{text}");
    assert!(text.contains("did you mean `model_args`?"), "{text}");
}

#[test]
fn misspelt_hint_and_profile_get_suggestions() {
    let err = parse_err("global: {model_name: m, system_prompt: s, inference_hints: {prority: 1}}\nagent_configs: [{name: a}]\n");
    assert!(err.contains("did you mean `priority`?"), "{err}");
    let err = parse_err("global: {model_name: m, system_prompt: s, inference_hints: {profile: dynamoo}}\nagent_configs: [{name: a}]\n");
    assert!(err.contains("did you mean `dynamo`?"), "{err}");
    assert!(err.starts_with("t.yaml:1:"), "{err}");
}

#[test]
fn misspelt_or_reserved_model_args_report_their_own_position() {
    let text = "global:\n  model_args:\n    api_base: http://127.0.0.1:1/v1\n    max_tokns: 3\nagent_configs: [{name: a, model_name: m, system_prompt: s}]\n";
    let err = parse_err(text);
    assert!(err.starts_with("t.yaml:4:"), "{err}");
    assert!(err.starts_with("t.yaml:4:5: global.model_args.max_tokns: is not a known argument (did you mean `max_tokens`?)"), "{err}");
    let text = "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    model_args: {temperature: 0, messages: []}\n";
    let err = parse_err(text);
    assert!(err.starts_with("t.yaml:5:34: "), "{err}");
    assert!(
        err.contains("model_args.messages: is written by lllm itself"),
        "{err}"
    );
}

#[test]
fn wrong_types_and_ranges_report_position() {
    let err = parse_err("agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    max_llm_recall: lots\n");
    assert!(err.starts_with("t.yaml:5:"), "{err}");
    assert!(
        err.contains("expected a whole number of 0 or more here"),
        "{err}"
    );
    let err = parse_err("agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    inference_hints: {profile: dynamo, osl: -1}\n");
    assert!(err.starts_with("t.yaml:5:"), "{err}");
}

#[test]
fn hints_a_profile_cannot_send_are_rejected_naming_the_agent() {
    let err = parse_err("agent_configs:\n  - {name: a, model_name: m, system_prompt: s, inference_hints: {priority: 1}}\n");
    assert_eq!(
        err,
        "t.yaml:2:76: agent_configs[0] (a): inference_hints.priority: the `openai` profile cannot send `priority`; profiles that can: dynamo, vllm, sglang"
    );
}

#[test]
fn semantic_errors_name_the_field() {
    let cases = [
        ("agent_configs: []\n", "t.yaml:1:16: agent_configs: an agent is required"),
        ("agent_configs: [{model_name: m, system_prompt: s}]\n", "agent_configs[0].name"),
        ("agent_configs: [{name: a, system_prompt: s}]\n", "agent_configs[0] (a).model_name"),
        ("agent_configs: [{name: a, model_name: m}]\n", "agent_configs[0] (a).system_prompt: a system prompt is required"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, system_prompt_path: p}]\n", "not both"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s}, {name: a, model_name: m, system_prompt: s}]\n", "agent_configs[1].name: `a` is already used at t.yaml:1:24; agent names must be unique"),
        ("global: {name: x}\nagent_configs: [{name: a, model_name: m, system_prompt: s}]\n", "global.name"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, model_args: {api_key: \"${NOPE}\"}}]\n", "agent_configs[0].model_args.api_key: the environment variable `NOPE` is not set"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, model_args: {max_tokens: \"${NOPE:-x}\"}}]\n", "t.yaml:1:73: agent_configs[0] (a).model_args.max_tokens: expected a positive whole number"),
        ("agent_configs: [{name: a, model_name: m, system_prompt_path: ../secrets}]\n", "must stay inside prompts/"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: \"{{ x\"}]\n", "not a valid template"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, tools: [{name: w c, description: d, command: [wc]}]}]\n", "agent_configs[0] (a).tools[0].name: `w c` may only contain"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, tools: [{name: w, description: d, command: []}]}]\n", "tools[0].command: must name a program"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, tools: [{name: w, description: d, command: [wc], parameters: {type: array}}]}]\n", "tools[0].parameters: must be an object schema"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, tools: [{name: w, description: d, command: [wc]}, {name: w, description: e, command: [wc]}]}]\n", "tools[1].name: `w` is already used at t.yaml:1:75; tool names must be unique"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s, output_schema: {type: 12}}]\n", "output_schema: is not a valid JSON Schema"),
        ("agent_configs: [{name: a, model_name: m, system_prompt: s}]\nsteps: []\n", "t.yaml:2:8: steps: a list of steps may not be empty"),
        ("   \n", "the file is empty"),
    ];
    for (text, expected) in cases {
        let err = parse_err(text);
        assert!(err.contains(expected), "for {text:?}: {err}");
        assert!(err.starts_with("t.yaml"), "{err}");
    }
}

#[test]
fn command_tools_and_output_schema_load() {
    let spec = parse_ok("agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    output_schema: {type: object, required: [n]}\n    tools:\n      - name: word_count\n        description: Count words\n        parameters: {type: object, properties: {text: {type: string}}, required: [text]}\n        command: [wc, -w]\n        timeout_s: 2\n");
    let agent = &spec.agents()[0];
    assert_eq!(agent.tools().len(), 1);
    assert_eq!(agent.tools()[0].command, ["wc", "-w"]);
    assert_eq!(
        agent.tools()[0].max_output_bytes,
        crate::tool::DEFAULT_MAX_OUTPUT_BYTES
    );
    assert_eq!(
        agent.output_schema().map(crate::Schema::value),
        Some(&json!({"type": "object", "required": ["n"]}))
    );
    let err = parse_err("agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    tools:\n      - name: w\n        descripton: d\n        command: [wc]\n");
    assert!(err.starts_with("t.yaml:7:9: "), "{err}");
    assert!(err.contains("did you mean `description`?"), "{err}");
}

#[test]
fn invalid_yaml_and_bytes_are_errors_not_panics() {
    let err = parse_err("agent_configs: [\n");
    assert!(err.starts_with("t.yaml:"), "{err}");
    let err = parse_tactic(
        b"agent_configs:\n  - name: \xff\n",
        Path::new("t.yaml"),
        &env,
    )
    .expect_err("not utf-8")
    .to_string();
    assert_eq!(
        err,
        "t.yaml:2:11: the file is not valid UTF-8; save it as UTF-8"
    );
}

#[test]
fn numeric_model_args_can_come_from_the_environment() {
    let spec = parse_ok("agent_configs: [{name: a, model_name: m, system_prompt: s, model_args: {max_tokens: \"${PORT}\", timeout: \"${TO:-2.5}\"}}]\n");
    let args = &spec.agents()[0].model_args();
    assert_eq!(args.output_limit(), Some(8123));
    assert_eq!(
        args.endpoint.timeout,
        Some(std::time::Duration::from_millis(2500))
    );
}

#[test]
fn api_key_from_env_never_shows_in_debug_output() {
    let spec = parse_ok("agent_configs: [{name: a, model_name: m, system_prompt: s, model_args: {api_key: \"${KEY}\", extra_headers: {X-Api-Key: \"${KEY}\"}}}]\n");
    let agent = &spec.agents()[0];
    assert_eq!(
        agent
            .model_args()
            .endpoint
            .api_key
            .as_ref()
            .map(|k| k.expose()),
        Some("sk-from-env")
    );
    assert!(!format!("{spec:?}").contains("sk-from-env"));
}

#[test]
fn system_prompt_path_resolves_next_to_the_file() {
    let dir = std::env::temp_dir().join(format!("lllm-config-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("prompts/planner")).expect("dir");
    std::fs::write(dir.join("prompts/planner/system.md"), "Plan {{ goal }}").expect("write");
    let file: PathBuf = dir.join("tactic.yaml");
    let text = "agent_configs: [{name: a, model_name: m, system_prompt_path: planner/system}]\n";
    let spec = parse_tactic(text.as_bytes(), &file, &env).expect("loads");
    assert_eq!(
        spec.agents()[0].system_prompt().template(),
        "Plan {{ goal }}"
    );
    let missing = "agent_configs: [{name: a, model_name: m, system_prompt_path: nope}]\n";
    let err = parse_tactic(missing.as_bytes(), &file, &env)
        .expect_err("missing")
        .to_string();
    assert!(
        err.contains("system_prompt_path: prompt `nope` not found"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn priority_auto_is_read_and_overrides_a_global_number_per_agent() {
    let spec = parse(
        "global: {model_name: m, system_prompt: s, inference_hints: {profile: dynamo, priority: 4}}\nagent_configs:\n  - {name: a, inference_hints: {priority: auto}}\n  - {name: b}\n",
    )
    .expect("valid");
    let hints = |i: usize| spec.agents()[i].inference_hints().cloned().expect("hints");
    assert!(hints(0).priority_is_auto());
    assert_eq!(
        hints(1).priority(),
        Some(4),
        "a written number keeps its meaning"
    );
}

#[test]
fn a_priority_that_is_neither_a_number_nor_auto_is_refused_where_it_is_written() {
    let err = parse_err("agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: s\n    inference_hints: {profile: dynamo, priority: urgent}\n");
    assert!(err.starts_with("t.yaml:5:"), "{err}");
    assert!(err.contains("an integer or `auto`"), "{err}");
    let err = parse_err("agent_configs:\n  - {name: a, model_name: m, system_prompt: s, inference_hints: {priority: auto}}\n");
    assert_eq!(
        err,
        "t.yaml:2:76: agent_configs[0] (a): inference_hints.priority: the `openai` profile cannot send `priority`; profiles that can: dynamo, vllm, sglang"
    );
}

#[test]
fn the_schema_takes_auto_for_priority() {
    let schema = tactic_schema();
    let text = schema.to_string();
    assert!(text.contains("\"const\":\"auto\""), "{text}");
}
