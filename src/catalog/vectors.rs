//! Tool embeddings for semantic search, cached across runs and projects.
//!
//! One file per model (`$XDG_CACHE_HOME/mcp-launch/vectors-<model>.bin`, see
//! `search::semantic::VectorCache`): a tool is embedded once per text, whatever project shows
//! it. Tools the cache lacks are embedded when asked for (over every core), by one process at
//! a time ([`super::embedder`]), and the file is rewritten atomically, merged with what
//! another process saved meanwhile. A `search` that should not wait asks only for vectors
//! that are ready ([`ready_search_vectors`]).
//!
//! A search index also keeps its tools' vectors beside it, lined up with it
//! (`search-<key>.<model>.vec`: a header naming the model, the size and the index's checksum,
//! then the rows), so a warm `search` reads one flat file instead of hashing every tool's text
//! into the shared cache (over 10,000 tools: 3 ms instead of ~75).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::embedder::{Progress, Turn};
use super::SearchCatalog;
use crate::search::semantic::{DocVectors, Model, VectorCache};
use crate::search::ToolDoc;

const ALIGNED_MAGIC: &[u8; 8] = b"MCPLVAL1";

/// The vectors of a search catalog's tools when none needs embedding: from the file beside
/// its index when that file is of this model and this index, else from the shared cache (then
/// kept beside the index for the next search). `Err` with how many tools the cache lacks.
pub fn ready_search_vectors(model: &Model, catalog: &SearchCatalog) -> Result<DocVectors, usize> {
    if let Some(found) = read_beside(model, catalog) {
        return Ok(found);
    }
    let (cache, keys) = cached(model, catalog.index.docs(), cache_path(model).as_deref());
    match cache.missing(&keys) {
        0 => Ok(keep_beside(model, catalog, cache.lookup(&keys))),
        missing => Err(missing),
    }
}

/// The vectors of a search catalog's tools, the ones the cache lacks embedded now in `turn`
/// (the caller's turn as the one embedder, see [`super::embedder`]; `show` hears how far it
/// is), then kept beside the index.
pub fn search_vectors(
    model: &Model,
    catalog: &SearchCatalog,
    turn: &Turn,
    show: &(dyn Fn(Progress) + Sync),
) -> DocVectors {
    if let Some(found) = read_beside(model, catalog) {
        return found;
    }
    let docs = catalog.index.docs();
    let path = cache_path(model);
    let (mut cache, keys) = cached(model, docs, path.as_deref());
    fill_and_save(
        model,
        docs,
        path.as_deref(),
        (&mut cache, &keys),
        turn,
        show,
    );
    keep_beside(model, catalog, cache.lookup(&keys))
}

/// The file beside the catalog's index, when it holds this model's vectors of this index.
fn read_beside(model: &Model, catalog: &SearchCatalog) -> Option<DocVectors> {
    let path = beside_path(model, catalog)?;
    read_aligned(&path, model, catalog.fingerprint, catalog.index.len())
}

/// Writes `vectors` beside the catalog's index when every tool has one; returns them.
fn keep_beside(model: &Model, catalog: &SearchCatalog, vectors: DocVectors) -> DocVectors {
    if let (Some(path), Some(rows)) = (beside_path(model, catalog), vectors.matrix()) {
        let bytes = aligned_bytes(model, catalog.fingerprint, catalog.index.len(), rows);
        if let Err(e) = crate::files::write_private(&path, &bytes) {
            tracing::warn!(path = %path.display(), error = %e, "could not save the index's vectors");
        }
    }
    vectors
}

/// `search-<key>.<model>.vec` beside the catalog's persisted index.
fn beside_path(model: &Model, catalog: &SearchCatalog) -> Option<PathBuf> {
    let name = file_safe(&model.card().name);
    (catalog.path.as_ref()).map(|p| p.with_extension(format!("{name}.vec")))
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

/// The vectors of `docs` under `model` (the gateway's catalog); when the cache lacks some,
/// they are embedded in this process's turn as the one embedder (waiting for the embedder
/// at work, whose vectors then need no embedding here) and saved. `on_embed` hears how many
/// tools are about to be embedded (only when there are some).
pub fn vectors(model: &Model, docs: &[ToolDoc], on_embed: impl FnOnce(usize)) -> DocVectors {
    let path = cache_path(model);
    let (cache, keys) = cached(model, docs, path.as_deref());
    if cache.missing(&keys) == 0 {
        return cache.lookup(&keys);
    }
    let turn = super::embedder::turn(model);
    // Read again in the turn: the embedder before may have saved these very tools.
    let (mut cache, keys) = cached(model, docs, path.as_deref());
    let missing = cache.missing(&keys);
    if missing > 0 {
        on_embed(missing);
        fill_and_save(
            model,
            docs,
            path.as_deref(),
            (&mut cache, &keys),
            &turn,
            &|_| {},
        );
    }
    cache.lookup(&keys)
}

/// The cache as saved now, and the keys of `docs` in it.
fn cached(model: &Model, docs: &[ToolDoc], path: Option<&Path>) -> (VectorCache, Vec<u64>) {
    (read(model, path), VectorCache::keys(model, docs))
}

/// Embeds the tools of `docs` the cache lacks, in `turn`, and merges them into the file.
fn fill_and_save(
    model: &Model,
    docs: &[ToolDoc],
    path: Option<&Path>,
    (cache, keys): (&mut VectorCache, &[u64]),
    turn: &Turn,
    show: &(dyn Fn(Progress) + Sync),
) {
    let missing = cache.missing(keys);
    if missing == 0 {
        return;
    }
    let started = std::time::Instant::now();
    let added = turn.embedding(missing, show, |done| {
        cache.fill_counting(model, docs, keys, done)
    });
    tracing::debug!(tools = missing, elapsed = ?started.elapsed(), "tools embedded");
    let Some(path) = path else {
        return;
    };
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
pub(super) fn file_safe(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect()
}
