//! A server's `sampling/createMessage` in lllm's terms and back: text messages in, the calling
//! model's answer out.

#![allow(deprecated)] // Sampling is deprecated by SEP-2577 in rmcp, and still what servers send.

use lllm_core::Message;
use rmcp::model::{
    ContextInclusion, CreateMessageRequestParams, CreateMessageResult, ErrorData, Role,
    SamplingMessage, SamplingMessageContentBlock,
};

use crate::tools::{SampleAnswer, SampleRequest};

/// Most messages of one sampling request.
const MAX_SAMPLE_MESSAGES: usize = 256;

/// The request as the agent answers it; a request lllm cannot answer as asked (not text, tools
/// for the model, too many messages) is refused with why.
pub(crate) fn sample_request(
    params: &CreateMessageRequestParams,
) -> Result<SampleRequest, ErrorData> {
    let refuse = |why: &str| ErrorData::invalid_params(why.to_owned(), None);
    if params.messages.is_empty() {
        return Err(refuse("a sampling request needs at least one message"));
    }
    if params.messages.len() > MAX_SAMPLE_MESSAGES {
        return Err(refuse(&format!(
            "lllm answers at most {MAX_SAMPLE_MESSAGES} messages per sampling request"
        )));
    }
    if params.tools.as_ref().is_some_and(|t| !t.is_empty()) {
        return Err(refuse("lllm does not offer tools to sampling requests"));
    }
    let messages = params
        .messages
        .iter()
        .map(message)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|why| refuse(&why))?;
    Ok(SampleRequest {
        system: params.system_prompt.clone().filter(|s| !s.is_empty()),
        messages,
        max_tokens: params.max_tokens,
        temperature: params.temperature,
        stop: params.stop_sequences.clone().unwrap_or_default(),
        include_context: matches!(
            params.include_context,
            Some(ContextInclusion::ThisServer | ContextInclusion::AllServers)
        ),
    })
}

/// One message: its text blocks joined; anything but text is refused.
fn message(message: &SamplingMessage) -> Result<Message, String> {
    let mut text = String::new();
    for block in message.content.iter() {
        match block {
            SamplingMessageContentBlock::Text(t) => text.push_str(&t.text),
            _ => return Err("lllm answers sampling requests of text only".to_owned()),
        }
    }
    Ok(match message.role {
        Role::Assistant => Message::assistant(text),
        _ => Message::user(text),
    })
}

/// The answer as the server reads it.
pub(crate) fn sample_result(answer: SampleAnswer) -> CreateMessageResult {
    let stop = if answer.truncated {
        CreateMessageResult::STOP_REASON_END_MAX_TOKEN
    } else {
        CreateMessageResult::STOP_REASON_END_TURN
    };
    CreateMessageResult::new(
        SamplingMessage::new(
            Role::Assistant,
            SamplingMessageContentBlock::text(answer.text),
        ),
        answer.model,
    )
    .with_stop_reason(stop)
}
