//! The caller's function tools and its results, as Chat Completions and Responses send them.

use lllm_core::ToolSpec;
use serde_json::{json, Value};

use super::error::ApiError;
use super::Model;
use crate::engine::CallerToolsError;

/// The most caller's tools one request may offer.
pub(crate) const MAX_CALLER_TOOLS: usize = 128;

/// One result the caller brings for a call it was handed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallerResult {
    pub(crate) call: String,
    pub(crate) output: String,
}

/// The caller's tools `model` takes: none unless an agent of its tactic has `client_tools: true`
/// (the request's tools are then ignored); a tool that clashes with an agent's own, or that no
/// model can be offered, is a 400 naming it.
pub(crate) fn offered(model: &Model, tools: Vec<ToolSpec>) -> Result<Vec<ToolSpec>, ApiError> {
    if tools.is_empty() || !model.tactic.takes_caller_tools() {
        return Ok(Vec::new());
    }
    match model.tactic.check_caller_tools(&tools) {
        Ok(()) => Ok(tools),
        Err(CallerToolsError::Mcp(e)) => Err(ApiError::internal(lllm_core::full_message(&e))),
        Err(e) => Err(
            ApiError::invalid(format!("`tools`: {}", lllm_core::full_message(&e))).param("tools"),
        ),
    }
}

/// The function tools of a Chat `tools` list (`{"type": "function", "function": {...}}`); tools
/// of other types are not the caller's functions and are left out.
pub(crate) fn chat_tools(tools: Option<&Value>) -> Result<Vec<ToolSpec>, ApiError> {
    function_tools(tools, |tool| tool.get("function"))
}

/// The function tools of a Responses `tools` list (`{"type": "function", "name", ...}`).
pub(crate) fn responses_tools(tools: Option<&Value>) -> Result<Vec<ToolSpec>, ApiError> {
    function_tools(tools, Some)
}

fn function_tools<'v>(
    tools: Option<&'v Value>,
    body: impl Fn(&'v Value) -> Option<&'v Value>,
) -> Result<Vec<ToolSpec>, ApiError> {
    let Some(tools) = tools.filter(|t| !t.is_null()) else {
        return Ok(Vec::new());
    };
    let list = tools
        .as_array()
        .ok_or_else(|| ApiError::invalid("`tools` must be a list").param("tools"))?;
    let mut specs = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            continue;
        }
        let at = format!("tools[{i}]");
        let function = body(tool).filter(|f| f.is_object()).ok_or_else(|| {
            ApiError::invalid(format!("`{at}`: a function tool needs its function")).param("tools")
        })?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ApiError::invalid(format!("`{at}`: a function tool needs a `name`")).param("tools")
            })?;
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parameters = match function.get("parameters") {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(parameters) => parameters.clone(),
        };
        specs.push(ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
        });
    }
    if specs.len() > MAX_CALLER_TOOLS {
        return Err(ApiError::invalid(format!(
            "`tools`: {} function tools; at most {MAX_CALLER_TOOLS} are taken",
            specs.len()
        ))
        .param("tools"));
    }
    Ok(specs)
}

/// The results a Chat request brings: the `tool` messages after its last assistant message, when
/// the last message is one of them.
pub(crate) fn chat_results(messages: &[Value]) -> Result<Vec<CallerResult>, ApiError> {
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let trailing = messages
        .iter()
        .rev()
        .take_while(|m| role(m).as_deref() == Some("tool"))
        .count();
    let first = messages.len() - trailing;
    messages[first..]
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let at = format!("messages[{}]", first + k);
            result(m, "tool_call_id", "content", &at)
        })
        .collect()
}

/// The results a Responses request brings: its `function_call_output` items after its last user
/// message, when its last item is one of them.
pub(crate) fn responses_results(input: &Value) -> Result<Vec<CallerResult>, ApiError> {
    let Some(items) = input.as_array() else {
        return Ok(Vec::new());
    };
    let kind = |m: &Value| m.get("type").and_then(Value::as_str).map(str::to_owned);
    if items.last().and_then(kind).as_deref() != Some("function_call_output") {
        return Ok(Vec::new());
    }
    let after_user = items
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map_or(0, |i| i + 1);
    items[after_user..]
        .iter()
        .enumerate()
        .filter(|(_, m)| kind(m).as_deref() == Some("function_call_output"))
        .map(|(k, m)| {
            result(
                m,
                "call_id",
                "output",
                &format!("input[{}]", after_user + k),
            )
        })
        .collect()
}

/// One result: its call id and its output's text (a string, or text parts).
fn result(item: &Value, id: &str, output: &str, at: &str) -> Result<CallerResult, ApiError> {
    let call = item
        .get(id)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid(format!("`{at}`: a tool result needs its `{id}`")))?;
    let text = match item.get(output) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| p.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ApiError::invalid(format!(
                    "`{at}.{output}`: only text parts can be a tool's result"
                ))
            })?
            .concat(),
        Some(other) => other.to_string(),
    };
    Ok(CallerResult {
        call: call.to_owned(),
        output: text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_tools_of_both_apis_and_other_tools_left_out() {
        let chat = json!([
            {"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}},
            {"type": "web_search"}
        ]);
        let specs = chat_tools(Some(&chat)).expect("tools");
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "shell");
        let responses = json!([{"type": "function", "name": "f", "description": "d"}]);
        let specs = responses_tools(Some(&responses)).expect("tools");
        assert_eq!(
            (specs[0].name.as_str(), specs[0].description.as_str()),
            ("f", "d")
        );
        assert!(chat_tools(Some(&json!([{"type": "function", "function": {}}]))).is_err());
    }

    #[test]
    fn results_are_the_trailing_tool_messages_and_outputs() {
        let messages = [
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "tool_calls": []}),
            json!({"role": "tool", "tool_call_id": "a", "content": "1"}),
            json!({"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "2"}]}),
        ];
        let results = chat_results(&messages).expect("results");
        assert_eq!(
            results.iter().map(|r| r.call.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(results[1].output, "2");
        assert!(chat_results(&messages[..1]).expect("none").is_empty());
        let input = json!([
            {"role": "user", "content": "q"},
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "ok"}
        ]);
        assert_eq!(responses_results(&input).expect("results")[0].output, "ok");
        assert!(responses_results(&json!("hi")).expect("none").is_empty());
    }
}
