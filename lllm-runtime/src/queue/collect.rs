//! Collecting a queued batch's results into its output file, each item's line once.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::consumer::{pull, DeliverPolicy};
use futures::StreamExt as _;

use super::{Connection, QueueAddress, QueueError, ROUND_HEADER};
use crate::engine::batch::BatchOutput;
use crate::engine::line_id;

/// What collecting wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Collected {
    /// Items answered.
    pub answered: usize,
    /// Items failed.
    pub failed: usize,
}

/// Waits for the results of `waiting` (each id with the attempt it waits for) of the tactic with
/// SHA-256 `tactic`, appending each one's line to `output` as it arrives, until every one has a
/// result. `progress` sees the counts after each. Survives the server going away and coming
/// back: the results are read again from the start, and lines already written are not written
/// again.
pub async fn collect(
    address: &QueueAddress,
    tactic: &str,
    mut waiting: HashMap<String, u32>,
    output: &BatchOutput,
    progress: &(dyn Fn(Collected) + Sync),
) -> Result<Collected, QueueError> {
    let mut collected = Collected::default();
    while !waiting.is_empty() {
        match read_results(
            address,
            tactic,
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
    tactic: &str,
    waiting: &mut HashMap<String, u32>,
    output: &BatchOutput,
    collected: &mut Collected,
    progress: &(dyn Fn(Collected) + Sync),
) -> Result<(), QueueError> {
    let connection = Connection::open(address).await?;
    let consumer = connection
        .results
        .create_consumer(pull::OrderedConfig {
            filter_subject: address.results_subject(tactic),
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
        let message = message.map_err(QueueError::jetstream("reading results"))?;
        let round = message
            .headers
            .as_ref()
            .and_then(|h| h.get(ROUND_HEADER))
            .and_then(|v| v.as_str().parse::<u32>().ok())
            .unwrap_or(0);
        let Some((id, answered)) = line_id(&message.payload) else {
            continue;
        };
        if waiting.get(&id) != Some(&round) {
            continue;
        }
        let line = std::str::from_utf8(&message.payload).unwrap_or_default();
        output.append(line.trim_end())?;
        waiting.remove(&id);
        if answered {
            collected.answered += 1;
        } else {
            collected.failed += 1;
        }
        progress(*collected);
    }
    Ok(())
}
