//! A server's `elicitation/create` in lllm's terms and back: a form (from the requested schema,
//! bounded) or a URL, asked through the calling agent's confirmations, the answer checked against
//! the form before it goes back.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData};
use serde_json::Value;

use super::printable;
use crate::tools::{ElicitKind, ElicitRequest, Elicited, Form, ToolContext};

/// Most bytes of a requested schema (as JSON): a form a person fills has a few fields.
pub(crate) const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Most characters of a question's message and of a URL shown.
const MAX_MESSAGE_CHARS: usize = 4000;
/// Longest wait for the user's answer to one question; then it is cancelled.
pub(crate) const MAX_QUESTION_WAIT: Duration = Duration::from_secs(600);

/// Asks the user what the server asks, on behalf of the calling agent; the answer as the server
/// reads it. A schema lllm cannot ask (too large, not MCP's flat form) is refused with why.
pub(crate) async fn elicit(
    params: &ElicitRequestParams,
    context: ToolContext<'_>,
    server: &str,
) -> Result<ElicitResult, ErrorData> {
    let source = format!("MCP server `{server}`");
    let answered = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            let schema = serde_json::to_value(requested_schema)
                .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
            let form = checked_form(&schema)?;
            let message = shown(message);
            let request = ElicitRequest {
                agent: "",
                source: &source,
                message: &message,
                kind: ElicitKind::Form {
                    form: &form,
                    schema: &schema,
                },
            };
            let answer = ask(context, request).await;
            if let Elicited::Accept(content) = &answer {
                // The asker checked it already; a `Confirm` of a Rust program may not have.
                form.check(&Value::Object(content.clone()))
                    .map_err(|why| ErrorData::internal_error(why, None))?;
            }
            answer
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            let (message, url) = (shown(message), shown(url));
            let request = ElicitRequest {
                agent: "",
                source: &source,
                message: &message,
                kind: ElicitKind::Url { url: &url },
            };
            match ask(context, request).await {
                // Visiting the page is the answer: nothing is sent back with it.
                Elicited::Accept(_) => Elicited::Accept(Default::default()),
                other => other,
            }
        }
        _ => Elicited::Decline,
    };
    Ok(result(answered))
}

/// The form of a schema within lllm's bounds.
fn checked_form(schema: &Value) -> Result<Form, ErrorData> {
    let bytes = serde_json::to_vec(schema).map_or(usize::MAX, |b| b.len());
    if bytes > MAX_SCHEMA_BYTES {
        return Err(ErrorData::invalid_params(
            format!("lllm asks forms of at most {MAX_SCHEMA_BYTES} bytes of requested schema; this one has {bytes}"),
            None,
        ));
    }
    Form::from_schema(schema)
        .map_err(|why| ErrorData::invalid_params(format!("lllm cannot ask this form: {why}"), None))
}

/// The user's answer, bounded in time: a question nobody answers in time is cancelled.
async fn ask(context: ToolContext<'_>, request: ElicitRequest<'_>) -> Elicited {
    match tokio::time::timeout(MAX_QUESTION_WAIT, context.elicit(request)).await {
        Ok(answer) => answer,
        Err(_) => {
            tracing::info!(
                "a server's question was cancelled: no answer within {} s",
                MAX_QUESTION_WAIT.as_secs()
            );
            Elicited::Cancel
        }
    }
}

fn result(answer: Elicited) -> ElicitResult {
    match answer {
        Elicited::Accept(content) => {
            let result = ElicitResult::new(ElicitationAction::Accept);
            if content.is_empty() {
                result
            } else {
                result.with_content(Value::Object(content))
            }
        }
        Elicited::Decline => ElicitResult::new(ElicitationAction::Decline),
        Elicited::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// A server's text as the user sees it: printable, cut.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    printable(&cut)
}
