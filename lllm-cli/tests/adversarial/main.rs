//! The adversarial suite: `lllm` run as a user would, against hostile tactic files, servers, tools,
//! traces, terminals and signals. Every case asserts the exit code, that nothing panicked, a clear
//! message, and bounds on wall time and peak memory (see [`support::Outcome::assert_clean`]).
//!
//! Cases are grouped by class, one module each; `support` holds the bounded runner and fixtures.

mod durable;
mod fallback;
mod files;
mod http;
mod mcp;
mod paths;
mod queue;
mod replay;
mod second_round;
mod secrets;
mod serve;
mod serve_caller_tools;
mod serve_conversations;
mod serve_cors;
mod serve_records;
mod serve_runs;
mod signals;
mod skills;
mod support;
mod terminal;
mod tools;

/// The harness itself: exit codes and messages come through as they are.
mod harness {
    use std::time::Duration;

    use lllm_runtime::testing::{StubReply, StubServer};

    use super::support::{arg, lllm, TempDir};

    #[test]
    fn the_bounded_runner_reports_codes_and_messages() {
        lllm(&["--version"]).run_blocking().assert_clean(0, &[]);
        let usage = lllm(&["no-such-command"]).run_blocking();
        usage.assert_clean(2, &["no-such-command"]);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_bounded_runner_reads_the_peak_memory() {
        // A run that waits half a second for its answer is surely sampled while alive.
        let server = StubServer::start().await.expect("server");
        server.push(StubReply::text("late").delay(Duration::from_millis(500)));
        let dir = TempDir::new("harness");
        let file = dir.write(
            "t.yaml",
            format!(
                "agent_configs:\n  - name: a\n    model_name: m\n    model_args: {{api_base: \"{}\"}}\n    system_prompt: s\n",
                server.base_url()
            ),
        );
        let outcome = lllm(&["run", arg(&file), "--input", "x"]).run().await;
        outcome.assert_clean(0, &[]);
        assert!(outcome.peak_rss_mib > 0, "no memory reading");
    }
}
