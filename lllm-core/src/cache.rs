//! lllm's cache directory: where `lllm serve` keeps its runs and MCP's OAuth tokens are stored.

use std::path::PathBuf;

/// lllm's cache directory: `LLLM_CACHE_DIR`, else `$XDG_CACHE_HOME/lllm`, else `~/.cache/lllm`,
/// else `.lllm` in the current directory (no home at all). One rule for every file lllm caches,
/// so that one variable moves them all.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("LLLM_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("lllm")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/lllm")))
        .unwrap_or_else(|| PathBuf::from(".lllm"))
}
