//! The model's context length, as the server's `GET /models` reports it (`context: {window: auto}`).
//! Servers name it differently: vLLM and SGLang `max_model_len`, others `context_length`,
//! `context_window` or `max_context_length`, llama.cpp `meta.n_ctx_train`.

use serde_json::Value;

/// The largest `/models` answer read.
pub(crate) const MAX_MODELS_BYTES: usize = 4 * 1024 * 1024;

/// The fields that hold a model's context length, in the order they are trusted.
const LENGTH_FIELDS: [&[&str]; 6] = [
    &["max_model_len"],
    &["context_length"],
    &["context_window"],
    &["max_context_length"],
    &["meta", "n_ctx"],
    &["meta", "n_ctx_train"],
];

/// The context length of `model` in a `/models` answer, if the server reports it.
pub(crate) fn context_length(models: &Value, model: &str) -> Option<u32> {
    let entries = models.get("data")?.as_array()?;
    let entry = entries
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        // A server of one model (llama.cpp) may list it under another name.
        .or_else(|| (entries.len() == 1).then(|| &entries[0]))?;
    LENGTH_FIELDS.iter().find_map(|path| {
        let value = path.iter().try_fold(entry, |v, key| v.get(key))?;
        value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_servers_field_is_read() {
        let vllm = json!({"data": [{"id": "other", "max_model_len": 1}, {"id": "m", "max_model_len": 32768}]});
        assert_eq!(context_length(&vllm, "m"), Some(32768));
        let llama = json!({"data": [{"id": "smol.gguf", "meta": {"n_ctx_train": 8192}}]});
        assert_eq!(context_length(&llama, "m"), Some(8192));
        let none = json!({"data": [{"id": "m", "object": "model"}]});
        assert_eq!(context_length(&none, "m"), None);
        assert_eq!(context_length(&json!({"data": "x"}), "m"), None);
        assert_eq!(
            context_length(&json!({"data": [{"id": "m", "max_model_len": -5}]}), "m"),
            None
        );
    }
}
