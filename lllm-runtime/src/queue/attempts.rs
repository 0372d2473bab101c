//! A batch's items as attempts on the queue, each named by what it asks.

use std::collections::HashMap;

use super::{QueuedItem, TacticSha};
use crate::engine::batch::BatchItem;

/// The items of one batch as they go on the queue: each with its attempt number (the failed
/// attempts its output has), the batch's variables under its own, and its key, the SHA-256 of its
/// tactic, id, attempt, input and variables. JetStream deduplicates an item and its result by that
/// key and the batch takes the result of that key only, so a later batch that reuses an id with
/// another input is another item and gets its own answer, never the earlier one's.
#[derive(Debug)]
pub struct Attempts {
    tactic: TacticSha,
    items: Vec<QueuedItem>,
}

impl Attempts {
    /// `items` for the tactic with SHA-256 `tactic`, each as attempt `rounds[id]` (0 when absent);
    /// `vars` are every item's (its own win).
    pub fn new(
        tactic: TacticSha,
        items: &[BatchItem],
        rounds: &HashMap<String, u32>,
        vars: &lllm_core::PromptVars,
    ) -> Attempts {
        let items = items
            .iter()
            .map(|item| {
                let mut item_vars = vars.clone();
                item_vars.extend(item.vars.clone());
                QueuedItem {
                    id: item.id.clone(),
                    id_json: item.id_json.clone(),
                    input: item.input.clone(),
                    vars: item_vars,
                    tactic: tactic.to_string(),
                    round: rounds.get(&item.id).copied().unwrap_or(0),
                }
            })
            .collect();
        Attempts { tactic, items }
    }

    /// The tactic they are for.
    pub fn tactic(&self) -> &TacticSha {
        &self.tactic
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The key of the attempt of item `id` (64 hex digits), if the batch has it.
    pub fn key(&self, id: &str) -> Option<String> {
        self.items.iter().find(|i| i.id == id).map(QueuedItem::key)
    }

    pub(crate) fn items(&self) -> &[QueuedItem] {
        &self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, input: &str) -> BatchItem {
        BatchItem {
            id: id.to_owned(),
            id_json: serde_json::value::RawValue::from_string(format!("\"{id}\"")).expect("json"),
            input: Some(input.to_owned()),
            vars: lllm_core::PromptVars::new(),
        }
    }

    #[test]
    fn an_attempt_is_named_by_its_tactic_id_attempt_input_and_variables() {
        let tactic = TacticSha::of(b"agent_configs: []");
        let none = HashMap::new();
        let vars = lllm_core::PromptVars::new();
        let key = |tactic: &TacticSha, item: BatchItem, rounds, vars| {
            Attempts::new(tactic.clone(), &[item], rounds, vars)
                .key("0")
                .expect("the item")
        };
        let first = key(&tactic, item("0", "a"), &none, &vars);
        assert_eq!(first.len(), 64);
        assert_eq!(first, key(&tactic, item("0", "a"), &none, &vars), "stable");
        let mut others = vec![
            key(&tactic, item("0", "b"), &none, &vars),
            key(&TacticSha::of(b"other"), item("0", "a"), &none, &vars),
            key(&tactic, item("0", "a"), &[("0".into(), 1)].into(), &vars),
            key(
                &tactic,
                item("0", "a"),
                &none,
                &[("x".into(), serde_json::json!(1))].into(),
            ),
        ];
        others.push(first);
        others.sort();
        others.dedup();
        assert_eq!(others.len(), 5, "each part of an attempt changes its key");
    }
}
