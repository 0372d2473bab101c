//! What `lllm serve` says as it starts: the tactics whose agents send no session downstream (no
//! `inference_hints`), so that an operator learns it before a router sees strangers.

use crate::support::{arg, Serving, TempDir};

#[test]
fn the_start_up_line_names_the_tactics_that_send_no_session_downstream() {
    let dir = TempDir::new("serve-sessionless");
    let hinted = dir.write(
        "hinted.yaml",
        "global: {model_name: m, inference_hints: {profile: dynamo}}\nagent_configs: [{name: a, system_prompt: s}]\n",
    );
    let bare = dir.write(
        "bare.yaml",
        "global: {model_name: m}\nagent_configs: [{name: solo, system_prompt: s}]\n",
    );
    let mixed = dir.write(
        "mixed.yaml",
        "global: {model_name: m}\nagent_configs:\n  - {name: lead, system_prompt: s, inference_hints: {profile: dynamo}}\n  - {name: helper, system_prompt: s}\n",
    );
    let state = dir.path("state");
    let serving = Serving::start(
        &[
            arg(&hinted),
            arg(&bare),
            arg(&mixed),
            "--state",
            arg(&state),
        ],
        &[],
    );
    let log = serving.stderr.lock().expect("log").clone();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("downstream")).collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(
        lines[0]
            .starts_with("lllm: bare sends no session downstream (without inference_hints: solo)"),
        "{log}"
    );
    assert!(lines[1].starts_with("lllm: mixed sends no session from some agents downstream (without inference_hints: helper)"), "{log}");
    assert!(!log.contains("hinted sends"), "{log}");
}
