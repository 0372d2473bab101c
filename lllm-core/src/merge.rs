//! Merging hint fields under the user's explicit headers and body ("explicit wins").

use serde_json::{Map, Value};

/// The value of header `name` (any case) in a list of headers.
pub fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Hint headers with the user's headers over them: a user header replaces every hint header of the same
/// name in any case, and no name is sent twice (among the user's own, the last one wins).
pub fn merge_headers(
    hints: &[(String, String)],
    user: &[(String, String)],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = hints
        .iter()
        .filter(|(name, _)| !user.iter().any(|(u, _)| u.eq_ignore_ascii_case(name)))
        .cloned()
        .collect();
    for (name, value) in user {
        match out.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some(slot) => *slot = (name.clone(), value.clone()),
            None => out.push((name.clone(), value.clone())),
        }
    }
    out
}

/// Merges `over` into `base`: objects merge key by key, recursively; anything else in `over` (scalars,
/// arrays, null) replaces what `base` had.
pub fn deep_merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                deep_merge(existing, incoming);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Fills `base` with what `defaults` has and `base` lacks, recursively for objects; `base` wins at every
/// leaf.
pub fn merge_under(base: &mut Map<String, Value>, defaults: Map<String, Value>) {
    for (key, value) in defaults {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                merge_under(existing, incoming);
            }
            (Some(_), _) => {}
            (None, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The body of a request: the standard fields, then hint fields only where the standard fields leave a
/// gap (so hints never touch `model`, `messages`, `tools` or a parameter the user set), then the user's
/// `extra_body` over everything.
pub fn merge_body(
    mut standard: Map<String, Value>,
    hints: Map<String, Value>,
    extra_body: Map<String, Value>,
) -> Map<String, Value> {
    merge_under(&mut standard, hints);
    deep_merge(&mut standard, extra_body);
    standard
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn user_header_in_other_case_replaces_hint_once() {
        let merged = merge_headers(
            &pairs(&[("x-session-id", "hint"), ("x-parent-session-id", "p")]),
            &pairs(&[("X-Session-ID", "mine"), ("x-team", "a"), ("X-TEAM", "b")]),
        );
        assert_eq!(
            merged,
            pairs(&[
                ("x-parent-session-id", "p"),
                ("X-Session-ID", "mine"),
                ("X-TEAM", "b")
            ])
        );
    }

    #[test]
    fn body_merge_keeps_both_sides_and_user_wins_per_leaf() {
        let body = merge_body(
            obj(json!({"model": "m", "messages": [], "max_tokens": 24})),
            obj(
                json!({"nvext": {"agent_hints": {"priority": 5, "osl": 24}}, "model": "hint-model"}),
            ),
            obj(json!({"nvext": {"extra_fields": ["worker_id"], "agent_hints": {"priority": 1}}})),
        );
        assert_eq!(
            Value::Object(body),
            json!({"model": "m", "messages": [], "max_tokens": 24, "nvext": {
                "extra_fields": ["worker_id"], "agent_hints": {"priority": 1, "osl": 24}}})
        );
    }

    #[test]
    fn arrays_and_scalars_are_replaced_whole() {
        let mut base = obj(json!({"stop": ["a", "b"], "n": {"x": 1}}));
        deep_merge(&mut base, obj(json!({"stop": ["c"], "n": 3})));
        assert_eq!(Value::Object(base), json!({"stop": ["c"], "n": 3}));
    }
}
