//! What replay keeps of one recorded request, whatever the trace's format.

use std::sync::Arc;

use lllm_core::Profile;

/// What replay needs of one row: no text, no agent name, no figures it does not use.
#[derive(Debug, Clone)]
pub(super) struct Request {
    pub(super) parent: Option<Arc<str>>,
    pub(super) timestamp: u64,
    pub(super) delay: u64,
    pub(super) output_length: u64,
    pub(super) hash_ids: Box<[u64]>,
    /// The hints as recorded, that is as the profile `sent_with` sent them.
    pub(super) priority: Option<i32>,
    pub(super) strict_priority: Option<u32>,
    pub(super) osl: Option<u32>,
    /// The profile the hints were sent with, when the trace says (an agentic trace's are Dynamo's);
    /// `None`: the values are taken as they are.
    pub(super) sent_with: Option<Profile>,
    /// Tokens of the last block, when the trace gives the exact prompt length (agentic traces);
    /// otherwise every block is whole.
    pub(super) last_block: Option<usize>,
}

/// A recorded priority as the i32 the hints take; `label` names the field in the error.
pub(super) fn priority_in_range(priority: Option<i64>, label: &str) -> Result<Option<i32>, String> {
    priority
        .map(|p| {
            i32::try_from(p).map_err(|_| {
                format!(
                    "{label}: {p} is out of range; use a whole number from {} to {}",
                    i32::MIN,
                    i32::MAX
                )
            })
        })
        .transpose()
}
