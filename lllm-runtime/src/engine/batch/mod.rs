//! A batch: a tactic run once per item of a JSONL file, items concurrently, each result appended to
//! the output as it finishes; a batch run again skips the items its output already answers.

mod items;
mod output;
mod shard;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use lllm_core::{PromptVars, RunClass};

pub(crate) use items::item_id;
pub use items::{read_items, BatchItem};
#[cfg(feature = "queue")]
pub use output::{BatchOutput, ItemOutcome, MAX_OUTPUT_LINE_BYTES};
pub use shard::{Shard, ShardError, MAX_SHARDS};

use super::{Engine, PreparedTactic, RunPlan};
use crate::tools::Confirm;

/// Items run at the same time unless the plan says otherwise.
pub const DEFAULT_BATCH_CONCURRENCY: usize = 8;

/// A batch's inputs or output cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// A file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of the inputs is not an item.
    #[error("{}:{line}: {problem}", path.display())]
    Item {
        /// The inputs.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// Another batch writes the same output now.
    #[error("{} is being written by another batch: one output has one writer at a time; wait for that batch to end", path.display())]
    Busy {
        /// The output.
        path: PathBuf,
    },
    /// The file is not a regular file (a directory, a FIFO, a device).
    #[error("{} is {what}, not a regular file: give a file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// The output cannot be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// How to run a batch: what every item shares.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BatchPlan {
    /// Items run at the same time (at least 1).
    pub concurrency: usize,
    /// Variables of every item (an item's own win).
    pub vars: PromptVars,
    /// How the items' requests rank under `priority: auto` (batch by default).
    pub class: RunClass,
    /// Decides about calls that need confirmation (declined without it).
    pub confirm: Option<Arc<dyn Confirm>>,
}

impl Default for BatchPlan {
    fn default() -> Self {
        BatchPlan {
            concurrency: DEFAULT_BATCH_CONCURRENCY,
            vars: PromptVars::new(),
            class: RunClass::Batch,
            confirm: None,
        }
    }
}

/// The counts of a batch so far, reported as items start and finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchProgress {
    /// Items answered.
    pub answered: usize,
    /// Items failed.
    pub failed: usize,
    /// Items running.
    pub in_flight: usize,
}

/// What a batch did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BatchReport {
    /// Items run.
    pub run: usize,
    /// Items answered.
    pub answered: usize,
    /// Items failed.
    pub failed: usize,
    /// Tokens of the answered items.
    pub tokens: u64,
    /// Each answered item's seconds, sorted.
    pub latencies: Vec<f64>,
    /// How long the batch took.
    pub took: Duration,
}

impl BatchReport {
    /// The latency at percentile `p` (0 to 1) of the answered items, 0 when none.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let last = self.latencies.len() - 1;
        self.latencies[((last as f64) * p.clamp(0.0, 1.0)).round() as usize]
    }
}

/// The counts shared by a batch's items.
#[derive(Default)]
struct Counts {
    answered: AtomicUsize,
    failed: AtomicUsize,
    in_flight: AtomicUsize,
    tokens: AtomicU64,
}

impl Counts {
    fn now(&self) -> BatchProgress {
        BatchProgress {
            answered: self.answered.load(Ordering::SeqCst),
            failed: self.failed.load(Ordering::SeqCst),
            in_flight: self.in_flight.load(Ordering::SeqCst),
        }
    }
}

impl Engine {
    /// Runs `items` on `tactic`, `plan.concurrency` at a time, each with a team of its own (its own
    /// dialogs and sessions; `{item_id}` in a session prefix names it), appending each result to
    /// `output` as it finishes. `progress` sees the counts whenever an item starts or ends. The first
    /// failed write of the output ends the batch with that error, once the items in flight finish.
    pub async fn batch(
        &self,
        tactic: &PreparedTactic,
        items: Vec<BatchItem>,
        plan: &BatchPlan,
        output: &BatchOutput,
        progress: &(dyn Fn(BatchProgress) + Sync),
    ) -> Result<BatchReport, BatchError> {
        let counts = Counts::default();
        let latencies = Mutex::new(Vec::with_capacity(items.len()));
        let run = items.len();
        let started = Instant::now();
        let runs = items.into_iter().map(|item| {
            let (counts, latencies) = (&counts, &latencies);
            async move {
                counts.in_flight.fetch_add(1, Ordering::SeqCst);
                progress(counts.now());
                let began = Instant::now();
                let outcome = self.item(tactic, plan, &item).await;
                let seconds = began.elapsed().as_secs_f64();
                counts.in_flight.fetch_sub(1, Ordering::SeqCst);
                match &outcome {
                    ItemOutcome::Answered { usage, .. } => {
                        counts.answered.fetch_add(1, Ordering::SeqCst);
                        counts
                            .tokens
                            .fetch_add(usage.total_tokens(), Ordering::SeqCst);
                        latencies
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(seconds);
                    }
                    ItemOutcome::Failed { .. } => {
                        counts.failed.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let written = output.append(&outcome.line(&item.id_json, seconds));
                progress(counts.now());
                written
            }
        });
        let mut stream = futures::stream::iter(runs).buffer_unordered(plan.concurrency.max(1));
        let mut write_error = None;
        while let Some(written) = stream.next().await {
            if let Err(e) = written {
                write_error.get_or_insert(e);
            }
        }
        drop(stream);
        if let Some(e) = write_error {
            return Err(e);
        }
        let mut latencies = latencies.into_inner().unwrap_or_else(|p| p.into_inner());
        latencies.sort_by(f64::total_cmp);
        Ok(BatchReport {
            run,
            answered: counts.answered.load(Ordering::SeqCst),
            failed: counts.failed.load(Ordering::SeqCst),
            tokens: counts.tokens.load(Ordering::SeqCst),
            latencies,
            took: started.elapsed(),
        })
    }

    /// One item: its variables over the batch's, its input, its own run.
    async fn item(
        &self,
        tactic: &PreparedTactic,
        plan: &BatchPlan,
        item: &BatchItem,
    ) -> ItemOutcome {
        let mut vars = plan.vars.clone();
        vars.extend(item.vars.clone());
        let mut run = RunPlan::new()
            .maybe_input(item.input.clone())
            .vars(vars)
            .class(plan.class)
            .item(item.id.clone());
        if let Some(confirm) = &plan.confirm {
            run = run.confirm(confirm.clone());
        }
        ItemOutcome::of(self.run(tactic, run).await, tactic)
    }
}
