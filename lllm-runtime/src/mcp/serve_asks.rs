//! A tool call running while what its server asks on its behalf is answered: the call's future
//! and the answers to its server's requests, polled together inside the caller's task.

use std::future::Future;

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::asks::Ask;
use super::sampling::{sample_request, sample_result};
use crate::tools::{ToolContext, ToolError};

/// Most completions a server may ask during one call: a server sampling in a loop stops here
/// even when the run has no limits.
pub(crate) const MAX_SAMPLES_PER_CALL: usize = 32;

/// Runs `call` to its end, answering the requests on `asks` with `context` meanwhile. A request
/// whose answer stops the run (a limit reached) ends the call at once with an error.
pub(crate) async fn answer_asks<T>(
    call: impl Future<Output = T>,
    mut asks: mpsc::Receiver<Ask>,
    context: ToolContext<'_>,
) -> Result<T, ToolError> {
    let mut call = std::pin::pin!(call);
    let mut answering = FuturesUnordered::new();
    let mut samples = 0;
    loop {
        tokio::select! {
            done = &mut call => return Ok(done),
            Some(ask) = asks.recv() => {
                samples += 1;
                answering.push(answer(ask, context, samples));
            }
            Some(Some(stop)) = answering.next(), if !answering.is_empty() => return Err(stop),
        }
    }
}

/// Answers one request; `Some` when the run cannot go on.
async fn answer(ask: Ask, context: ToolContext<'_>, nth: usize) -> Option<ToolError> {
    match ask {
        Ask::Sample { params, reply } => {
            if nth > MAX_SAMPLES_PER_CALL {
                let refused = rmcp::model::ErrorData::invalid_request(
                    format!("lllm answers at most {MAX_SAMPLES_PER_CALL} sampling requests per tool call"),
                    None,
                );
                reply.send(Err(refused)).ok();
                return None;
            }
            let request = match sample_request(&params) {
                Ok(request) => request,
                Err(refused) => {
                    reply.send(Err(refused)).ok();
                    return None;
                }
            };
            match context.sample(request).await {
                Ok(answer) => {
                    reply.send(Ok(sample_result(answer))).ok();
                    None
                }
                Err(error) => {
                    let message = crate::mcp::printable(&error.message);
                    let refused = rmcp::model::ErrorData::internal_error(message.clone(), None);
                    reply.send(Err(refused)).ok();
                    error.stops_run.then(|| {
                        ToolError::new(format!("the server's sampling request was refused and the run cannot go on: {message}"))
                    })
                }
            }
        }
    }
}
