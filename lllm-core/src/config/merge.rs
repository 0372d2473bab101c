//! Layering raw settings: a file over its `base:`, an agent over `global`. Mappings merge key by key
//! (the upper layer wins); lists and values are replaced. Every value keeps the position of the file
//! that wrote it, so errors found later still point there.

use std::collections::HashMap;

use super::keyed::Keyed;
use super::raw::{RawAgent, RawHints, RawModelArgs, RawTactic};
use serde_json::Value;

use crate::merge::merge_under;

impl RawTactic {
    /// This file's settings over its base's.
    pub(crate) fn over(self, base: RawTactic) -> RawTactic {
        RawTactic {
            base: None,
            tactic_type: self.tactic_type.or(base.tactic_type),
            global: layer(self.global, base.global, |mine, base| {
                mine.map(|m| m.over(&base.value))
            }),
            agent_configs: self.agent_configs.or(base.agent_configs),
            steps: self.steps.or(base.steps),
            output: self.output.or(base.output),
            config: layer(self.config, base.config, |mut mine, base| {
                fill_from(&mut mine.0, base.0);
                mine
            }),
            limits: layer(self.limits, base.limits, |mine, base| {
                Keyed::layered(mine, base, |m, base| super::raw::RawLimits {
                    max_requests: m.max_requests.or(base.max_requests),
                    max_total_tokens: m.max_total_tokens.or(base.max_total_tokens),
                    max_tool_calls: m.max_tool_calls.or(base.max_tool_calls),
                    max_seconds: m.max_seconds.or(base.max_seconds),
                })
            }),
            // Server by server: a file's server replaces the base's server of the same name whole.
            mcp_servers: layer(self.mcp_servers, base.mcp_servers, |mine, base| {
                mine.map(|m| {
                    let mut merged = base.value.0;
                    let mut index: HashMap<String, usize> = merged
                        .iter()
                        .enumerate()
                        .map(|(i, (k, _))| (k.value.clone(), i))
                        .collect();
                    for (name, server) in m.0 {
                        match index.get(&name.value).and_then(|&i| merged.get_mut(i)) {
                            Some(slot) => *slot = (name, server),
                            None => {
                                index.insert(name.value.clone(), merged.len());
                                merged.push((name, server));
                            }
                        }
                    }
                    super::raw::Entries(merged)
                })
            }),
        }
    }
}

impl RawAgent {
    /// This agent's settings over `global`'s; nothing is shared with `global` afterwards.
    pub(crate) fn over(self, global: &RawAgent) -> RawAgent {
        let mine = self;
        // The agent's prompt, in either form, replaces global's prompt in either form.
        let (system_prompt, system_prompt_path, system_prompt_mcp) = if mine.system_prompt.is_some()
            || mine.system_prompt_path.is_some()
            || mine.system_prompt_mcp.is_some()
        {
            (
                mine.system_prompt,
                mine.system_prompt_path,
                mine.system_prompt_mcp,
            )
        } else {
            (
                global.system_prompt.clone(),
                global.system_prompt_path.clone(),
                global.system_prompt_mcp.clone(),
            )
        };
        RawAgent {
            name: mine.name,
            model_name: mine.model_name.or_else(|| global.model_name.clone()),
            system_prompt,
            system_prompt_path,
            system_prompt_mcp,
            model_args: layer(mine.model_args, global.model_args.clone(), |mine, base| {
                mine.map(|m| m.over(base.value))
            }),
            inference_hints: layer(
                mine.inference_hints,
                global.inference_hints.clone(),
                |mine, base| mine.map(|m| m.over(base.value)),
            ),
            tools: mine.tools.or_else(|| global.tools.clone()),
            mcp: mine.mcp.or_else(|| global.mcp.clone()),
            output_schema: mine.output_schema.or_else(|| global.output_schema.clone()),
            max_answer_retries: mine
                .max_answer_retries
                .or(global.max_answer_retries.clone()),
            max_tool_rounds: mine.max_tool_rounds.or(global.max_tool_rounds.clone()),
            max_call_retries: mine.max_call_retries.or(global.max_call_retries.clone()),
            max_parallel_tools: mine
                .max_parallel_tools
                .or(global.max_parallel_tools.clone()),
            client_tools: mine.client_tools.or(global.client_tools.clone()),
            context: layer(mine.context, global.context.clone(), |mine, base| {
                Keyed::layered(mine, base, |m, base| m.over(base))
            }),
            subagents: mine.subagents.or_else(|| global.subagents.clone()),
            max_background_tasks: mine
                .max_background_tasks
                .or(global.max_background_tasks.clone()),
            skills: mine.skills.or_else(|| global.skills.clone()),
        }
    }
}

impl RawModelArgs {
    /// These arguments over `base`'s: object values merge deeply, others replace.
    fn over(self, base: RawModelArgs) -> RawModelArgs {
        let mut merged = base.0;
        // Indexed by key: a large overlay must not cost its size squared.
        let mut index: HashMap<String, usize> = merged
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.value.clone(), i))
            .collect();
        for (key, value) in self.0 {
            match index.get(&key.value).and_then(|&i| merged.get_mut(i)) {
                Some((old_key, old_value)) => {
                    let mut upper = value;
                    fill_from(&mut upper.value, old_value.value.take());
                    *old_key = key;
                    *old_value = upper;
                }
                None => {
                    index.insert(key.value.clone(), merged.len());
                    merged.push((key, value));
                }
            }
        }
        RawModelArgs(merged)
    }
}

impl super::raw::RawContext {
    /// These settings over `base`'s, field by field.
    fn over(self, base: Self) -> Self {
        Self {
            window: self.window.or(base.window),
            compact_at: self.compact_at.or(base.compact_at),
            keep_last: self.keep_last.or(base.keep_last),
            session: self.session.or(base.session),
        }
    }
}

impl RawHints {
    /// These hints over `base`'s, field by field.
    fn over(self, base: RawHints) -> RawHints {
        RawHints {
            profile: self.profile.or(base.profile),
            session: self.session.or(base.session),
            session_prefix: self.session_prefix.or(base.session_prefix),
            fork_session: self.fork_session.or(base.fork_session),
            priority: self.priority.or(base.priority),
            strict_priority: self.strict_priority.or(base.strict_priority),
            osl: self.osl.or(base.osl),
            speculative_prefill: self.speculative_prefill.or(base.speculative_prefill),
            cache_salt: self.cache_salt.or(base.cache_salt),
        }
    }
}

/// Both layers' values combined with `both` when both are set, else whichever is.
fn layer<T>(upper: Option<T>, lower: Option<T>, both: impl FnOnce(T, T) -> T) -> Option<T> {
    match (upper, lower) {
        (Some(upper), Some(lower)) => Some(both(upper, lower)),
        (upper, lower) => upper.or(lower),
    }
}

/// Objects take what `lower` has and they lack, recursively; any other `upper` value stays as it is.
fn fill_from(upper: &mut Value, lower: Value) {
    if let (Value::Object(upper), Value::Object(lower)) = (upper, lower) {
        merge_under(upper, lower);
    }
}
