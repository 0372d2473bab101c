//! NVIDIA Dynamo's agentic trace format, `dynamo.agentic_mooncake` version 2: a header line, then
//! one row per model request with its exact dependencies (the previous turn of its dialog, the
//! request a fork started from, the branches a step waited for), so that Dynamo's offline simulator
//! and planner replay a run's request graph instead of guessing it from timestamps.

use serde::{Deserialize, Serialize};

/// The `schema` of the header line.
pub const AGENTIC_SCHEMA: &str = "dynamo.agentic_mooncake";
/// The `version` of the header line.
pub const AGENTIC_VERSION: u32 = 2;

/// The first line of an agentic trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgenticHeader {
    /// Always [`AGENTIC_SCHEMA`].
    pub schema: String,
    /// Always [`AGENTIC_VERSION`].
    pub version: u32,
    /// Tokens per block of `hash_ids`.
    pub block_size: usize,
    /// `local`: hash ids are numbered within this trace.
    pub hash_id_scope: String,
    /// Who wrote the trace.
    pub source: AgenticSource,
}

/// Where an agentic trace comes from (Dynamo requires both fields non-empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgenticSource {
    /// The producer (`lllm`).
    pub format: String,
    /// An id of the recorded run.
    pub digest: String,
}

/// One model request of an agentic trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgenticRow {
    /// Unique in the trace.
    pub request_id: String,
    /// The trajectory (one run); dependencies never cross it.
    pub play_id: String,
    /// The session id the request carried (the dialog's id when the hints send none).
    pub session_id: String,
    /// The model, as sent.
    pub model: String,
    /// Prompt tokens (> 0).
    pub input_length: u64,
    /// Answer tokens.
    pub output_length: u64,
    /// Exactly `ceil(input_length / block_size)` block ids; equal prefixes share leading ids.
    pub hash_ids: Vec<u64>,
    /// Milliseconds from the trace's start before which the request is not sent: the recorded time
    /// for a request that waits for nothing, 0 for one whose dependencies decide.
    pub not_before_ms: u64,
    /// What must happen before the request is sent.
    pub dependencies: Vec<Dependency>,
    /// The priority hint, when sent, as Dynamo's `nvext.agent_hints.priority` carries it (higher is
    /// more urgent): a request sent with another profile has its priority converted (vLLM's sign
    /// turned back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

/// One edge of the request graph: the request waits for `request_id`'s `trigger`, then `delay_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// The request waited for.
    pub request_id: String,
    /// What of it is waited for.
    pub trigger: Trigger,
    /// Milliseconds after the trigger (tools running, the client's own work).
    pub delay_ms: u64,
    /// Why the request waits.
    pub relation: Relation,
}

/// When a dependency is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// When the request waited for has been answered.
    Completion,
    /// When the request waited for has been sent.
    Dispatch,
}

/// Why a request waits for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// The previous turn of the same dialog.
    Sequence,
    /// The request a fork was made from (the fork's first request).
    Spawn,
    /// Work of other dialogs the step waited for (the branches of a parallel step, the step before).
    Join,
    /// A barrier between replay phases (read, never written by lllm).
    ReplayBarrier,
}

impl AgenticHeader {
    /// The header of a trace with blocks of `block_size` tokens, for the run `digest`.
    pub fn new(block_size: usize, digest: impl Into<String>) -> Self {
        AgenticHeader {
            schema: AGENTIC_SCHEMA.to_owned(),
            version: AGENTIC_VERSION,
            block_size,
            hash_id_scope: "local".to_owned(),
            source: AgenticSource {
                format: "lllm".to_owned(),
                digest: digest.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_dynamos_own_fixture_shape() {
        let row: AgenticRow = serde_json::from_str(r#"{"request_id":"agent-join","play_id":"agent-play","session_id":"root","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[303],"not_before_ms":0,"dependencies":[{"request_id":"agent-root","trigger":"completion","delay_ms":1,"relation":"sequence"},{"request_id":"agent-child","trigger":"completion","delay_ms":1,"relation":"join"}]}"#).expect("a row");
        assert_eq!(row.dependencies[1].relation, Relation::Join);
        let header = serde_json::to_value(AgenticHeader::new(64, "run")).expect("JSON");
        assert_eq!(header["schema"], "dynamo.agentic_mooncake");
        assert_eq!(header["version"], 2);
        assert_eq!(header["hash_id_scope"], "local");
    }
}
