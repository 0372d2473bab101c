//! Collecting a queued batch's results into its output file, each item's line once.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::consumer::{pull, DeliverPolicy};
use futures::StreamExt as _;

use super::result::output_line;
use super::{Attempts, Connection, QueueAddress, QueueError, QueuedItem, ATTEMPT_HEADER};
use crate::engine::batch::BatchOutput;

/// What collecting wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Collected {
    /// Items answered.
    pub answered: usize,
    /// Items failed.
    pub failed: usize,
}

/// Waits for the results of `attempts` (each matched by its attempt's key, so a result of another
/// batch's item of the same id is not taken), appending each one's line to `output` as it
/// arrives, until every one has a result. `progress` sees the counts after each. Survives the
/// server going away and coming back: the results are read again from the start, and lines
/// already written are not written again.
pub async fn collect(
    address: &QueueAddress,
    attempts: &Attempts,
    output: &BatchOutput,
    progress: &(dyn Fn(Collected) + Sync),
) -> Result<Collected, QueueError> {
    let mut waiting: HashMap<String, &QueuedItem> =
        attempts.items().iter().map(|i| (i.key(), i)).collect();
    let mut collected = Collected::default();
    while !waiting.is_empty() {
        match read_results(
            address,
            attempts,
            &mut waiting,
            output,
            &mut collected,
            progress,
        )
        .await
        {
            Ok(()) => {}
            Err(QueueError::Output(e)) => return Err(QueueError::Output(e)),
            Err(error) => {
                tracing::warn!(%error, "reading results failed; reading them again in a second");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    Ok(collected)
}

async fn read_results(
    address: &QueueAddress,
    attempts: &Attempts,
    waiting: &mut HashMap<String, &QueuedItem>,
    output: &BatchOutput,
    collected: &mut Collected,
    progress: &(dyn Fn(Collected) + Sync),
) -> Result<(), QueueError> {
    let connection = Connection::open(address).await?;
    let consumer = connection
        .results
        .create_consumer(pull::OrderedConfig {
            filter_subject: address.results_subject(attempts.tactic()),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(QueueError::jetstream("reading results"))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(QueueError::jetstream("reading results"))?;
    while !waiting.is_empty() {
        let Some(message) = messages.next().await else {
            return Err(QueueError::jetstream("reading results")("the stream ended"));
        };
        let message = message.map_err(|e| QueueError::jetstream("reading results")(e))?;
        let Some(key) = message
            .headers
            .as_ref()
            .and_then(|h| h.get(ATTEMPT_HEADER))
            .map(|v| v.as_str().to_owned())
        else {
            continue;
        };
        let Some(item) = waiting.remove(&key) else {
            continue;
        };
        let (line, answered) = output_line(&message.payload, item);
        output.append(&line)?;
        if answered {
            collected.answered += 1;
        } else {
            collected.failed += 1;
        }
        progress(*collected);
    }
    Ok(())
}
