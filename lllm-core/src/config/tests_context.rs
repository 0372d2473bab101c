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
            "no window",
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
