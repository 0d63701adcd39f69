//! Token cost of tool definitions, counted with the o200k_base tokenizer (GPT-4o family),
//! whose vocabulary is embedded in the binary: counting works offline.
//!
//! The counter is our own (`o200k`: the vocabulary read in place plus a 2.8 MB index, built in
//! a few milliseconds; `pieces`: the o200k pre-tokenisation), checked against tiktoken-rs for
//! exactness. It is loaded once per process, on first need ([`TokenCounter::shared`]), and
//! never on paths that show no token counts (`call`). Counts are also remembered in a small
//! content-addressed cache in the user cache dir (`$XDG_CACHE_HOME/mcp-launch/`), so a tool
//! definition seen before costs no counting at all.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

use super::fingerprint::fnv1a;

mod o200k;
mod pieces;

/// The tokenizer whose counts we report and cache.
pub const TOKENIZER: &str = "o200k_base";

/// Entries kept in the cache file; beyond this the oldest-looking half is dropped (the file
/// must stay small enough to read in a millisecond).
const CACHE_MAX_ENTRIES: usize = 50_000;

/// Counts o200k_base tokens of text.
pub struct TokenCounter {
    vocabulary: o200k::Vocabulary,
}

/// The process's counter, indexed on first need; `None` when the embedded vocabulary is
/// damaged (callers then omit or estimate counts).
static SHARED: OnceLock<Option<TokenCounter>> = OnceLock::new();

impl TokenCounter {
    /// Indexes the embedded o200k_base vocabulary (blocking; a few milliseconds). Prefer
    /// [`TokenCounter::shared`], which does it once per process.
    pub fn load() -> Option<Self> {
        match o200k::Vocabulary::load() {
            Ok(vocabulary) => Some(Self { vocabulary }),
            Err(e) => {
                tracing::warn!(error = %e, "token counts omitted");
                None
            }
        }
    }

    /// The process's counter, loaded the first time it is asked for.
    pub fn shared() -> Option<&'static Self> {
        SHARED.get_or_init(Self::load).as_ref()
    }

    /// Whether this process has loaded the shared counter (tests check paths that must not).
    pub fn is_loaded() -> bool {
        SHARED.get().is_some()
    }

    /// Tokens of `text` (as tiktoken's `encode_ordinary(text).len()`).
    pub fn count(&self, text: &str) -> usize {
        self.vocabulary.count(text)
    }
}

/// Remembered counts, keyed by a hash of a tool's compact JSON.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    tokenizer: String,
    counts: HashMap<String, usize>,
}

/// Token counts for many tools at once. A tool costs the tokens of its compact JSON as the
/// server sent it (name, description, input schema and any other fields): what clients
/// forward to a model. Cached counts where known, the tokenizer for the rest
/// (loaded at most once), and the cache updated atomically. Blocking: run it off the async
/// threads.
pub fn count_tools(tools: &[&Value]) -> Option<Vec<usize>> {
    count_tools_with_cache(tools, cache_path().as_deref())
}

fn count_tools_with_cache(tools: &[&Value], cache: Option<&Path>) -> Option<Vec<usize>> {
    let mut file = cache.map(read_cache).unwrap_or_default();
    let texts: Vec<String> = tools.iter().map(|t| t.to_string()).collect();
    let keys: Vec<String> = texts
        .iter()
        .map(|t| format!("{:016x}", fnv1a(t.as_bytes())))
        .collect();
    let missing = keys.iter().any(|k| !file.counts.contains_key(k));
    if missing {
        let counter = TokenCounter::shared()?;
        for (key, text) in keys.iter().zip(&texts) {
            file.counts
                .entry(key.clone())
                .or_insert_with(|| counter.count(text));
        }
        if let Some(path) = cache {
            save(path, &file, &keys);
        }
    }
    Some(keys.iter().map(|k| file.counts[k]).collect())
}

/// `$XDG_CACHE_HOME/mcp-launch/token-counts.json` (or the platform's cache dir).
fn cache_path() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("mcp-launch").join("token-counts.json"))
}

/// Merges `mine`'s counts into the cache as it is now (another process may have added some),
/// under its lock; past [`CACHE_MAX_ENTRIES`], half the counts not of `keys` are forgotten.
fn save(path: &Path, mine: &CacheFile, keys: &[String]) {
    let saved = crate::files::update_locked(path, |current| {
        let mut file = current.map_or_else(empty_cache, |b| parse_cache(path, &b));
        for (key, count) in &mine.counts {
            file.counts.insert(key.clone(), *count);
        }
        if file.counts.len() > CACHE_MAX_ENTRIES {
            let keep: std::collections::HashSet<&String> = keys.iter().collect();
            let mut excess = file.counts.len() - CACHE_MAX_ENTRIES / 2;
            file.counts.retain(|k, _| {
                if excess > 0 && !keep.contains(k) {
                    excess -= 1;
                    false
                } else {
                    true
                }
            });
        }
        serde_json::to_vec(&file).ok()
    });
    if let Err(e) = saved {
        tracing::warn!(path = %path.display(), error = %e, "could not save token counts");
    }
}

fn empty_cache() -> CacheFile {
    CacheFile {
        tokenizer: TOKENIZER.to_string(),
        counts: HashMap::new(),
    }
}

fn read_cache(path: &Path) -> CacheFile {
    match std::fs::read(path) {
        Ok(bytes) => parse_cache(path, &bytes),
        Err(_) => empty_cache(),
    }
}

/// The cache in `bytes`; another tokenizer's or a corrupt one reads as empty (rebuilt).
fn parse_cache(path: &Path, bytes: &[u8]) -> CacheFile {
    let empty = empty_cache;
    match serde_json::from_slice::<CacheFile>(bytes) {
        Ok(file) if file.tokenizer == TOKENIZER => file,
        Ok(_) => empty(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "token count cache is corrupt; rebuilding it");
            empty()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_match_the_reference_tokenizer() {
        let counter = TokenCounter::load().expect("vocabulary is embedded");
        // Reference values from Python tiktoken's o200k_base.
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count(""), 0);
        let tool = json!({"name": "echo"});
        assert_eq!(
            count_tools_with_cache(&[&tool], None),
            Some(vec![counter.count(r#"{"name":"echo"}"#)])
        );
    }

    #[test]
    fn cache_round_trips_and_survives_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("token-counts.json");
        let a = json!({"name": "alpha", "description": "first tool"});
        let b = json!({"name": "beta"});
        let fresh = count_tools_with_cache(&[&a, &b], Some(&path)).unwrap();
        assert!(path.exists(), "the cache is written");
        let saved: CacheFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(saved.counts.len(), 2);
        assert_eq!(saved.tokenizer, TOKENIZER);

        // A planted wrong count proves the second call reads the cache, not the tokenizer.
        let key = format!("{:016x}", fnv1a(b.to_string().as_bytes()));
        let mut planted = saved;
        planted.counts.insert(key, 999);
        crate::files::write_json(&path, &planted).unwrap();
        assert_eq!(
            count_tools_with_cache(&[&a, &b], Some(&path)).unwrap(),
            vec![fresh[0], 999]
        );

        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(
            count_tools_with_cache(&[&a, &b], Some(&path)).unwrap(),
            fresh
        );
        let rebuilt: CacheFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(rebuilt.counts.len(), 2, "a corrupt cache is rebuilt");
    }
}
