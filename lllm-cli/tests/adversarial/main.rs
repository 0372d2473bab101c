//! The adversarial suite: `lllm` run as a user would, against hostile tactic files, servers, tools,
//! traces, terminals and signals. Every case asserts the exit code, that nothing panicked, a clear
//! message, and bounds on wall time and peak memory (see [`support::Outcome::assert_clean`]).
//!
//! Cases are grouped by class, one module each; `support` holds the bounded runner and fixtures.

mod files;
mod support;

/// The harness itself: exit codes and messages come through as they are.
mod harness {
    use super::support::lllm;

    #[test]
    fn the_bounded_runner_reports_codes_and_messages() {
        lllm(&["--version"]).run_blocking().assert_clean(0, &[]);
        let usage = lllm(&["no-such-command"]).run_blocking();
        usage.assert_clean(2, &["no-such-command"]);
    }
}
