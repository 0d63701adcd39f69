//! Tool embeddings for semantic search, cached across runs and projects.
//!
//! One file per model (`$XDG_CACHE_HOME/mcp-launch/vectors-<model>.bin`, see
//! `search::semantic::VectorCache`): a tool is embedded once per text, whatever project shows
//! it. Tools the cache lacks are embedded when asked for (over every core) and the file is
//! rewritten atomically, merged with what another process saved meanwhile.
//!
//! A search index also keeps its tools' vectors beside it, lined up with it
//! (`search-<key>.<model>.vec`: a header naming the model, the size and the index's checksum,
//! then the rows), so a warm `search` reads one flat file instead of hashing every tool's text
//! into the shared cache (over 10,000 tools: 3 ms instead of ~75).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::SearchCatalog;
use crate::search::semantic::{DocVectors, Model, VectorCache};
use crate::search::ToolDoc;

const ALIGNED_MAGIC: &[u8; 8] = b"MCPLVAL1";

/// The vectors of a search catalog's tools: from the file beside its index when that file is
/// of this model and this index, else from the shared cache (embedding what it lacks), then
/// kept beside the index for the next search.
pub fn search_vectors(
    model: &Model,
    catalog: &SearchCatalog,
    on_embed: impl FnOnce(usize),
) -> DocVectors {
    let name = file_safe(&model.card().name);
    let beside = catalog
        .path
        .as_ref()
        .map(|p| p.with_extension(format!("{name}.vec")));
    let tools = catalog.index.len();
    if let Some(found) = beside
        .as_deref()
        .and_then(|p| read_aligned(p, model, catalog.fingerprint, tools))
    {
        return found;
    }
    let vectors = vectors(model, catalog.index.docs(), on_embed);
    if let (Some(path), Some(rows)) = (&beside, vectors.matrix()) {
        let bytes = aligned_bytes(model, catalog.fingerprint, tools, rows);
        if let Err(e) = crate::files::write(path, &bytes) {
            tracing::warn!(path = %path.display(), error = %e, "could not save the index's vectors");
        }
    }
    vectors
}

/// The header, padded to a multiple of 8 bytes so the rows after it can be read in place.
fn aligned_header(model: &Model, fingerprint: u64, tools: usize) -> Vec<u8> {
    let name = model.card().name.as_bytes();
    let mut out = Vec::new();
    out.extend_from_slice(ALIGNED_MAGIC);
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(&(model.dimensions() as u32).to_le_bytes());
    out.extend_from_slice(&(tools as u32).to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    out.resize(out.len().div_ceil(8) * 8, 0);
    out
}

fn aligned_bytes(model: &Model, fingerprint: u64, tools: usize, rows: &[f32]) -> Vec<u8> {
    let mut out = aligned_header(model, fingerprint, tools);
    out.reserve(rows.len() * 4);
    for f in rows {
        out.extend_from_slice(&f.to_le_bytes());
    }
    out
}

/// The rows of a vectors file, when its header is exactly the one this model and index
/// would write and its length adds up.
fn read_aligned(path: &Path, model: &Model, fingerprint: u64, tools: usize) -> Option<DocVectors> {
    let header = aligned_header(model, fingerprint, tools);
    let file = std::fs::File::open(path).ok()?;
    let rows = tools * model.dimensions();
    if file.metadata().ok()?.len() != (header.len() + rows * 4) as u64 {
        return None;
    }
    // SAFETY: files are replaced by rename, never written in place (crate::files), so the
    // mapping keeps the contents it was checked with.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    if map.get(..header.len())? != header.as_slice() {
        return None;
    }
    DocVectors::mapped(map, header.len(), model.dimensions(), tools)
}

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
    let keys = VectorCache::keys(model, docs);
    let missing = cache.missing(&keys);
    if missing > 0 {
        on_embed(missing);
        let started = std::time::Instant::now();
        let added = cache.fill(model, docs, &keys);
        tracing::debug!(tools = missing, elapsed = ?started.elapsed(), "tools embedded");
        if let Some(path) = path {
            // Merged into what is on disk now, under its lock: another process may have saved.
            let saved = crate::files::update_locked(path, |current| {
                let mut merged = decode(model, current.as_deref());
                for &key in &added {
                    if let Some(v) = cache.get(key) {
                        merged.insert(key, v);
                    }
                }
                if merged.len() > MAX_CACHED {
                    merged.retain(&keys.iter().copied().collect::<HashSet<_>>());
                }
                Some(merged.to_bytes())
            });
            if let Err(e) = saved {
                tracing::warn!(path = %path.display(), error = %e, "could not save tool vectors");
            }
        }
    }
    cache.lookup(&keys)
}

fn read(model: &Model, path: Option<&Path>) -> VectorCache {
    decode(model, path.and_then(|p| std::fs::read(p).ok()).as_deref())
}

/// The cache in `bytes` (none, or another model's: an empty one).
fn decode(model: &Model, bytes: Option<&[u8]>) -> VectorCache {
    let name = &model.card().name;
    match bytes {
        Some(bytes) => VectorCache::from_bytes(bytes, name, model.dimensions()),
        None => VectorCache::new(name, model.dimensions()),
    }
}

/// `$XDG_CACHE_HOME/mcp-launch/vectors-<model>.bin`.
fn cache_path(model: &Model) -> Option<PathBuf> {
    let name = file_safe(&model.card().name);
    dirs::cache_dir().map(|d| d.join("mcp-launch").join(format!("vectors-{name}.bin")))
}

/// A model name fit for a file name.
fn file_safe(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect()
}
