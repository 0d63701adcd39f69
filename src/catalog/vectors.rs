//! Tool embeddings for semantic search, cached across runs and projects.
//!
//! One file per model (`$XDG_CACHE_HOME/mcp-launch/vectors-<model>.bin`, see
//! `search::semantic::VectorCache`): a tool is embedded once per text, whatever project shows
//! it. Tools the cache lacks are embedded when asked for (over every core) and the file is
//! rewritten atomically, merged with what another process saved meanwhile.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::search::semantic::{DocVectors, Model, VectorCache};
use crate::search::ToolDoc;

/// Past this many vectors, the file keeps only those of the tools just asked for.
const MAX_CACHED: usize = 100_000;

/// The vectors of `docs` under `model`; tools not yet embedded are embedded now and saved.
/// `on_embed` hears how many tools are about to be embedded (only when there are some).
pub fn vectors(model: &Model, docs: &[ToolDoc], on_embed: impl FnOnce(usize)) -> DocVectors {
    let path = cache_path(model);
    vectors_at(model, docs, path.as_deref(), on_embed)
}

fn vectors_at(
    model: &Model,
    docs: &[ToolDoc],
    path: Option<&Path>,
    on_embed: impl FnOnce(usize),
) -> DocVectors {
    let mut cache = read(model, path);
    let wanted = VectorCache::keys(model, docs);
    let missing = wanted.iter().filter(|k| cache.get(**k).is_none()).count();
    if missing > 0 {
        on_embed(missing);
        let started = std::time::Instant::now();
        let mut fresh = VectorCache::new(&model.card().name, model.dimensions());
        let needed: Vec<ToolDoc> = docs
            .iter()
            .zip(&wanted)
            .filter(|(_, k)| cache.get(**k).is_none())
            .map(|(d, _)| d.clone())
            .collect();
        fresh.fill(model, &needed);
        tracing::debug!(tools = missing, elapsed = ?started.elapsed(), "tools embedded");
        // Merge into what is on disk now: another process may have saved meanwhile.
        let mut merged = read(model, path);
        for key in VectorCache::keys(model, &needed) {
            if let Some(v) = fresh.get(key) {
                merged.insert(key, v);
                cache.insert(key, v);
            }
        }
        if merged.len() > MAX_CACHED {
            merged.retain(&wanted.iter().copied().collect::<HashSet<_>>());
        }
        if let Some(path) = path {
            if let Err(e) = crate::files::write(path, &merged.to_bytes()) {
                tracing::warn!(path = %path.display(), error = %e, "could not save tool vectors");
            }
        }
    }
    cache.lookup(model, docs)
}

fn read(model: &Model, path: Option<&Path>) -> VectorCache {
    let name = &model.card().name;
    match path.and_then(|p| std::fs::read(p).ok()) {
        Some(bytes) => VectorCache::from_bytes(&bytes, name, model.dimensions()),
        None => VectorCache::new(name, model.dimensions()),
    }
}

/// `$XDG_CACHE_HOME/mcp-launch/vectors-<model>.bin`.
fn cache_path(model: &Model) -> Option<PathBuf> {
    let name: String = model
        .card()
        .name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    dirs::cache_dir().map(|d| d.join("mcp-launch").join(format!("vectors-{name}.bin")))
}
