//! The tactic file exactly as written: every key known, every value optional, nothing merged yet.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::hints::InferenceHintsBuilder;
use crate::model_args::check_key;
use crate::tool::CommandToolConfig;

/// Top level of a tactic file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTactic {
    // Followed by `Document` before this type is read; declared so that a wrong type is reported.
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) base: Option<String>,
    #[serde(default)]
    pub(crate) tactic_type: Option<String>,
    #[serde(default)]
    pub(crate) global: Option<RawAgent>,
    #[serde(default)]
    pub(crate) agent_configs: Option<Vec<RawAgent>>,
    #[serde(default)]
    pub(crate) steps: Option<serde_yaml::Value>,
    #[serde(default)]
    pub(crate) output: Option<String>,
    #[serde(default)]
    pub(crate) config: Option<Value>,
}

/// One agent's keys (also the keys of `global`, which has no `name`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAgent {
    pub(crate) name: Option<String>,
    pub(crate) model_name: Option<String>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) system_prompt_path: Option<String>,
    #[serde(default, deserialize_with = "model_args_map")]
    pub(crate) model_args: Option<Map<String, Value>>,
    pub(crate) inference_hints: Option<InferenceHintsBuilder>,
    pub(crate) tools: Option<Vec<CommandToolConfig>>,
    pub(crate) output_schema: Option<Value>,
    pub(crate) max_exception_retry: Option<u32>,
    pub(crate) max_interrupt_steps: Option<u32>,
    pub(crate) max_llm_recall: Option<u32>,
}

/// Reads `model_args`, checking each key as it is read, so that a misspelt or reserved key is reported
/// at its own line and column.
fn model_args_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Option<Map<String, Value>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a mapping of model arguments")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut map = Map::new();
            while let Some(key) = access.next_key::<String>()? {
                check_key(&key)
                    .map_err(|e| de::Error::custom(format_args!("`{}` {}", e.field, e.message)))?;
                let value: Value = access.next_value()?;
                map.insert(key, value);
            }
            Ok(Some(map))
        }
    }
    deserializer.deserialize_any(Keys)
}

/// Where a system prompt comes from, after the agent's choice has replaced `global`'s.
pub(crate) enum PromptSource {
    Inline(String),
    Path(String),
}

impl RawAgent {
    /// This agent's keys with `global` under them: objects merge, everything else is replaced by the
    /// agent's value. Nothing is shared with `global` afterwards.
    pub(crate) fn over(self, global: &RawAgent) -> RawAgent {
        let model_args = match (self.model_args, &global.model_args) {
            (Some(mut mine), Some(base)) => {
                let mut merged = base.clone();
                crate::merge::deep_merge(&mut merged, std::mem::take(&mut mine));
                Some(merged)
            }
            (mine, base) => mine.or_else(|| base.clone()),
        };
        let inference_hints = match (self.inference_hints, &global.inference_hints) {
            (Some(mine), Some(base)) => Some(mine.over(base)),
            (mine, base) => mine.or_else(|| base.clone()),
        };
        // The agent's prompt, in either form, replaces global's prompt in either form.
        let (system_prompt, system_prompt_path) =
            if self.system_prompt.is_some() || self.system_prompt_path.is_some() {
                (self.system_prompt, self.system_prompt_path)
            } else {
                (
                    global.system_prompt.clone(),
                    global.system_prompt_path.clone(),
                )
            };
        RawAgent {
            name: self.name,
            model_name: self.model_name.or_else(|| global.model_name.clone()),
            system_prompt,
            system_prompt_path,
            model_args,
            inference_hints,
            tools: self.tools.or_else(|| global.tools.clone()),
            output_schema: self.output_schema.or_else(|| global.output_schema.clone()),
            max_exception_retry: self.max_exception_retry.or(global.max_exception_retry),
            max_interrupt_steps: self.max_interrupt_steps.or(global.max_interrupt_steps),
            max_llm_recall: self.max_llm_recall.or(global.max_llm_recall),
        }
    }

    /// The prompt source, or why there is none.
    pub(crate) fn prompt_source(&self) -> Result<PromptSource, &'static str> {
        match (&self.system_prompt, &self.system_prompt_path) {
            (Some(text), None) => Ok(PromptSource::Inline(text.clone())),
            (None, Some(path)) => Ok(PromptSource::Path(path.clone())),
            (Some(_), Some(_)) => Err("set either system_prompt or system_prompt_path, not both"),
            (None, None) => Err(
                "a system prompt is required: set system_prompt (inline text) or system_prompt_path (a file under prompts/)",
            ),
        }
    }

    /// Applies `f` to every string field outside `model_args`, naming each by its field path.
    pub(crate) fn for_each_string<E>(
        &mut self,
        f: &mut dyn FnMut(&str, &mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        for (name, value) in [
            ("model_name", &mut self.model_name),
            ("system_prompt", &mut self.system_prompt),
            ("system_prompt_path", &mut self.system_prompt_path),
        ] {
            if let Some(v) = value.as_mut() {
                f(name, v)?;
            }
        }
        if let Some(hints) = self.inference_hints.as_mut() {
            for (name, value) in hints.string_fields_mut() {
                f(&format!("inference_hints.{name}"), value)?;
            }
        }
        Ok(())
    }
}
