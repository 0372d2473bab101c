//! The tokenizer a trace can count tokens with (`lllm run --tokenizer tokenizer.json`): the
//! Hugging Face `tokenizers` crate with the `tokenizer` feature. Without it (most builds: the crate
//! is large and few runs record traces with exact token blocks) [`Tokenizer`] has no value, and
//! loading one says which feature to build with.

use std::path::{Path, PathBuf};

/// A Hugging Face tokenizer (`tokenizers::Tokenizer` with the `tokenizer` feature).
#[cfg(feature = "tokenizer")]
pub use tokenizers::Tokenizer;

/// A Hugging Face tokenizer: none can exist in a build without the `tokenizer` feature.
#[cfg(not(feature = "tokenizer"))]
#[derive(Debug, Clone)]
pub enum Tokenizer {}

/// Largest tokenizer file read.
const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

/// A tokenizer file cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the tokenizer {}", path.display())]
#[non_exhaustive]
pub struct TokenizerError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Loads a Hugging Face `tokenizer.json`: only a regular file of at most 256 MiB is read (real
/// ones are a few MiB), so that a wrong path (a device, a FIFO) fails at once instead of reading
/// for ever. Without the `tokenizer` feature the file is checked the same way, then refused with
/// an error that says how to get tokenizer support.
pub(crate) fn load(path: &Path) -> Result<Tokenizer, TokenizerError> {
    let fail = |source: Box<dyn std::error::Error + Send + Sync>| TokenizerError {
        path: path.to_owned(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(|e| fail(e.into()))?;
    if !metadata.is_file() {
        return Err(fail("it is not a regular file".into()));
    }
    if metadata.len() > MAX_TOKENIZER_BYTES {
        return Err(fail(
            format!(
                "it is larger than {} MiB",
                MAX_TOKENIZER_BYTES / (1024 * 1024)
            )
            .into(),
        ));
    }
    parse(path).map_err(fail)
}

/// Reads and parses a checked tokenizer file.
#[cfg(feature = "tokenizer")]
fn parse(path: &Path) -> Result<Tokenizer, Box<dyn std::error::Error + Send + Sync>> {
    use std::io::Read;

    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_TOKENIZER_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TOKENIZER_BYTES {
        return Err("it grew past the size limit while read".into());
    }
    Tokenizer::from_bytes(bytes)
}

/// Without the `tokenizer` feature no tokenizer loads.
#[cfg(not(feature = "tokenizer"))]
fn parse(_: &Path) -> Result<Tokenizer, Box<dyn std::error::Error + Send + Sync>> {
    Err(
        "this build of lllm has no tokenizer support (build it with the `tokenizer` feature, \
         for example `cargo install lllm-cli --features tokenizer`)"
            .into(),
    )
}

/// The token ids of `text`, or `None` when the tokenizer cannot encode it.
pub(crate) fn ids(tokenizer: &Tokenizer, text: String) -> Option<Vec<u32>> {
    #[cfg(feature = "tokenizer")]
    {
        tokenizer
            .encode(text, false)
            .ok()
            .map(|encoding| encoding.get_ids().to_vec())
    }
    #[cfg(not(feature = "tokenizer"))]
    {
        let _ = text;
        match *tokenizer {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokenizer_loads_with_its_feature_only() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiny-tokenizer.json");
        let loaded = load(&file);
        #[cfg(feature = "tokenizer")]
        {
            let tokenizer = loaded.expect("the tiny tokenizer loads");
            assert!(ids(&tokenizer, "the plan".to_owned()).is_some_and(|ids| !ids.is_empty()));
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let refused = loaded.err().map(|e| e.source.to_string());
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|e| e.contains("`tokenizer` feature")),
                "{refused:?}"
            );
        }
    }
}
