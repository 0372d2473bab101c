//! `model_args.fallback`, `max_in_flight` and `max_parallel_tools` in tactic files: merged from
//! `global`, checked with the field and position named, and their credentials known as secrets.

use std::path::Path;

use super::*;
use crate::Profile;

fn load(text: &str) -> Result<crate::TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None)
}

#[test]
fn fallbacks_limits_and_parallel_tools_load_from_global_and_agents() {
    let spec = load(
        "global:
  model_name: m
  model_args:
    api_base: http://127.0.0.1:8000/v1
    max_in_flight: 4
    fallback:
      - {api_base: http://127.0.0.1:8001/v1, model_name: small, profile: vllm, api_key: sk-fallback-key}
  max_parallel_tools: 3
agent_configs:
  - {name: a, system_prompt: hi}
  - {name: b, system_prompt: hi, max_parallel_tools: 1, model_args: {max_in_flight: 1}}
",
    )
    .expect("loads");
    let a = &spec.agents()[0];
    assert_eq!(a.max_parallel_tools(), 3);
    assert_eq!(a.model_args().endpoint.max_in_flight, Some(4));
    let entry = &a.model_args().fallback[0];
    assert_eq!(entry.model.as_deref(), Some("small"));
    assert_eq!(entry.profile, Some(Profile::Vllm));
    let b = &spec.agents()[1];
    assert_eq!(b.max_parallel_tools(), 1);
    assert_eq!(b.model_args().endpoint.max_in_flight, Some(1));
    assert_eq!(
        b.model_args().fallback.len(),
        1,
        "global's fallbacks reach b"
    );
    assert!(spec.secret_values().contains(&"sk-fallback-key".to_owned()));
}

#[test]
fn bad_fallbacks_and_limits_name_the_field_and_line() {
    for (text, field, words) in [
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    model_args: {fallback: [{model_name: small}]}\n",
            "model_args.fallback[0].api_base",
            "is required",
        ),
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    model_args: {fallback: [{api_base: \"http://h/v1\", profile: tgi}]}\n",
            "model_args.fallback[0].profile",
            "dynamo, vllm",
        ),
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    model_args: {max_in_flight: 0}\n",
            "model_args.max_in_flight",
            "1 to 100000",
        ),
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    max_parallel_tools: 65\n",
            "max_parallel_tools",
            "1 to 64",
        ),
    ] {
        let error = load(text).expect_err(field);
        let shown = error.to_string();
        assert!(shown.contains(field), "{shown}");
        assert!(shown.contains(words), "{shown}");
        assert_eq!(error.position().map(|p| p.line), Some(5), "{shown}");
    }
}
