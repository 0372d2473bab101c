//! A server's prompt as an agent's system prompt (`system_prompt_mcp:`): fetched once when the
//! servers start, its messages' text joined, and kept as a template that renders to exactly that
//! text (the server's words are not a template of the tactic).

use lllm_core::{McpPrompt, Prompt};
use rmcp::model::{GetPromptRequestParams, PaginatedRequestParams};
use rmcp::service::ServiceError;
use serde_json::Value;

use super::connect::describe;
use super::{excerpt, printable, McpError, McpServer};

/// Longest system prompt taken from a server: it is sent with every request.
const MAX_PROMPT_BYTES: usize = 256 * 1024;
/// Most pages of a prompt listing read.
const MAX_PAGES: usize = 16;

impl McpServer {
    /// The text of the server's prompt `source` (its messages' text content joined by blank
    /// lines; other content is left out) as an agent's system prompt. A prompt the server does not
    /// list, or one it refuses to give, is an error saying where the tactic names it.
    pub async fn system_prompt(&self, source: &McpPrompt) -> Result<Prompt, McpError> {
        let inner = &self.inner;
        let fail = |problem: String| McpError::Prompt {
            server: inner.name.clone(),
            field: source
                .at
                .clone()
                .unwrap_or_else(|| "system_prompt_mcp".into()),
            problem,
        };
        let work = async {
            let known = self.prompt_names().await?;
            if !known.iter().any(|n| n == &source.prompt) {
                return Ok(Err(fail(format!(
                    "has no prompt `{}`; its prompts are: {}",
                    excerpt(&printable(&source.prompt)),
                    known_names(&known)
                ))));
            }
            let arguments = source
                .arguments
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            let params =
                GetPromptRequestParams::new(source.prompt.clone()).with_arguments(arguments);
            let result = inner.peer.get_prompt(params).await?;
            Ok(Ok(joined_text(&result.messages)))
        };
        let text = match tokio::time::timeout(inner.timeout, work).await {
            Err(_) => Err(fail(format!(
                "did not give prompt `{}` within {} s (timeout_s)",
                source.prompt,
                inner.timeout.as_secs_f64()
            ))),
            Ok(Err(error)) => Err(fail(format!(
                "did not give prompt `{}`: {}; check its `arguments:`",
                source.prompt,
                inner.secrets.redact(&describe(&error))
            ))),
            Ok(Ok(Err(error))) => Err(error),
            Ok(Ok(Ok(text))) => Ok(text),
        }?;
        if text.trim().is_empty() {
            return Err(fail(format!(
                "gave prompt `{}` without any text",
                source.prompt
            )));
        }
        if text.len() > MAX_PROMPT_BYTES {
            return Err(fail(format!("gave prompt `{}` with {} bytes of text, more than the {MAX_PROMPT_BYTES} a system prompt may have", source.prompt, text.len())));
        }
        Ok(Prompt::named(
            format!("{}.{}", inner.name, source.prompt),
            literal_template(&text),
        ))
    }

    /// The names of the server's prompts, every page up to [`MAX_PAGES`].
    async fn prompt_names(&self) -> Result<Vec<String>, ServiceError> {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = self.inner.peer.list_prompts(params).await?;
            names.extend(page.prompts.into_iter().map(|p| p.name));
            match page.next_cursor.filter(|c| !c.is_empty()) {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(names)
    }
}

/// The text blocks of the messages, in order, joined by blank lines; other blocks (images,
/// resources) are left out, with a warning.
fn joined_text(messages: &[rmcp::model::PromptMessage]) -> String {
    let mut pieces = Vec::new();
    let mut left_out = 0;
    for message in messages {
        let block = serde_json::to_value(&message.content).unwrap_or(Value::Null);
        match (block.get("type").and_then(Value::as_str), block.get("text")) {
            (Some("text"), Some(Value::String(text))) => pieces.push(text.clone()),
            _ => left_out += 1,
        }
    }
    if left_out > 0 {
        tracing::warn!("{left_out} content block(s) of an MCP prompt that are not text were left out of the system prompt");
    }
    pieces.join("\n\n")
}

/// A template that renders to `text` as written: the text inside a raw block, every `{%` in it
/// (the only way out of a raw block) written as an expression.
fn literal_template(text: &str) -> String {
    let body = text.replace("{%", "{% endraw %}{{ \"{%\" }}{% raw %}");
    format!("{{% raw %}}{body}{{% endraw %}}")
}

/// Names a server listed, as an error shows them: each made printable and short, at most
/// [`NAMES_SHOWN`] (a hostile server's listing must not flood the terminal).
fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        return "none".to_owned();
    }
    let mut shown: Vec<String> = known
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| excerpt(&printable(n)))
        .collect();
    if known.len() > NAMES_SHOWN {
        shown.push(format!("and {} more", known.len() - NAMES_SHOWN));
    }
    shown.join(", ")
}

/// Most prompt names an error lists.
const NAMES_SHOWN: usize = 50;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_template_renders_to_the_text_as_written() {
        let vars = lllm_core::PromptVars::default();
        for text in [
            "plain text\n",
            "{{ team }} and {% if x %}y{% endif %}",
            "a {% endraw %} b {%- endraw -%} c {#",
            "ends with {",
        ] {
            let prompt = Prompt::named("p", literal_template(text));
            assert_eq!(prompt.render(&vars).expect("renders"), text);
        }
    }
}
