//! Content-free traces of agent runs: the shape of every model request (which chain, which parent, when,
//! how long, which prompt blocks) with no text in it.
//!
//! Prompts are cut into blocks; each block gets an id that depends on the block and on every block
//! before it, so equal prefixes give equal leading ids (between the turns of one dialog, and between a
//! fork and its parent) while no id reveals what a block said: block hashes are keyed with a random
//! secret that lives only in memory for the run.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};

use serde::{Deserialize, Serialize};

use crate::hints::Profile;
use crate::message::Message;

/// The format name written in a trace's first line.
pub const TRACE_FORMAT: &str = "lllm-trace/1";
/// Tokens per block unless configured.
pub const DEFAULT_BLOCK_TOKENS: usize = 64;
/// Characters that stand for one token when no tokenizer is given.
pub const CHARS_PER_TOKEN: usize = 4;

/// The first line of a trace: what the rows mean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Always [`TRACE_FORMAT`].
    pub format: String,
    /// Tokens per block of `hash_ids`.
    pub block_size: usize,
    /// How prompts were cut: `chars/4` (4 characters of the serialised conversation per token) or
    /// `tokenizer`.
    pub blocks: String,
    /// The profile the rows' hints were sent with (a row sent with another says so itself). Traces
    /// written before it existed have none: their values are taken as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
}

/// One model request. A superset of a Mooncake trace row (`session_id`, `timestamp`, `delay`,
/// `input_length`, `output_length`, `hash_ids`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    /// The session id the request carried (or the dialog id when hints send none).
    pub session_id: String,
    /// The parent dialog's session id, for a fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// The profile this request's hints were sent with, when it is not the header's (or there is no
    /// header): `priority`, `strict_priority` and `osl` are as that profile sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The agent's name.
    pub agent: String,
    /// Milliseconds from the run's start to the request.
    pub timestamp: u64,
    /// Milliseconds since this chain's previous answer (0 for its first request).
    pub delay: u64,
    /// The part of `delay` spent running tools.
    pub tool_wait_ms: u64,
    /// Prompt tokens (the server's count, else an estimate).
    pub input_length: u64,
    /// Answer tokens (the server's count, else an estimate).
    pub output_length: u64,
    /// Whether the lengths are estimates (the server sent no usage).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lengths_estimated: bool,
    /// Prompt tokens served from the server's prefix cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// One id per block of the prompt.
    pub hash_ids: Vec<u64>,
    /// The priority hint as sent (after the profile's transformation: negated for vLLM), when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Dynamo's `strict_priority` tier, when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_priority: Option<u64>,
    /// The expected output length hint, when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osl: Option<u64>,
    /// Milliseconds from sending to the whole answer.
    pub latency_ms: u64,
    /// Milliseconds to the first streamed piece, for streamed answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    /// The first request of a compacted window: its prompt no longer extends the chain's earlier
    /// ones (the system prompt's blocks aside).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prefix_reset: bool,
    /// Which endpoint answered, when not the agent's own: n for `model_args.fallback[n-1]`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallback: u32,
    /// That fallback endpoint's base URL, without credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Milliseconds the request waited for a slot of its endpoint (`max_in_flight`), when it did;
    /// not part of `latency_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<u64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Cuts prompts into blocks and names each block by a keyed hash of it and all blocks before it.
#[derive(Debug)]
pub struct BlockHasher {
    keys: RandomState,
    block_tokens: usize,
    ids: HashMap<u64, u64>,
    /// The last id given out.
    last_id: u64,
}

impl BlockHasher {
    /// Blocks of `block_tokens` tokens (at [`CHARS_PER_TOKEN`] characters each), keyed with a fresh
    /// random secret.
    pub fn new(block_tokens: usize) -> Self {
        BlockHasher {
            keys: RandomState::new(),
            block_tokens: block_tokens.max(1),
            ids: HashMap::new(),
            last_id: 0,
        }
    }

    /// The block ids of a conversation, cutting its text every [`CHARS_PER_TOKEN`] × block size
    /// characters. Ids are small integers, numbered in the order blocks are first seen in the run; the
    /// same prefix always gives the same leading ids.
    pub fn hash_ids(&mut self, messages: &[&Message]) -> Vec<u64> {
        let units: Vec<u32> = serialise(messages).chars().map(u32::from).collect();
        self.chain(&units, self.block_tokens * CHARS_PER_TOKEN)
    }

    /// The block ids of a conversation already turned into token ids (exact blocks of the block size).
    pub fn hash_token_ids(&mut self, tokens: &[u32]) -> Vec<u64> {
        self.chain(tokens, self.block_tokens)
    }

    fn chain(&mut self, units: &[u32], block: usize) -> Vec<u64> {
        let mut chained = 0u64;
        let mut out = Vec::with_capacity(units.len() / block + 1);
        for block in units.chunks(block) {
            let mut hasher = self.keys.build_hasher();
            hasher.write_u64(chained);
            for unit in block {
                hasher.write_u32(*unit);
            }
            // A partial last block gets its own id: the same text cut short is a different block.
            hasher.write_usize(block.len());
            chained = hasher.finish();
            let id = match self.ids.get(&chained) {
                Some(id) => *id,
                None => {
                    let id = self.fresh_id();
                    self.ids.insert(chained, id);
                    id
                }
            };
            out.push(id);
        }
        out
    }

    /// An id no block has had: for blocks known to exist but not seen (a prompt the server counted
    /// longer than the estimate).
    pub fn fresh_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    /// `ids` made exactly `blocks` long: cut, or continued with fresh ids. Formats that require one
    /// id per block of the reported length (Dynamo's) get them, and no two different blocks ever
    /// share an id.
    pub fn fit(&mut self, mut ids: Vec<u64>, blocks: usize) -> Vec<u64> {
        ids.truncate(blocks);
        while ids.len() < blocks {
            ids.push(self.fresh_id());
        }
        ids
    }

    /// An estimate of the tokens of a conversation, for servers that report no usage.
    pub fn estimate_tokens(messages: &[&Message]) -> u64 {
        (serialise(messages).chars().count() / CHARS_PER_TOKEN) as u64
    }
}

/// The conversation as the blocks cut it: role and text of each message, in order.
pub fn serialise(messages: &[&Message]) -> String {
    let mut text = String::new();
    for message in messages {
        text.push_str(message.role.as_str());
        text.push('\n');
        text.push_str(message.text());
        for call in &message.tool_calls {
            text.push_str(&call.name);
            text.push_str(&call.arguments);
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_prefixes_share_leading_ids_and_ids_say_nothing() {
        let system = Message::system("You are a careful planner. ".repeat(40));
        let first = Message::user("Plan a trip to the mountains with three stops.");
        let answer = Message::assistant("1. Drive up. 2. Hike. 3. Come back. ".repeat(10));
        let second = Message::user("Make it cheaper.");
        let mut hasher = BlockHasher::new(16);
        let turn_one = hasher.hash_ids(&[&system, &first]);
        let turn_two = hasher.hash_ids(&[&system, &first, &answer, &second]);
        let full_blocks = turn_one.len() - 1;
        assert_eq!(
            turn_two[..full_blocks],
            turn_one[..full_blocks],
            "the next turn extends the prefix"
        );
        assert!(turn_two.len() > turn_one.len());
        let other = hasher.hash_ids(&[&Message::system("Something else entirely.")]);
        assert!(other.iter().all(|id| !turn_one.contains(id)));
        // A new run keys its hashes afresh: the same text maps to fresh, unrelated hashes.
        let mut again = BlockHasher::new(16);
        assert_eq!(
            again.hash_ids(&[&system, &first]),
            (1..=turn_one.len() as u64).collect::<Vec<_>>()
        );
    }
}
