//! `context:` in tactic files: merged from `global` field by field, checked with the field and
//! position named.

use std::path::Path;

use super::*;
use crate::{SessionOnCompaction, Window};

fn load(text: &str) -> Result<crate::TacticSpec, ConfigError> {
    parse_tactic(text.as_bytes(), Path::new("t.yaml"), &|_| None)
}

#[test]
fn an_agent_overrides_global_context_field_by_field() {
    let spec = load(
        "global:\n  model_name: m\n  context: {window: 32768, keep_last: 4}\nagent_configs:\n  - {name: a, system_prompt: hi, context: {compact_at: 0.6, session: rotate}}\n  - {name: b, system_prompt: hi}\n  - {name: c, system_prompt: hi, context: {window: auto}}\n",
    )
    .expect("loads");
    let a = spec.agents()[0].context().expect("a context");
    assert_eq!(a.window(), Window::Tokens(32768));
    assert_eq!(
        (a.compact_at(), a.keep_last(), a.session()),
        (0.6, 4, SessionOnCompaction::Rotate)
    );
    let b = spec.agents()[1].context().expect("b context");
    assert_eq!((b.compact_at(), b.keep_last()), (0.8, 4));
    let c = spec.agents()[2].context().expect("c context");
    assert!(matches!(c.window(), Window::Auto(_)));
}

#[test]
fn bad_context_settings_name_the_field_and_line() {
    for (text, field, words) in [
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    context: {window: 1000, compact_at: 1.5}\n",
            "context.compact_at",
            "fraction",
        ),
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    context: {keep_last: 3}\n",
            "context.window",
            "window",
        ),
        (
            "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    context: {window: 0}\n",
            "context.window",
            "not `0`",
        ),
    ] {
        let error = load(text).expect_err(field);
        let shown = error.to_string();
        assert!(shown.contains(field), "{shown}");
        assert!(shown.contains(words), "{shown}");
        assert_eq!(error.position().map(|p| p.line), Some(5), "{shown}");
    }
    let typo = load("agent_configs:\n  - {name: a, model_name: m, system_prompt: hi, context: {window: 9, keep: 2}}\n")
        .expect_err("unknown key");
    assert!(typo.to_string().contains("keep"), "{typo}");
    let words = load(
        "agent_configs:\n  - {name: a, model_name: m, system_prompt: hi, context: {window: big}}\n",
    )
    .expect_err("not a window");
    assert!(
        words.to_string().contains("context length in tokens"),
        "{words}"
    );
}

/// The error of `context: {VALUE}` on agent `a` (line 5 of the file).
fn refused(context: &str) -> ConfigError {
    let text = format!(
        "agent_configs:\n  - name: a\n    model_name: m\n    system_prompt: hi\n    context: {context}\n"
    );
    load(&text).expect_err(context)
}

#[test]
fn every_bad_value_names_its_field_what_it_allows_and_where_it_is() {
    let window = "context.window: must be the model's context length in tokens (a whole number from 1 to 4294967295), or `auto`, not";
    let compact = "context.compact_at: must be a fraction of the window above 0 and at most 1 (0.8 compacts at 80 %), not";
    let keep = "context.keep_last: must be a whole number of messages from 0 to 10000, not";
    let session = "context.session: must be `keep` or `rotate`, not";
    for (context, column, expected) in [
        ("{window: -5}", 23, format!("{window} `-5`")),
        ("{window: 0}", 23, format!("{window} `0`")),
        ("{window: 4294967296}", 23, format!("{window} `4294967296`")),
        ("{window: 1.5}", 23, format!("{window} `1.5`")),
        ("{window: .inf}", 23, format!("{window} `.inf`")),
        ("{window: .nan}", 23, format!("{window} `.nan`")),
        ("{window: [1]}", 23, format!("{window} a list")),
        ("{window: {a: 1}}", 23, format!("{window} a mapping")),
        ("{window: big}", 23, format!("{window} `big`")),
        (
            "{window: 9, compact_at: -0.5}",
            38,
            format!("{compact} `-0.5`"),
        ),
        ("{window: 9, compact_at: 0}", 38, format!("{compact} `0`")),
        (
            "{window: 9, compact_at: 1.5}",
            38,
            format!("{compact} `1.5`"),
        ),
        (
            "{window: 9, compact_at: .nan}",
            38,
            format!("{compact} `.nan`"),
        ),
        (
            "{window: 9, compact_at: -.inf}",
            38,
            format!("{compact} `-.inf`"),
        ),
        (
            "{window: 9, compact_at: [0.5]}",
            38,
            format!("{compact} a list"),
        ),
        (
            "{window: 9, compact_at: half}",
            38,
            format!("{compact} `half`"),
        ),
        ("{window: 9, keep_last: -1}", 37, format!("{keep} `-1`")),
        (
            "{window: 9, keep_last: 10001}",
            37,
            format!("{keep} `10001`"),
        ),
        ("{window: 9, keep_last: 2.5}", 37, format!("{keep} `2.5`")),
        ("{window: 9, keep_last: .inf}", 37, format!("{keep} `.inf`")),
        (
            "{window: 9, keep_last: {n: 1}}",
            37,
            format!("{keep} a mapping"),
        ),
        (
            "{window: 9, session: [keep]}",
            35,
            format!("{session} a list"),
        ),
        ("{window: 9, session: rot}", 35, format!("{session} `rot`")),
        ("{window: 9, session: 1}", 35, format!("{session} `1`")),
    ] {
        let error = refused(context);
        assert_eq!(
            error.to_string(),
            format!("t.yaml:5:{column}: agent_configs[0] (a): {expected}"),
            "{context}"
        );
        assert!(
            matches!(error.kind(), ConfigErrorKind::Context(_)),
            "{context}"
        );
    }
}

#[test]
fn a_context_that_is_not_a_mapping_names_the_section_and_its_keys() {
    for (context, kind) in [
        ("[1, 2]", "a list"),
        ("8192", "a number"),
        ("auto", "text"),
        (".nan", "a number"),
    ] {
        let error = refused(context);
        assert_eq!(
            error.to_string(),
            format!("t.yaml:5:14: agent_configs[0] (a).context: must be a mapping of `window`, `compact_at`, `keep_last`, `session`, not {kind}"),
        );
    }
}

#[test]
fn good_values_are_read_alike_as_numbers_and_as_text() {
    let spec = load("agent_configs:\n  - {name: a, model_name: m, system_prompt: hi, context: {window: '4096', compact_at: 1, keep_last: 0, session: keep}}\n")
        .expect("loads");
    let policy = spec.agents()[0].context().expect("context");
    assert_eq!(policy.window(), Window::Tokens(4096));
    assert_eq!((policy.compact_at(), policy.keep_last()), (1.0, 0));
}
