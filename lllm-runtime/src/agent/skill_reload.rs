//! Compaction keeps loaded skills loaded: the summary request names them, and the new window
//! carries their bodies again as `load_skill` results, after the kept messages (at the tail, so
//! the new window's prefix is the system message and the summary).

use lllm_core::skills::{loaded_skills, LOAD_SKILL};
use lllm_core::{Message, ToolCall};

use super::compact::SUMMARY_INSTRUCTION;
use super::Agent;

impl Agent {
    /// The summary request's instruction: it names the skills loaded in `messages`, which stay
    /// loaded.
    pub(super) fn summary_instruction(&self, messages: &[Message]) -> String {
        let loaded = match &self.skills {
            Some(_) => loaded_skills(messages),
            None => Vec::new(),
        };
        if loaded.is_empty() {
            return SUMMARY_INSTRUCTION.to_owned();
        }
        let names: Vec<String> = loaded.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "{SUMMARY_INSTRUCTION} The loaded skills {} stay loaded: their instructions are given again after your summary, so do not repeat them.",
            names.join(", ")
        )
    }

    /// The `load_skill` calls and results that bring back the skills loaded in `earlier` but not in
    /// `kept` (the messages the new window keeps word for word); `round` makes their ids unique.
    pub(super) fn skill_reloads(
        &self,
        earlier: &[Message],
        kept: &[Message],
        round: u64,
    ) -> Vec<Message> {
        let Some(skills) = &self.skills else {
            return Vec::new();
        };
        let still = loaded_skills(kept);
        let mut reloads = Vec::new();
        for (i, name) in loaded_skills(earlier).into_iter().enumerate() {
            let Some(skill) = skills.get(&name).filter(|_| !still.contains(&name)) else {
                continue;
            };
            let id = format!("skill_reload_{round}_{i}");
            let mut call = Message::assistant("");
            call.content = None;
            call.tool_calls = vec![ToolCall {
                id: id.clone(),
                name: LOAD_SKILL.to_owned(),
                arguments: serde_json::json!({ "name": name }).to_string(),
            }];
            reloads.push(call);
            reloads.push(Message::tool(id, skill.body()));
        }
        reloads
    }
}
