//! A tool call running while what its server asks on its behalf is answered: the call's future
//! and the answers to its server's requests (samples, questions), polled together inside the
//! caller's task, within the call's timeout.

#![allow(deprecated)] // Sampling is deprecated by SEP-2577 in rmcp, and still what servers send.

use std::future::Future;

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, Instant};

use super::asks::Ask;
use super::elicitation::elicit;
use super::sampling::{sample_request, sample_result};
use crate::tools::{ToolContext, ToolError};

/// Most completions a server may ask during one call: a server sampling in a loop stops here
/// even when the run has no limits.
pub(crate) const MAX_SAMPLES_PER_CALL: usize = 32;

/// Most questions for the user a server may ask during one call.
pub(crate) const MAX_QUESTIONS_PER_CALL: usize = 8;

/// How a call under [`answer_asks`] ended.
pub(crate) enum Ended<T> {
    /// The call's own result.
    Done(T),
    /// An answer stopped the run (a limit reached).
    Stopped(ToolError),
    /// The call took longer than its timeout, time waiting for the user left out.
    TimedOut,
}

/// Runs `call` to its end, answering the requests on `asks` with `context` meanwhile, within
/// `timeout`: the time a question waits for the user does not count (a person may take longer
/// than a tool; each question has its own bound). A request whose answer stops the run (a limit
/// reached) ends the call at once with an error.
pub(crate) async fn answer_asks<T>(
    call: impl Future<Output = T>,
    mut asks: mpsc::Receiver<Ask>,
    context: ToolContext<'_>,
    server: &str,
    timeout: Duration,
) -> Ended<T> {
    let mut call = std::pin::pin!(call);
    let mut answering = FuturesUnordered::new();
    let (mut samples, mut questions) = (0, 0);
    let mut clock = Clock::new(timeout);
    loop {
        tokio::select! {
            done = &mut call => return Ended::Done(done),
            () = clock.expiry() => return Ended::TimedOut,
            Some(ask) = asks.recv() => {
                let nth = match &ask {
                    Ask::Sample { .. } => { samples += 1; samples }
                    Ask::Elicit { .. } => { questions += 1; clock.pause(); questions }
                };
                answering.push(answer(ask, context, nth, server));
            }
            Some(answered) = answering.next(), if !answering.is_empty() => {
                if answered.question {
                    clock.resume();
                }
                if let Some(stop) = answered.stop {
                    return Ended::Stopped(stop);
                }
            }
        }
    }
}

/// A call's deadline, held while questions wait for the user.
struct Clock {
    deadline: Instant,
    waiting: usize,
    since: Instant,
}

impl Clock {
    fn new(timeout: Duration) -> Self {
        let now = Instant::now();
        Clock {
            deadline: now + timeout,
            waiting: 0,
            since: now,
        }
    }

    fn pause(&mut self) {
        if self.waiting == 0 {
            self.since = Instant::now();
        }
        self.waiting += 1;
    }

    fn resume(&mut self) {
        self.waiting = self.waiting.saturating_sub(1);
        if self.waiting == 0 {
            self.deadline += self.since.elapsed();
        }
    }

    /// Ends at the deadline; never while a question waits.
    async fn expiry(&self) {
        if self.waiting > 0 {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep_until(self.deadline).await;
    }
}

/// What answering one request did.
struct Answered {
    /// It was a question for the user.
    question: bool,
    /// The run cannot go on.
    stop: Option<ToolError>,
}

/// Answers one request.
async fn answer(ask: Ask, context: ToolContext<'_>, nth: usize, server: &str) -> Answered {
    match ask {
        Ask::Sample { params, reply } => Answered {
            question: false,
            stop: sample(params, reply, context, nth).await,
        },
        Ask::Elicit { params, reply } => {
            let answer = if nth > MAX_QUESTIONS_PER_CALL {
                Err(rmcp::model::ErrorData::invalid_request(
                    format!("lllm asks the user at most {MAX_QUESTIONS_PER_CALL} questions per tool call"),
                    None,
                ))
            } else {
                elicit(&params, context, server).await
            };
            reply.send(answer).ok();
            Answered {
                question: true,
                stop: None,
            }
        }
    }
}

type SampleReply = oneshot::Sender<Result<CreateMessageResult, rmcp::model::ErrorData>>;

/// Answers one sampling request; `Some` when the run cannot go on.
async fn sample(
    params: CreateMessageRequestParams,
    reply: SampleReply,
    context: ToolContext<'_>,
    nth: usize,
) -> Option<ToolError> {
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
                ToolError::new(format!(
                    "the server's sampling request was refused and the run cannot go on: {message}"
                ))
            })
        }
    }
}
