//! Model names in the LiteLLM `provider/model` convention.

/// Provider prefixes of OpenAI-compatible servers, removed before a request is sent.
pub(crate) const OPENAI_COMPATIBLE_PREFIXES: &[&str] = &[
    "hosted_vllm",
    "vllm",
    "openai",
    "custom_openai",
    "openai_like",
    "text-completion-openai",
    "dynamo",
    "sglang",
    "llama_cpp",
    "llamacpp",
    "llamafile",
    "lm_studio",
    "ollama_chat",
    "openrouter",
    "together_ai",
    "deepinfra",
    "fireworks_ai",
    "groq",
];

/// The model name to send: `hosted_vllm/Qwen/Qwen2.5-7B-Instruct` becomes `Qwen/Qwen2.5-7B-Instruct`; a name
/// without a known prefix is returned as written.
pub fn strip_provider_prefix(model: &str) -> &str {
    match model.split_once('/') {
        Some((prefix, rest))
            if !rest.is_empty() && OPENAI_COMPATIBLE_PREFIXES.contains(&prefix) =>
        {
            rest
        }
        _ => model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_known_prefixes_only_once() {
        assert_eq!(
            strip_provider_prefix("hosted_vllm/Qwen/Qwen2.5-7B-Instruct"),
            "Qwen/Qwen2.5-7B-Instruct"
        );
        assert_eq!(strip_provider_prefix("openai/gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(strip_provider_prefix("dynamo/openai/x"), "openai/x");
        assert_eq!(strip_provider_prefix("Qwen/Qwen2.5"), "Qwen/Qwen2.5");
        assert_eq!(strip_provider_prefix("gpt-4o"), "gpt-4o");
        assert_eq!(strip_provider_prefix("openai/"), "openai/");
    }
}
