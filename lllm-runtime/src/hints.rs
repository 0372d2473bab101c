//! What a request says about itself to the server: the dialog's identity as a session (and the
//! session it was forked from), its priority, and the fields of each server's [`Profile`].
//!
//! An agent's [`InferenceHints`] (built with [`InferenceHintsBuilder`], refused with a
//! [`HintsError`]) become the [`RequestFields`] of each of its requests; [`ForkSession`] decides
//! what a fork sends, [`Priority`] and [`Demand`] what a request's priority is, [`RunClass`] how a
//! run's requests rank, and a caller's [`Conversation`] which session a served run's dialogs join.
#![doc = include_str!("../../docs/hints.md")]

pub use lllm_core::{
    Demand, ForkSession, HintsError, InferenceHints, InferenceHintsBuilder, Priority, Profile,
    RequestFields, RunClass,
};

pub use crate::conversation::Conversation;
