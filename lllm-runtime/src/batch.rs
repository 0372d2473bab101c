//! Batches: one tactic over many inputs ([`BatchPlan`] of [`BatchItem`]s, run by
//! [`Engine::batch`](crate::Engine::batch)), one JSON line of [`BatchOutput`] per item as it ends,
//! a [`BatchReport`] at the end; a [`Shard`] runs a stable share of the items on one machine.
//! The guide below covers shards and a batch on NATS JetStream ([`queue`](crate::queue), feature
//! `queue`); `docs/durable.md` ([`journal`](crate::journal)) covers batches on one machine.
#![doc = include_str!("../../docs/scale.md")]

pub use crate::engine::batch::{
    read_items, BatchError, BatchItem, BatchOutput, BatchPlan, BatchProgress, BatchReport,
    ItemOutcome, Shard, ShardError, DEFAULT_BATCH_CONCURRENCY, MAX_OUTPUT_LINE_BYTES, MAX_SHARDS,
};
