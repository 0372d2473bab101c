//! Fallback endpoints and admission against hostile servers: every endpoint failing, absurd
//! `Retry-After` values, a fallback echoing its credentials back, and settings out of range.
//! Each run ends at once with a clear message and shows no credential.

use std::time::Duration;

use lllm_runtime::testing::{StubReply, StubServer};

use super::support::{arg, lllm, TempDir};

const SPARE_KEY: &str = "sk-adv-spare-7d1e90aa";

fn tactic(primary: &str, spare: &str) -> String {
    format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{primary}\", max_retry_after: 5, fallback: [{{api_base: \"{spare}\", api_key: \"${{SPARE_KEY}}\"}}]}}\n    max_call_retries: 1\n    system_prompt: s\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn every_endpoint_failing_ends_the_run_at_once_naming_the_last_failure() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    // Absurd waits: a year, and a number too large for any clock.
    primary.answer_unscripted(
        Duration::ZERO,
        Some(StubReply::error(429, "busy").header("retry-after", "31536000")),
    );
    spare.answer_unscripted(
        Duration::ZERO,
        Some(StubReply::error(429, "busy").header("retry-after", "99999999999999999999")),
    );
    let dir = TempDir::new("fallback-all-fail");
    let file = dir.write("t.yaml", tactic(&primary.base_url(), &spare.base_url()));
    lllm(&["run", arg(&file), "--input", "x"])
        .env("SPARE_KEY", SPARE_KEY)
        .time_limit(Duration::from_secs(10))
        .run()
        .await
        .assert_clean(1, &["429", "3 attempt(s)"])
        .assert_never_shows(SPARE_KEY);
    // A year is longer than max_retry_after: on to the spare at once. The spare's wait is no
    // number a clock holds, so it is read as none: one retry after a short backoff, then the end.
    assert_eq!(primary.requests().len(), 1, "nothing waits for a year");
    assert_eq!(
        spare.requests().len(),
        2,
        "max_call_retries: 1, and no loop"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fallback_that_echoes_its_key_back_does_not_get_it_printed() {
    let (primary, spare) = (
        StubServer::start().await.expect("stub"),
        StubServer::start().await.expect("stub"),
    );
    primary.answer_unscripted(Duration::ZERO, Some(StubReply::error(503, "overloaded")));
    spare.answer_unscripted(
        Duration::ZERO,
        Some(StubReply::error(
            401,
            &format!("bad key: Bearer {SPARE_KEY}"),
        )),
    );
    let dir = TempDir::new("fallback-echo");
    let file = dir.write("t.yaml", tactic(&primary.base_url(), &spare.base_url()));
    lllm(&["run", arg(&file), "--input", "x"])
        .env("SPARE_KEY", SPARE_KEY)
        .env("LLLM_LOG", "trace")
        .run()
        .await
        .assert_clean(1, &["401"])
        .assert_never_shows(SPARE_KEY);
    // A 401 is the request's fault: not retried, not sent on.
    assert_eq!(spare.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn out_of_range_settings_are_refused_with_their_field_before_any_request() {
    let server = StubServer::start().await.expect("stub");
    let dir = TempDir::new("fallback-settings");
    for (args, field) in [
        ("{max_in_flight: 1000000}", "max_in_flight"),
        ("{max_in_flight: -3}", "max_in_flight"),
        ("{max_retry_after: 1e300}", "max_retry_after"),
        (
            "{fallback: [{api_base: \"http://user:pw-adv@127.0.0.1:1/v1\", fallback: []}]}",
            "fallback[0].fallback",
        ),
        ("{fallback: \"http://127.0.0.1:1/v1\"}", "fallback"),
    ] {
        let file = dir.write(
            "t.yaml",
            format!(
                "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{}\", {}}}\n    system_prompt: s\n",
                server.base_url(),
                &args[1..args.len() - 1]
            ),
        );
        lllm(&["run", arg(&file), "--input", "x"])
            .run()
            .await
            .assert_clean(2, &[field, "t.yaml:4"])
            .assert_never_shows("pw-adv");
    }
    assert!(server.requests().is_empty());
}
