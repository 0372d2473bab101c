//! A worker: takes items off the queue, runs each with its journal copied into JetStream line by
//! line, publishes its result, then acknowledges it. An item redelivered after its worker died
//! resumes from that journal: answered requests are not sent again, finished tool calls do not run
//! again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{pull, DeliverPolicy};
use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::jetstream::{AckKind, Message};
use futures::StreamExt as _;
use tokio::sync::mpsc;

use super::{Connection, QueueAddress, QueueError, QueuedItem, TacticSha, ATTEMPT_HEADER};
use crate::engine::batch::ItemOutcome;
use crate::engine::{Engine, JournalPlan, PreparedTactic, RunPlan};
use crate::journal::{Journal, JournalTap};
use lllm_core::RunClass;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    /// Items run at the same time.
    pub concurrency: usize,
    /// How the items' requests rank under `priority: auto`.
    pub class: RunClass,
    /// Where the items' journals are kept while they run (their copies are in JetStream).
    pub journals: PathBuf,
    /// How long an item may go without a sign of life before JetStream gives it to another worker;
    /// a running item sends one every third of it.
    pub ack_wait: Duration,
    /// Where the items in flight are kept, for [`InFlight::hand_back`].
    pub in_flight: InFlight,
}

/// The items a worker is running, so that a worker told to stop can hand them back at once
/// (another worker then resumes each from its journal) instead of letting them time out.
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    items: Arc<std::sync::Mutex<HashMap<u64, Message>>>,
    /// Set when the worker ended, with the items it handed back.
    done: Arc<(std::sync::Mutex<Option<usize>>, std::sync::Condvar)>,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Message>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mark_done(&self, handed_back: usize) {
        let (done, ended) = &*self.done;
        *done.lock().unwrap_or_else(|p| p.into_inner()) = Some(handed_back);
        ended.notify_all();
    }

    /// Blocks (a thread, not a task) until the worker has ended and handed its items back, at
    /// most `limit`: what a signal handler waits for before the process exits. The items handed
    /// back, or `None` when the worker did not end in time.
    pub fn wait_handed_back(&self, limit: Duration) -> Option<usize> {
        let (done, ended) = &*self.done;
        let guard = done.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = ended
            .wait_timeout_while(guard, limit, |d| d.is_none())
            .unwrap_or_else(|p| p.into_inner());
        *guard
    }

    /// Hands every item in flight back to the queue (for another worker, at once); how many.
    pub async fn hand_back(&self) -> usize {
        let messages: Vec<Message> = self.lock().drain().map(|(_, m)| m).collect();
        // Acknowledged by the server (each on its own connection), so nothing waits in a
        // client's buffer when the process exits next.
        let naks = messages.iter().map(|m| async move {
            tokio::time::timeout(
                Duration::from_secs(2),
                m.double_ack_with(AckKind::Nak(None)),
            )
            .await
            .is_ok_and(|sent| sent.is_ok())
        });
        futures::future::join_all(naks)
            .await
            .into_iter()
            .filter(|&n| n)
            .count()
    }
}

/// What a worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerReport {
    /// Items answered.
    pub answered: usize,
    /// Items failed (their error is their result).
    pub failed: usize,
    /// Items dropped: on this tactic's subject, but made for another tactic (forged, or published
    /// by hand on the wrong subject).
    pub refused: usize,
    /// Items handed back unfinished (the worker was stopping).
    pub handed_back: usize,
}

#[derive(Default)]
struct Counts {
    answered: AtomicUsize,
    failed: AtomicUsize,
    refused: AtomicUsize,
}

/// Takes items for the tactic with SHA-256 `sha` (only those: they are on a subject of its own)
/// until `stopping` says so (then the items in
/// flight are finished, or handed back if their runs were halted).
pub async fn run_worker(
    engine: &Engine,
    tactic: &PreparedTactic,
    sha: &TacticSha,
    address: &QueueAddress,
    plan: &WorkerPlan,
    stopping: &(dyn Fn() -> bool + Sync),
) -> Result<WorkerReport, QueueError> {
    std::fs::create_dir_all(&plan.journals)
        .map_err(|e| QueueError::jetstream("making the journals' folder")(e))?;
    // The first connection says at once that the server cannot be reached (or that the queue is
    // an earlier release's); the slots share it, and wait out what fails later.
    let first = Connection::open(address).await?;
    let counts = Counts::default();
    let slots = (0..plan.concurrency.max(1)).map(|_| async {
        let mut shared = Some(first.clone());
        while !stopping() && !crate::halt::halted() {
            let taking = async {
                let connection = match shared.take() {
                    Some(connection) => connection,
                    None => Connection::open(address).await?,
                };
                let consumer = workers(&connection, sha, plan).await?;
                while !stopping() && !crate::halt::halted() {
                    take_one(&connection, &consumer, engine, tactic, sha, plan, &counts).await?;
                }
                Ok::<(), QueueError>(())
            };
            if let Err(error) = taking.await {
                tracing::warn!(%error, "the queue failed; trying again in a second");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    });
    futures::future::join_all(slots).await;
    // Every slot has stopped: what is still in flight goes back to the queue now.
    let handed_back = plan.in_flight.hand_back().await;
    plan.in_flight.mark_done(handed_back);
    Ok(WorkerReport {
        answered: counts.answered.load(Ordering::SeqCst),
        failed: counts.failed.load(Ordering::SeqCst),
        refused: counts.refused.load(Ordering::SeqCst),
        handed_back,
    })
}

/// The durable consumer of the items of the tactic with SHA-256 `sha`, shared by its workers: a
/// worker of another file never receives them, so it cannot keep taking them ahead of one that
/// can run them.
async fn workers(
    connection: &Connection,
    sha: &TacticSha,
    plan: &WorkerPlan,
) -> Result<async_nats::jetstream::consumer::Consumer<pull::Config>, QueueError> {
    let name = connection.address.workers(sha);
    connection
        .items
        .get_or_create_consumer(
            &name,
            pull::Config {
                durable_name: Some(name.clone()),
                filter_subject: connection.address.items_subject(sha),
                ack_wait: plan.ack_wait,
                ..Default::default()
            },
        )
        .await
        .map_err(QueueError::jetstream("taking items"))
}

/// Waits up to a second for one item and runs it.
async fn take_one(
    connection: &Connection,
    consumer: &async_nats::jetstream::consumer::Consumer<pull::Config>,
    engine: &Engine,
    tactic: &PreparedTactic,
    sha: &TacticSha,
    plan: &WorkerPlan,
    counts: &Counts,
) -> Result<(), QueueError> {
    let mut batch = consumer
        .fetch()
        .max_messages(1)
        .expires(Duration::from_secs(1))
        .messages()
        .await
        .map_err(QueueError::jetstream("taking items"))?;
    while let Some(message) = batch.next().await {
        let message = message.map_err(QueueError::jetstream("taking items"))?;
        let item = Item {
            connection,
            message,
            ack_wait: consumer.cached_info().config.ack_wait,
            sha,
        };
        item.run(engine, tactic, plan, counts).await?;
    }
    Ok(())
}

struct Item<'c> {
    connection: &'c Connection,
    message: Message,
    /// The ack wait as the tactic's consumer has it (its first worker's `--ack-wait` made it).
    ack_wait: Duration,
    /// The SHA-256 of the worker's tactic file.
    sha: &'c TacticSha,
}

impl Item<'_> {
    async fn run(
        self,
        engine: &Engine,
        tactic: &PreparedTactic,
        plan: &WorkerPlan,
        counts: &Counts,
    ) -> Result<(), QueueError> {
        let sha = self.sha;
        let sequence = self.message.info().map(|i| i.stream_sequence).unwrap_or(0);
        if crate::halt::halted() {
            // Taken as the worker stops: kept for the hand-back at the end of `run_worker`.
            plan.in_flight.lock().insert(sequence, self.message.clone());
            return Ok(());
        }
        let Ok(item) = serde_json::from_slice::<QueuedItem>(&self.message.payload) else {
            tracing::error!("an item on the queue is not an lllm item; it is dropped");
            return self.ack(AckKind::Term).await;
        };
        if item.tactic != sha.as_str() {
            // Not published by `lllm batch`, which puts an item on its own tactic's subject: no
            // worker of the tactic it names ever reads this subject, so it is dropped, not
            // handed back to be taken again.
            tracing::error!(
                item = %item.id,
                made_for = %item.tactic,
                this_worker = %sha,
                "dropping an item made for another tactic on this tactic's subject (its SHA-256 differs)"
            );
            counts.refused.fetch_add(1, Ordering::SeqCst);
            return self.ack(AckKind::Term).await;
        }
        let began = Instant::now();
        plan.in_flight.lock().insert(sequence, self.message.clone());
        let done = self
            .finish(engine, tactic, &item, plan, counts, began)
            .await;
        // A halted worker keeps the entry: `run_worker` hands every item back as it ends.
        if !crate::halt::halted() {
            plan.in_flight.lock().remove(&sequence);
        }
        done
    }

    /// Runs the item, publishes its result, acknowledges it.
    async fn finish(
        &self,
        engine: &Engine,
        tactic: &PreparedTactic,
        item: &QueuedItem,
        plan: &WorkerPlan,
        counts: &Counts,
        began: Instant,
    ) -> Result<(), QueueError> {
        let heartbeat = self.heartbeat(self.ack_wait / 3);
        let outcome = tokio::select! {
            outcome = self.outcome(engine, tactic, item, plan) => outcome,
            never = heartbeat => match never {},
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => {
                self.ack(AckKind::Nak(None)).await?;
                return Err(error);
            }
        };
        if crate::halt::halted() {
            // The worker is stopping: what the run did is in its journal; another worker resumes
            // it once `run_worker` hands it back.
            return Ok(());
        }
        match &outcome {
            ItemOutcome::Answered { .. } => counts.answered.fetch_add(1, Ordering::SeqCst),
            ItemOutcome::Failed { .. } => counts.failed.fetch_add(1, Ordering::SeqCst),
        };
        let seconds = began.elapsed().as_secs_f64();
        let mut line = outcome.line(&item.id_json, seconds);
        if line.len() > MAX_LINE_BYTES {
            let error = QueueError::TooLarge {
                what: "its result",
                bytes: line.len(),
            };
            line = ItemOutcome::Failed {
                error: error.to_string(),
            }
            .line(&item.id_json, seconds);
        }
        self.publish_result(item, line).await?;
        self.message
            .double_ack()
            .await
            .map_err(QueueError::jetstream("acknowledging an item"))?;
        // The result is in: the item's journal is not needed any more.
        let subject = self.connection.address.journal_subject(&item.journal_key());
        if let Err(error) = self.connection.journals.purge().filter(subject).await {
            tracing::warn!(%error, "a finished item's journal stays in JetStream");
        }
        Ok(())
    }

    async fn ack(&self, kind: AckKind) -> Result<(), QueueError> {
        self.message
            .ack_with(kind)
            .await
            .map_err(QueueError::jetstream("acknowledging an item"))
    }

    /// Tells JetStream every `every` that the item still runs; never ends.
    async fn heartbeat(&self, every: Duration) -> std::convert::Infallible {
        loop {
            tokio::time::sleep(every).await;
            if let Err(error) = self.message.ack_with(AckKind::Progress).await {
                tracing::warn!(%error, "a heartbeat did not reach JetStream");
            }
        }
    }

    /// Runs the item on its journal (resumed from JetStream's copy, if there is one).
    async fn outcome(
        &self,
        engine: &Engine,
        tactic: &PreparedTactic,
        item: &QueuedItem,
        plan: &WorkerPlan,
    ) -> Result<ItemOutcome, QueueError> {
        let key = item.journal_key();
        let subject = self.connection.address.journal_subject(&key);
        let path = plan.journals.join(format!("{key}.jsonl"));
        std::fs::remove_file(&path).ok();
        let earlier = read_journal(self.connection, &subject).await?;
        let journal = if earlier.is_empty() {
            JournalPlan::Create(path.clone())
        } else {
            std::fs::write(&path, &earlier).map_err(QueueError::jetstream("writing a journal"))?;
            match Journal::resume(&path) {
                Ok(journal) => JournalPlan::Resume(Arc::new(journal)),
                Err(error) => {
                    return Ok(ItemOutcome::Failed {
                        error: format!("its journal in JetStream cannot be resumed: {error}"),
                    })
                }
            }
        };
        let (tap, publisher) = journal_publisher(self.connection, subject);
        // No confirmer: a call that needs a confirmation is declined, as in a local batch.
        let run = RunPlan::new()
            .maybe_input(item.input.clone())
            .vars(item.vars.clone())
            .class(plan.class)
            .item(item.id.clone())
            .journal(journal)
            .journal_tap(tap);
        let result = engine.run(tactic, run).await;
        match publisher.flush().await {
            Ok(()) => {}
            // Final: the same line would be too large on every worker.
            Err(error @ QueueError::TooLarge { .. }) => {
                return Ok(ItemOutcome::Failed {
                    error: error.to_string(),
                })
            }
            Err(error) => return Err(error),
        }
        std::fs::remove_file(&path).ok();
        Ok(ItemOutcome::of(result, tactic))
    }

    async fn publish_result(&self, item: &QueuedItem, line: String) -> Result<(), QueueError> {
        // The key of what was run, so the batch takes this result for that content only; and
        // the message id (`header`, not `headers`: a whole map would replace it), so a second
        // worker's result of the same attempt is dropped.
        let key = item.key();
        let publish = Publish::build()
            .header(ATTEMPT_HEADER, key.as_str())
            .message_id(key)
            .payload(line.into_bytes().into());
        self.connection
            .js
            .send_publish(self.connection.address.results_subject(self.sha), publish)
            .await
            .map_err(QueueError::jetstream("publishing a result"))?
            .await
            .map_err(QueueError::jetstream("publishing a result"))?;
        Ok(())
    }
}

/// The lines of the journal on `subject`, in order (empty: none yet).
async fn read_journal(connection: &Connection, subject: &str) -> Result<Vec<u8>, QueueError> {
    use async_nats::jetstream::stream::LastRawMessageErrorKind;
    let last = match connection
        .journals
        .get_last_raw_message_by_subject(subject)
        .await
    {
        Ok(last) => last.sequence,
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => return Ok(Vec::new()),
        // Anything else is no answer, not "no journal": starting afresh would resend what the
        // journal holds.
        Err(e) => return Err(QueueError::jetstream("reading a journal")(e)),
    };
    let consumer = connection
        .journals
        .create_consumer(pull::OrderedConfig {
            filter_subject: subject.to_owned(),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(QueueError::jetstream("reading a journal"))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(QueueError::jetstream("reading a journal"))?;
    let mut lines = Vec::new();
    while let Some(message) = messages.next().await {
        let message = message.map_err(QueueError::jetstream("reading a journal"))?;
        lines.extend_from_slice(&message.payload);
        let sequence = message
            .info()
            .map(|i| i.stream_sequence)
            .unwrap_or(u64::MAX);
        if sequence >= last {
            break;
        }
    }
    Ok(lines)
}

/// Largest journal line or result a queue message carries (the stream's limit, less room for the
/// message's headers).
const MAX_LINE_BYTES: usize = super::MAX_MESSAGE_BYTES as usize - 4096;

/// Why a journal's copy stopped.
enum Copy {
    /// JetStream did not take a line (the item is tried again).
    Failed(String),
    /// A line is too large for a queue message (the item fails).
    TooLarge(usize),
}

enum Publishing {
    Line(Vec<u8>),
    Flush(tokio::sync::oneshot::Sender<Result<(), QueueError>>),
}

/// Publishes a journal's lines to JetStream in order, each acknowledged before the next.
struct Publisher {
    sender: mpsc::UnboundedSender<Publishing>,
}

impl Publisher {
    /// Waits until every line so far is in JetStream.
    async fn flush(&self) -> Result<(), QueueError> {
        let (done, flushed) = tokio::sync::oneshot::channel();
        let gone = || QueueError::jetstream("copying a journal")("the publisher stopped");
        self.sender
            .send(Publishing::Flush(done))
            .map_err(|_| gone())?;
        flushed.await.map_err(|_| gone())?
    }
}

fn journal_publisher(connection: &Connection, subject: String) -> (JournalTap, Publisher) {
    let (sender, mut lines) = mpsc::unbounded_channel::<Publishing>();
    let js = connection.js.clone();
    tokio::spawn(async move {
        let mut failed = None;
        while let Some(next) = lines.recv().await {
            match next {
                Publishing::Line(line) if failed.is_none() => {
                    if line.len() > MAX_LINE_BYTES {
                        failed = Some(Copy::TooLarge(line.len()));
                        continue;
                    }
                    let sent = match js.publish(subject.clone(), line.into()).await {
                        Ok(ack) => ack.await.map(drop).map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                    failed = sent.err().map(Copy::Failed);
                }
                Publishing::Line(_) => {}
                Publishing::Flush(done) => {
                    let result = match &failed {
                        None => Ok(()),
                        Some(Copy::Failed(problem)) => {
                            Err(QueueError::jetstream("copying a journal")(problem.clone()))
                        }
                        Some(Copy::TooLarge(bytes)) => Err(QueueError::TooLarge {
                            what: "a line of its journal",
                            bytes: *bytes,
                        }),
                    };
                    done.send(result).ok();
                    return;
                }
            }
        }
    });
    let tap_sender = sender.clone();
    let tap = JournalTap(Arc::new(move |line: &[u8]| {
        tap_sender.send(Publishing::Line(line.to_vec())).ok();
    }));
    (tap, Publisher { sender })
}
