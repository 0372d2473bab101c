//! `--shard K/N`: a stable split of a batch's items by id, so that N machines can share one items
//! file with no server: the shards are disjoint and together they are the whole batch.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// Most shards one file may be split into.
pub const MAX_SHARDS: u32 = 1_000_000;

/// A shard written wrongly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard `{written}`: {problem}; write K/N with 1 <= K <= N <= {MAX_SHARDS}, like 2/3")]
pub struct ShardError {
    written: String,
    problem: &'static str,
}

impl Shard {
    /// Shard `index` (1-based) of `count`.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        let written = format!("{index}/{count}");
        let problem = if count == 0 || count > MAX_SHARDS {
            Some("N is out of range")
        } else if index == 0 || index > count {
            Some("K is not one of the N shards")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(ShardError { written, problem }),
            None => Ok(Shard { index, count }),
        }
    }

    /// Whether the item with id `id` (as the batch reads it) is in this shard: the first eight
    /// bytes of the id's SHA-256, modulo the count. The same id falls in the same shard on every
    /// machine and in every release.
    pub fn contains(&self, id: &str) -> bool {
        let digest = Sha256::digest(id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, ShardError> {
        let refuse = |problem| ShardError {
            written: text.chars().take(40).collect(),
            problem,
        };
        let (k, n) = text.split_once('/').ok_or(refuse("no `/`"))?;
        let k = k
            .trim()
            .parse()
            .map_err(|_| refuse("K is not a whole number"))?;
        let n = n
            .trim()
            .parse()
            .map_err(|_| refuse("N is not a whole number"))?;
        Shard::new(k, n).map_err(|e| refuse(e.problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_shards_are_disjoint_and_cover_every_id() {
        let shards: Vec<Shard> = (1..=3).map(|k| Shard::new(k, 3).expect("shard")).collect();
        let mut sizes = [0usize; 3];
        for id in (0..3000)
            .map(|i| i.to_string())
            .chain(["a".into(), "é".into()])
        {
            let owners: Vec<usize> = (0..3).filter(|&i| shards[i].contains(&id)).collect();
            assert_eq!(owners.len(), 1, "{id} is in {owners:?}");
            sizes[owners[0]] += 1;
        }
        assert!(sizes.iter().all(|&n| n > 900), "a fair split: {sizes:?}");
        // Stable across machines and releases: pinned ids stay in their shards.
        for (id, shard) in [("item-17", 1), ("1", 2), ("42", 1)] {
            assert!(Shard::new(shard, 3).expect("shard").contains(id), "{id}");
        }
    }

    #[test]
    fn written_shards_are_read_or_refused_saying_how_to_write_them() {
        assert_eq!("2/3".parse::<Shard>(), Shard::new(2, 3));
        assert_eq!("1/1".parse::<Shard>().expect("one").to_string(), "1/1");
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "-1/3", "1/2000000", ""] {
            let error = bad.parse::<Shard>().expect_err(bad).to_string();
            assert!(error.contains("write K/N"), "{bad}: {error}");
        }
    }
}
