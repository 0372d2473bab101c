//! The coding harnesses, each a two-turn conversation of its own command line: OpenCode (`run`,
//! then `run --continue`) and Codex CLI (`exec`, then `exec resume --last`).

use std::path::Path;
use std::process::{Command, Output};

use super::{run_client, Conversation};
use crate::serve::{client, codex, codex_config};

/// The turn's process ended well and printed the scripted answer.
fn assert_turn(conversation: &Conversation, test: &str, turn: usize, output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let context = format!(
        "{test}, turn {turn}: stdout:\n{stdout}\nstderr:\n{}\nlllm serve:\n{}",
        String::from_utf8_lossy(&output.stderr),
        conversation.serving.stderr.lock().expect("log")
    );
    assert!(output.status.success(), "{context}");
    assert!(
        stdout.lines().any(|l| l.trim() == format!("answer {turn}")),
        "{context}"
    );
}

/// OpenCode's configuration: `lllm serve` as an OpenAI-compatible provider, no title request (it
/// would be a second conversation of its own through the tactic).
pub(super) fn opencode_config(api: &str) -> String {
    serde_json::json!({
        "autoupdate": false,
        "share": "disabled",
        "provider": {"lllm": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "lllm serve",
            "options": {"baseURL": api, "apiKey": "unused-on-loopback"},
            "models": {"helper": {"name": "helper"}}
        }},
        "model": "lllm/helper",
        "agent": {"title": {"disable": true}}
    })
    .to_string()
}

/// `opencode run ARGS` with its home, config and data under `home`, from `work`, offline (no
/// update check, no model list, no plugin install from npm).
pub(super) fn opencode(program: &str, home: &Path, work: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command
        .arg("run")
        .args(args)
        .current_dir(work)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("OPENCODE_CONFIG", home.join("opencode.json"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
        .env("npm_config_offline", "true")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn opencode_run_and_continue_is_one_session_with_one_growing_prefix() {
    let test = "opencode";
    let Some(program) = client("LLLM_OPENCODE", test) else {
        return;
    };
    let conversation = Conversation::start("serve-opencode", 2).await;
    let (home, work) = (conversation.dir.path("home"), conversation.dir.path("work"));
    std::fs::create_dir_all(&work).expect("work");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("opencode.json"),
        opencode_config(&conversation.api()),
    )
    .expect("config");
    let first = run_client(opencode(&program, &home, &work, &["question 1"])).await;
    assert_turn(&conversation, test, 1, &first);
    let second = run_client(opencode(
        &program,
        &home,
        &work,
        &["--continue", "question 2"],
    ))
    .await;
    assert_turn(&conversation, test, 2, &second);
    conversation.assert_one_session_one_prefix(test);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_exec_and_resume_is_one_session_with_one_growing_prefix() {
    let test = "codex";
    let Some(program) = client("LLLM_CODEX", test) else {
        return;
    };
    let conversation = Conversation::start("serve-codex-tool", 2).await;
    let (home, work) = (
        conversation.dir.path("codex-home"),
        conversation.dir.path("work"),
    );
    std::fs::create_dir_all(&work).expect("work");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        codex_config(&conversation.serving.base),
    )
    .expect("config");
    let turns: [&[&str]; 2] = [&["question 1"], &["resume", "--last", "question 2"]];
    for (turn, args) in turns.into_iter().enumerate() {
        let (program, home, work) = (program.clone(), home.clone(), work.clone());
        let output = tokio::task::spawn_blocking(move || codex(&program, &home, &work, args))
            .await
            .expect("joined");
        assert_turn(&conversation, test, turn + 1, &output);
    }
    conversation.assert_one_session_one_prefix(test);
}
