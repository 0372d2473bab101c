//! Credentials never leave lllm except in the request's own headers: not in logs at any level,
//! traces, `--json` reports, dry runs, or error messages, whatever the run's outcome.

use lllm_runtime::testing::{StubReply, StubServer};

use super::support::{arg, lllm, Outcome, TempDir};

const KEY: &str = "sk-adv-3f9a1c77e0d24b1b";
const TOKEN: &str = "tok-adv-58c1e2aa90";

fn tactic(server: &str) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{server}\", api_key: \"${{ADV_KEY}}\", extra_headers: {{X-Api-Key: \"${{ADV_TOKEN}}\"}}, max_retries: 0}}\n    system_prompt: s\n"
    )
}

async fn run_with_secrets(args: &[&str]) -> Outcome {
    lllm(args)
        .env("ADV_KEY", KEY)
        .env("ADV_TOKEN", TOKEN)
        .env("LLLM_LOG", "trace")
        .run()
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_in_logs_traces_reports_or_dry_runs() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("secrets");
    let file = dir.write("t.yaml", tactic(&server.base_url()));
    let trace = dir.path("trace.jsonl");
    let answered = run_with_secrets(&[
        "run",
        arg(&file),
        "--input",
        "x",
        "--json",
        "--trace",
        arg(&trace),
    ])
    .await;
    answered
        .assert_clean(0, &[])
        .assert_never_shows(KEY)
        .assert_never_shows(TOKEN);
    let rows = std::fs::read_to_string(&trace).expect("trace");
    assert!(!rows.contains(KEY) && !rows.contains(TOKEN), "{rows}");
    // The server did get them: they are credentials, not decoration.
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(request.header("x-api-key"), Some(TOKEN));
    let dry = run_with_secrets(&["run", arg(&file), "--input", "x", "--dry-run"]).await;
    dry.assert_clean(0, &[])
        .assert_never_shows(KEY)
        .assert_never_shows(TOKEN);
    assert!(
        dry.stdout_text().contains("[redacted]"),
        "{}",
        dry.stdout_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_in_the_errors_of_a_failed_run() {
    let server = StubServer::start().await.expect("server");
    server.push(StubReply::error(401, "bad key"));
    let dir = TempDir::new("secrets-error");
    let file = dir.write("t.yaml", tactic(&server.base_url()));
    run_with_secrets(&["run", arg(&file), "--input", "x"])
        .await
        .assert_clean(1, &["401"])
        .assert_never_shows(KEY)
        .assert_never_shows(TOKEN);
    // Nobody listens on port 9: the connection error names the server, not the key.
    let unreachable = dir.write("u.yaml", tactic("http://127.0.0.1:9/v1"));
    run_with_secrets(&["run", arg(&unreachable), "--input", "x"])
        .await
        .assert_clean(1, &["127.0.0.1:9"])
        .assert_never_shows(KEY)
        .assert_never_shows(TOKEN);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_echoing_the_credentials_back_does_not_get_them_printed() {
    let server = StubServer::start().await.expect("server");
    let echo = format!("invalid credentials: authorization: Bearer {KEY}, x-api-key: {TOKEN}");
    server.push(StubReply::error(400, &echo));
    let dir = TempDir::new("secrets-echo");
    let file = dir.write("t.yaml", tactic(&server.base_url()));
    run_with_secrets(&["run", arg(&file), "--input", "x"])
        .await
        .assert_clean(1, &["400", "invalid credentials"])
        .assert_never_shows(KEY)
        .assert_never_shows(TOKEN);
}
