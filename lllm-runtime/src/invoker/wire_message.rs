//! The dialog's messages as the chat completions API takes them, written straight from the dialog.
//!
//! The JSON is async-openai's for its request messages (role first, then the fields in its order,
//! absent ones left out: the test below holds the two to the same bytes). It borrows the dialog's
//! text rather than copying each message into async-openai's types: a turn sends the whole
//! conversation, and those copies (and freeing them) were a fifth of a turn's instructions in
//! `lllm run` (callgrind, BENCHMARKS.md's floor section).

use lllm_core::{Message, MessageLog, Role};
use serde::{Serialize, Serializer};

/// The `messages` of a request: every message of `.0`, in order.
pub(crate) struct WireMessages<'a>(pub(crate) &'a MessageLog);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(WireMessage::of))
    }
}

/// One message on the wire: `system` (never `developer`), no `name`, reasoning text left out.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<WireToolCall<'a>>>,
    },
    Tool {
        content: &'a str,
        tool_call_id: &'a str,
    },
}

/// A tool call of an assistant message.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireToolCall<'a> {
    Function {
        id: &'a str,
        function: WireFunction<'a>,
    },
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> WireMessage<'a> {
    fn of(message: &'a Message) -> Self {
        let content = message.text();
        match message.role {
            Role::System => WireMessage::System { content },
            Role::User => WireMessage::User { content },
            Role::Assistant => {
                let tool_calls = (!message.tool_calls.is_empty()).then(|| {
                    let calls = message.tool_calls.iter();
                    calls
                        .map(|call| WireToolCall::Function {
                            id: &call.id,
                            function: WireFunction {
                                name: &call.name,
                                arguments: &call.arguments,
                            },
                        })
                        .collect()
                });
                // A null answer (no text, no tool call) is sent back as "", which every server
                // accepts.
                let content = match (&message.content, &tool_calls) {
                    (None, Some(_)) => None,
                    _ => Some(content),
                };
                WireMessage::Assistant {
                    content,
                    tool_calls,
                }
            }
            Role::Tool => WireMessage::Tool {
                content,
                tool_call_id: message.tool_call_id.as_deref().unwrap_or_default(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use async_openai::types::chat::{
        ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
        ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
        ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
        ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
        ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
        ChatCompletionRequestUserMessageContent, FunctionCall,
    };
    use lllm_core::ToolCall;

    use super::*;

    /// The conversion into async-openai's types that the wire shape replaced: the reference.
    fn async_openai_message(message: &Message) -> ChatCompletionRequestMessage {
        let text = message.text().to_owned();
        match message.role {
            Role::System => {
                ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                    content: ChatCompletionRequestSystemMessageContent::Text(text),
                    name: None,
                })
            }
            Role::User => ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(text),
                name: None,
            }),
            Role::Assistant => {
                let tool_calls = (!message.tool_calls.is_empty()).then(|| {
                    let calls = message.tool_calls.iter();
                    calls
                        .map(|call| {
                            ChatCompletionMessageToolCalls::Function(
                                ChatCompletionMessageToolCall {
                                    id: call.id.clone(),
                                    function: FunctionCall {
                                        name: call.name.clone(),
                                        arguments: call.arguments.clone(),
                                    },
                                },
                            )
                        })
                        .collect()
                });
                let content = match (&message.content, &tool_calls) {
                    (None, Some(_)) => None,
                    _ => Some(ChatCompletionRequestAssistantMessageContent::Text(text)),
                };
                ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                    content,
                    tool_calls,
                    ..Default::default()
                })
            }
            Role::Tool => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
                content: ChatCompletionRequestToolMessageContent::Text(text),
                tool_call_id: message.tool_call_id.clone().unwrap_or_default(),
            }),
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "search".into(),
            arguments: r#"{"q": "\"quoted\" ünïcode"}"#.into(),
        }
    }

    #[test]
    fn every_kind_of_message_is_written_as_async_openai_writes_it() {
        let mut called = Message::assistant("looking");
        called.tool_calls = vec![call("c1"), call("c2")];
        let mut called_silently = Message::assistant("");
        called_silently.content = None;
        called_silently.tool_calls = vec![call("c3")];
        let mut null_answer = Message::assistant("");
        null_answer.content = None;
        let mut tool_without_id = Message::tool("c4", "result");
        tool_without_id.tool_call_id = None;
        let messages = vec![
            Message::system("be \"brief\"\n\ttabbed"),
            Message::user("ünïcode and \u{1} control"),
            Message::assistant("an answer"),
            called,
            called_silently,
            null_answer,
            Message::tool("c1", "{\"hits\": 3}"),
            tool_without_id,
            Message::user(""),
        ];
        let reference: Vec<_> = messages.iter().map(async_openai_message).collect();
        let log: MessageLog = messages.into_iter().collect();
        assert_eq!(
            serde_json::to_string(&WireMessages(&log)).expect("writes"),
            serde_json::to_string(&reference).expect("writes")
        );
    }
}
