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

/// The value at `path` of the body [`merge_body`] would make of `standard`, `hints` and `extra_body`,
/// found without making it (nothing is cloned): what a reader of one field of a request needs.
///
/// For a path that ends at a scalar or an array, the value is exactly the merged body's. For one
/// that ends at an object several layers merge into, it is the top layer's part of it.
pub fn merged_value<'a>(
    standard: &'a Map<String, Value>,
    hints: &'a Map<String, Value>,
    extra_body: &'a Map<String, Value>,
    path: &[&str],
) -> Option<&'a Value> {
    let mut layers = [Some(standard), Some(hints), Some(extra_body)];
    for (depth, key) in path.iter().enumerate() {
        let [standard, hints, extra] = layers.map(|layer| layer.and_then(|m| m.get(*key)));
        // `merge_under`: the standard value wins; two objects merge.
        let hints = match (standard, hints) {
            (Some(s), Some(h)) if s.is_object() && h.is_object() => Some(h),
            (Some(_), _) => None,
            (None, h) => h,
        };
        // `deep_merge`: the user's value wins; two objects merge.
        let under_is_object = standard.or(hints).is_some_and(Value::is_object);
        let (standard, hints) = match extra {
            Some(e) if !(e.is_object() && under_is_object) => (None, None),
            _ => (standard, hints),
        };
        if depth + 1 == path.len() {
            return extra.or(standard).or(hints);
        }
        layers = [standard, hints, extra].map(|v| v.and_then(Value::as_object));
    }
    None
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
    fn a_merged_value_is_the_merged_bodys_without_merging() {
        let cases = [
            (
                json!({"max_tokens": 24, "priority": 2}),
                json!({"priority": -5, "nvext": {"agent_hints": {"priority": 5, "osl": 24}}}),
                json!({"nvext": {"extra_fields": ["w"], "agent_hints": {"priority": 1}}}),
            ),
            (
                json!({"nvext": 3}),
                json!({"nvext": {"agent_hints": {"priority": 5}}, "cache_salt": "a"}),
                json!({}),
            ),
            (
                json!({"nvext": {"agent_hints": {"osl": 9}}}),
                json!({"nvext": {"agent_hints": {"priority": 5, "osl": 1}}}),
                json!({"nvext": {"agent_hints": [1]}, "cache_salt": "b"}),
            ),
            (
                json!({}),
                json!({"nvext": {"agent_hints": {"priority": 5}}}),
                json!({"nvext": {"agent_hints": {"strict_priority": 2}}, "priority": null}),
            ),
            (
                json!({"nvext": {"cache_salt": "s"}}),
                json!({"nvext": {"agent_hints": {"priority": 5}}}),
                json!({"nvext": "gone"}),
            ),
        ];
        let paths: [&[&str]; 9] = [
            &["priority"],
            &["cache_salt"],
            &["max_tokens"],
            &["nvext", "cache_salt"],
            &["nvext", "extra_fields"],
            &["nvext", "agent_hints", "priority"],
            &["nvext", "agent_hints", "osl"],
            &["nvext", "agent_hints", "strict_priority"],
            &["nvext", "agent_hints", "priority", "deeper"],
        ];
        for (standard, hints, extra) in cases {
            let (standard, hints, extra) = (obj(standard), obj(hints), obj(extra));
            let merged = Value::Object(merge_body(standard.clone(), hints.clone(), extra.clone()));
            for path in paths {
                let pointer = format!("/{}", path.join("/"));
                assert_eq!(
                    merged_value(&standard, &hints, &extra, path),
                    merged.pointer(&pointer),
                    "{pointer} in {merged}"
                );
            }
        }
    }

    #[test]
    fn arrays_and_scalars_are_replaced_whole() {
        let mut base = obj(json!({"stop": ["a", "b"], "n": {"x": 1}}));
        deep_merge(&mut base, obj(json!({"stop": ["c"], "n": 3})));
        assert_eq!(Value::Object(base), json!({"stop": ["c"], "n": 3}));
    }
}
