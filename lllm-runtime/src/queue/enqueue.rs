//! Putting a batch's items on the queue, each once.

use async_nats::jetstream::message::PublishMessage as Publish;

use super::{Attempts, Connection, QueueError, ATTEMPT_HEADER};

/// What enqueueing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Enqueued {
    /// Items put on the queue now.
    pub added: usize,
    /// Items the queue had already (the same attempt of the same content, within a week): not
    /// added again.
    pub already: usize,
}

/// Puts `attempts` on the queue, on their tactic's subject (for its workers only). JetStream drops
/// an attempt whose key it already has, so the same command run twice adds nothing.
pub async fn enqueue(
    address: &super::QueueAddress,
    attempts: &Attempts,
) -> Result<Enqueued, QueueError> {
    let connection = Connection::open(address).await?;
    let mut counts = Enqueued {
        added: 0,
        already: 0,
    };
    let subject = connection.address.items_subject(attempts.tactic());
    let mut acks = Vec::with_capacity(attempts.len().min(1024));
    for queued in attempts.items() {
        let payload =
            serde_json::to_vec(queued).map_err(|e| QueueError::jetstream("encoding an item")(e))?;
        let key = queued.key();
        // `header`, not `headers`: a whole map would replace the message id set beside it.
        let publish = Publish::build()
            .header(ATTEMPT_HEADER, key.as_str())
            .message_id(key)
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
