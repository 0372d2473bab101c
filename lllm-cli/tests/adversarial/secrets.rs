//! Credentials never leave lllm except in the request's own headers: not in logs at any level,
//! traces, `--json` reports, dry runs, or error messages, whatever the run's outcome.

use lllm_runtime::testing::{StubReply, StubServer};

use super::support::{arg, lllm, Outcome, TempDir};

const KEY: &str = "sk-adv-3f9a1c77e0d24b1b";
const TOKEN: &str = "tok-adv-58c1e2aa90";

fn tactic(server: &str) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{server}\", api_key: \"${{ADV_KEY}}\", extra_headers: {{X-Api-Key: \"${{ADV_TOKEN}}\"}}}}\n    max_call_retries: 0\n    system_prompt: s\n"
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

/// Every form of the credentials in a URL: the password, `user:password`, and the base64 of the
/// `Authorization: Basic` value an HTTP client derives from them.
fn url_credential_forms(user: &str, password: &str, basic: &str) -> [String; 4] {
    [
        password.to_owned(),
        format!("{user}:{password}"),
        basic.to_owned(),
        format!("Basic {basic}"),
    ]
}

/// Credentials written into the OTLP endpoint: not in the message that refuses an endpoint that is
/// not a URL (nor its query), nor anywhere when the collector cannot be reached, at any log level.
#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_the_otlp_endpoint_are_never_shown() {
    let server = StubServer::start().await.expect("server");
    let dir = TempDir::new("secrets-otlp");
    let file = dir.write("t.yaml", tactic(&server.base_url()));
    let forms = url_credential_forms(
        "otel-user",
        "otel-pass-4e1f77",
        "b3RlbC11c2VyOm90ZWwtcGFzcy00ZTFmNzc=",
    );
    let cases = [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://otel-user:otel-pass-4e1f77@exa mple.invalid:4318",
            "OTEL_EXPORTER_OTLP_ENDPOINT (http://[redacted]@exa mple.invalid:4318) is not a usable http(s) URL",
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://otel-user:otel-pass-4e1f77@[zz/v1/traces?q=query-secret-81",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (http://[redacted]@[zz/v1/traces?[redacted]) is not a usable http(s) URL",
        ),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://otel-user:otel-pass-4e1f77@127.0.0.1:9",
            "cannot send spans to the OpenTelemetry collector",
        ),
    ];
    for (variable, endpoint, message) in cases {
        let mut run = lllm(&["run", arg(&file), "--input", "x"])
            .env("ADV_KEY", KEY)
            .env("ADV_TOKEN", TOKEN)
            .env(variable, endpoint)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            .env("LLLM_LOG", "trace");
        for other in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ] {
            if other != variable {
                run.command().env_remove(other);
            }
        }
        let outcome = run.run().await;
        outcome
            .assert_clean(0, &[message])
            .assert_never_shows("query-secret-81");
        for form in &forms {
            outcome.assert_never_shows(form);
        }
    }
}

/// Credentials in an `api_base` URL reach the server as `Authorization: Basic <base64>`; a server
/// that quotes its request back gets none of their forms printed.
#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_the_api_base_quoted_back_are_never_shown() {
    use lllm_runtime::testing::{HostileReply, HostileServer};

    let echo = HostileServer::start(HostileReply::EchoHead { status: 400 })
        .await
        .expect("server");
    let dir = TempDir::new("secrets-api-base");
    let base = format!("http://bob:base-pass-6b0c22@{}/v1", echo.addr());
    // No api_key: the URL's credentials are the request's.
    let file = dir.write(
        "t.yaml",
        format!(
            "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{base}\"}}\n    max_call_retries: 0\n    system_prompt: s\n"
        ),
    );
    let outcome = lllm(&["run", arg(&file), "--input", "x"])
        .env("LLLM_LOG", "trace")
        .run()
        .await;
    outcome.assert_clean(1, &["400"]);
    for form in url_credential_forms("bob", "base-pass-6b0c22", "Ym9iOmJhc2UtcGFzcy02YjBjMjI=") {
        outcome.assert_never_shows(&form);
    }
    let received = String::from_utf8_lossy(&echo.received()[0]).into_owned();
    assert!(
        received.contains("base-pass") || received.contains("Ym9iOmJhc2UtcGFzcy02YjBjMjI="),
        "the server was given the credentials: {received}"
    );
}
