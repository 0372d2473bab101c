//! Putting a batch's items on the queue, each once.

use async_nats::jetstream::message::PublishMessage as Publish;

use super::{Connection, QueueError, QueuedItem};
use crate::engine::batch::BatchItem;

/// What enqueueing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Enqueued {
    /// Items put on the queue now.
    pub added: usize,
    /// Items the queue had already (the same tactic and id, within a week): not added again.
    pub already: usize,
}

/// Puts `items` for the tactic with SHA-256 `tactic` on the queue, each as attempt `rounds[id]`
/// (0 when absent: the failed attempts an output already has); `vars` are every item's (its own
/// win). JetStream drops an attempt it already has, so the same command run twice adds nothing.
pub async fn enqueue(
    address: &super::QueueAddress,
    tactic: &str,
    items: &[BatchItem],
    rounds: &std::collections::HashMap<String, u32>,
    vars: &lllm_core::PromptVars,
) -> Result<Enqueued, QueueError> {
    let connection = Connection::open(address).await?;
    let mut counts = Enqueued {
        added: 0,
        already: 0,
    };
    let subject = connection.address.items_subject();
    let mut acks = Vec::with_capacity(items.len().min(1024));
    for item in items {
        let mut item_vars = vars.clone();
        item_vars.extend(item.vars.clone());
        let queued = QueuedItem {
            id: item.id.clone(),
            id_json: item.id_json.clone(),
            input: item.input.clone(),
            vars: item_vars,
            tactic: tactic.to_owned(),
            round: rounds.get(&item.id).copied().unwrap_or(0),
        };
        let payload =
            serde_json::to_vec(&queued).map_err(QueueError::jetstream("encoding an item"))?;
        let publish = Publish::build()
            .message_id(queued.attempt())
            .payload(payload.into());
        let ack = connection
            .js
            .send_publish(subject.clone(), publish)
            .await
            .map_err(QueueError::jetstream("publishing an item"))?;
        acks.push(ack);
        // Bounded in flight: at most 1,024 publishes wait for their acknowledgement.
        if acks.len() >= 1024 {
            settle(&mut acks, &mut counts).await?;
        }
    }
    settle(&mut acks, &mut counts).await?;
    Ok(counts)
}

async fn settle(
    acks: &mut Vec<async_nats::jetstream::context::PublishAckFuture>,
    counts: &mut Enqueued,
) -> Result<(), QueueError> {
    for ack in acks.drain(..) {
        let ack = ack
            .await
            .map_err(QueueError::jetstream("publishing an item"))?;
        if ack.duplicate {
            counts.already += 1;
        } else {
            counts.added += 1;
        }
    }
    Ok(())
}
