//! Building an invoker from configuration.

use std::sync::Arc;

use serde::Deserialize;

use super::{Invoker, OpenAiInvoker};

/// Which invoker to build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InvokerKind {
    /// The OpenAI-compatible invoker. `litellm` is accepted as an alias so that configurations written
    /// for Python lllm load unchanged.
    #[default]
    #[serde(alias = "litellm")]
    OpenAi,
}

/// Invoker configuration, as in `{"invoker": "openai"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvokerConfig {
    /// The invoker kind.
    #[serde(default)]
    pub invoker: InvokerKind,
}

impl InvokerConfig {
    /// Reads `{"invoker": "openai" | "litellm"}`; anything else is an error that says what is accepted.
    pub fn from_json(value: serde_json::Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }
}

/// Builds the configured invoker, shareable between agents.
pub fn build_invoker(config: &InvokerConfig) -> Arc<dyn Invoker> {
    match config.invoker {
        InvokerKind::OpenAi => Arc::new(OpenAiInvoker::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn litellm_is_an_alias_and_unknown_kinds_are_errors() {
        for kind in ["openai", "litellm"] {
            let config = InvokerConfig::from_json(json!({"invoker": kind})).expect("accepted");
            assert_eq!(config.invoker, InvokerKind::OpenAi);
        }
        let err = InvokerConfig::from_json(json!({"invoker": "bedrock"})).expect_err("unknown");
        assert!(err.to_string().contains("openai"), "{err}");
        assert!(InvokerConfig::from_json(json!({"invokr": "openai"})).is_err());
    }
}
