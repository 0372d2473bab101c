//! A batch on NATS JetStream: `lllm batch --queue` puts items on a work queue and collects their
//! results; `lllm worker` takes items and runs them, each with its journal in JetStream, so an item
//! redelivered after its worker died resumes where it stopped.
//!
//! Three streams per queue `NAME`:
//! - `LLLM_NAME_ITEMS`, a work queue: each item is delivered to one worker at a time until it is
//!   acknowledged. Items wait on a subject per tactic, `lllm.NAME.items.SHA`, read by a consumer per
//!   tactic, `workers-SHA`, so a worker only ever receives the items of its own file.
//! - `LLLM_NAME_RESULTS`: one output line per item attempt, on a subject per tactic.
//! - `LLLM_NAME_JOURNALS`: each item's journal, one message a line, on a subject of its own.
//!
//! Items and results are deduplicated by the attempt's key, the SHA-256 of its tactic, id,
//! attempt, input and variables ([`Attempts`]).

mod address;
mod attempts;
mod collect;
mod enqueue;
mod result;
mod tactic;
mod worker;

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::tactic::BoxError;

pub use address::{QueueAddress, QueueAddressError, MAX_QUEUE_NAME};
pub use attempts::Attempts;
pub use collect::{collect, Collected};
pub use enqueue::{enqueue, Enqueued};
pub use tactic::TacticSha;
pub use worker::{run_worker, InFlight, WorkerPlan, WorkerReport};

/// How long JetStream remembers a published id, so that publishing the same item or result again
/// adds nothing: a week.
const DEDUP_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
/// Largest item or result message.
const MAX_MESSAGE_BYTES: i32 = 1 << 20;

/// Why the queue cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The NATS server cannot be reached.
    #[error("cannot reach the NATS server at {server}")]
    Connect {
        /// The server.
        server: String,
        /// What the client said.
        #[source]
        source: BoxError,
    },
    /// JetStream refused or failed an operation.
    #[error("JetStream: {what}")]
    JetStream {
        /// What lllm was doing.
        what: &'static str,
        /// What the server or client said.
        #[source]
        source: BoxError,
    },
    /// The queue's streams were made by an earlier release of lllm, whose items of every tactic
    /// shared one subject.
    #[error("queue `{queue}` was made by an earlier release of lllm (one subject for the items of every tactic): let its batches finish with that release, then delete its streams (nats stream rm LLLM_{queue}_ITEMS, the same for LLLM_{queue}_RESULTS and LLLM_{queue}_JOURNALS), or use a queue of another name")]
    EarlierLayout {
        /// The queue's name.
        queue: String,
    },
    /// A journal line or a result is larger than a queue message: the item fails (it would on
    /// every worker).
    #[error("{what} is {bytes} bytes, more than a queue message carries (1 MiB)")]
    TooLarge {
        /// What.
        what: &'static str,
        /// Its size.
        bytes: usize,
    },
    /// The output file cannot be written.
    #[error(transparent)]
    Output(#[from] crate::engine::batch::BatchError),
}

impl QueueError {
    fn jetstream<E: Into<BoxError>>(what: &'static str) -> impl Fn(E) -> QueueError {
        move |source| QueueError::JetStream {
            what,
            source: source.into(),
        }
    }
}

/// One item as it travels on the queue.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct QueuedItem {
    /// The id as the batch reads it.
    pub(crate) id: String,
    /// The id as the items file wrote it.
    pub(crate) id_json: Box<RawValue>,
    pub(crate) input: Option<String>,
    pub(crate) vars: lllm_core::PromptVars,
    /// SHA-256 of the tactic file the item is for.
    pub(crate) tactic: String,
    /// Which attempt of the item this is: the error lines the batch's output had for it.
    #[serde(default)]
    pub(crate) round: u32,
}

/// The header of a result naming the attempt it answers ([`QueuedItem::key`]).
pub(crate) const ATTEMPT_HEADER: &str = "Lllm-Attempt";

impl QueuedItem {
    /// The key of this attempt: the SHA-256 of what it asks (the tactic, the id, the attempt, the
    /// input and the variables), so that an id reused with other content is another item. What
    /// JetStream deduplicates the item and its result by, what a result is matched by, and what
    /// names its journal. A worker computes it from the item it runs, never takes it from the
    /// message: a result answers the content that was run.
    pub(crate) fn key(&self) -> String {
        let content = (
            "lllm queue attempt 1",
            &self.tactic,
            &self.id,
            self.round,
            &self.input,
            &self.vars,
        );
        // Strings, a number and JSON values: always serialises.
        crate::journal::content_hash(&serde_json::to_vec(&content).unwrap_or_default())
    }

    /// The key of this attempt's journal subject.
    pub(crate) fn journal_key(&self) -> String {
        self.key()[..32].to_owned()
    }
}

/// A connection to the queue's server, with its three streams.
#[derive(Clone)]
pub(crate) struct Connection {
    pub(crate) address: QueueAddress,
    pub(crate) js: jetstream::Context,
    pub(crate) items: stream::Stream,
    pub(crate) results: stream::Stream,
    pub(crate) journals: stream::Stream,
}

impl Connection {
    /// Connects (the client reconnects by itself if the server goes away later) and makes the
    /// streams the queue needs, or finds them. A server that cannot be reached is said at once,
    /// with its address: retrying the first connection in the background made it a JetStream
    /// timeout ten seconds later.
    pub(crate) async fn open(address: &QueueAddress) -> Result<Connection, QueueError> {
        let client = async_nats::ConnectOptions::new()
            .name("lllm")
            .connection_timeout(Duration::from_secs(5))
            .connect(address.server())
            .await
            .map_err(|e| QueueError::Connect {
                server: address.server().to_owned(),
                source: e.into(),
            })?;
        let js = jetstream::new(client);
        let make = |name: String, subjects: Vec<String>, retention| stream::Config {
            name,
            subjects,
            retention,
            duplicate_window: DEDUP_WINDOW,
            max_message_size: MAX_MESSAGE_BYTES,
            storage: stream::StorageType::File,
            ..Default::default()
        };
        let items = make(
            address.items_stream(),
            vec![address.items_subjects()],
            stream::RetentionPolicy::WorkQueue,
        );
        let results = make(
            address.results_stream(),
            vec![format!("lllm.{}.results.*", address.name())],
            stream::RetentionPolicy::Limits,
        );
        let journals = make(
            address.journals_stream(),
            vec![format!("lllm.{}.journal.*", address.name())],
            stream::RetentionPolicy::Limits,
        );
        let stream = |config| {
            let js = js.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(30), js.get_or_create_stream(config))
                    .await
                    .map_err(|_| QueueError::Connect {
                        server: address.server().to_owned(),
                        source: "no answer from JetStream within 30 s (is it enabled, -js?)".into(),
                    })?
                    .map_err(QueueError::jetstream("making the streams"))
            }
        };
        let items = stream(items).await?;
        if items.cached_info().config.subjects != [address.items_subjects()] {
            return Err(QueueError::EarlierLayout {
                queue: address.name().to_owned(),
            });
        }
        Ok(Connection {
            address: address.clone(),
            items,
            results: stream(results).await?,
            journals: stream(journals).await?,
            js,
        })
    }
}
