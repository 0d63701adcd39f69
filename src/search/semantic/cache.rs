//! Tool vectors kept across runs and projects, keyed by what was embedded.
//!
//! Each vector is stored under a 64-bit hash of the model's name and the exact text embedded
//! ([`VectorCache::key`]), so a changed description or another model simply misses, and a tool
//! seen in one project is not embedded again in the next. The persisted form is a flat run of
//! `(key, vector)` records after a small header; a file whose header or length does not add up
//! is ignored (the vectors are recomputed), never trusted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{document_text, Model};
use crate::search::doc::ToolDoc;

const MAGIC: &[u8; 8] = b"MCPLVEC1";

/// Vectors by key, for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorCache {
    model: String,
    dims: usize,
    slots: HashMap<u64, usize>,
    data: Vec<f32>,
}

impl VectorCache {
    /// An empty cache for `model` (its card's name) with vectors of `dims` floats.
    pub fn new(model: &str, dims: usize) -> Self {
        Self {
            model: model.to_string(),
            dims,
            slots: HashMap::new(),
            data: Vec::new(),
        }
    }

    /// Reads a persisted cache; an empty one when the bytes are of another model, another
    /// size or damaged.
    pub fn from_bytes(bytes: &[u8], model: &str, dims: usize) -> Self {
        Self::decode(bytes, model, dims).unwrap_or_else(|| Self::new(model, dims))
    }

    fn decode(bytes: &[u8], model: &str, dims: usize) -> Option<Self> {
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let (stored_dims, rest) = rest.split_first_chunk::<4>()?;
        let (name_len, rest) = rest.split_first_chunk::<4>()?;
        let name_len = u32::from_le_bytes(*name_len) as usize;
        let (name, rest) = (rest.get(..name_len)?, rest.get(name_len..)?);
        if name != model.as_bytes() || u32::from_le_bytes(*stored_dims) as usize != dims {
            return None;
        }
        let record = 8 + 4 * dims;
        if dims == 0 || rest.len() % record != 0 {
            return None;
        }
        let mut cache = Self::new(model, dims);
        cache.data.reserve(rest.len() / record * dims);
        for chunk in rest.chunks_exact(record) {
            let (key, floats) = chunk.split_first_chunk::<8>()?;
            let slot = cache.data.len() / dims;
            cache.data.extend(
                floats
                    .chunks_exact(4)
                    .map(|f| f32::from_le_bytes([f[0], f[1], f[2], f[3]])),
            );
            cache.slots.insert(u64::from_le_bytes(*key), slot);
        }
        Some(cache)
    }

    /// The persisted form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.slots.len() * (8 + 4 * self.dims));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dims as u32).to_le_bytes());
        out.extend_from_slice(&(self.model.len() as u32).to_le_bytes());
        out.extend_from_slice(self.model.as_bytes());
        let mut slots: Vec<(u64, usize)> = self.slots.iter().map(|(&k, &s)| (k, s)).collect();
        slots.sort_unstable();
        for (key, slot) in slots {
            out.extend_from_slice(&key.to_le_bytes());
            for f in self.vector(slot) {
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
        out
    }

    /// Number of vectors held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The key of `text` embedded by `model`: FNV-1a over both, a zero byte between.
    pub fn key(model: &str, text: &str) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in model.as_bytes().iter().chain(&[0u8]).chain(text.as_bytes()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        hash
    }

    fn vector(&self, slot: usize) -> &[f32] {
        &self.data[slot * self.dims..][..self.dims]
    }

    /// The vector stored under `key`.
    pub fn get(&self, key: u64) -> Option<&[f32]> {
        self.slots.get(&key).map(|&slot| self.vector(slot))
    }

    /// Stores `vector` under `key` (ignored if its size is not the cache's).
    pub fn insert(&mut self, key: u64, vector: &[f32]) {
        if vector.len() != self.dims {
            return;
        }
        match self.slots.get(&key) {
            Some(&slot) => self.data[slot * self.dims..][..self.dims].copy_from_slice(vector),
            None => {
                self.slots.insert(key, self.data.len() / self.dims);
                self.data.extend_from_slice(vector);
            }
        }
    }

    /// Keeps only the vectors of `keys` (the tools some index still holds).
    pub fn retain(&mut self, keys: &std::collections::HashSet<u64>) {
        let mut kept = Self::new(&self.model, self.dims);
        for (&key, &slot) in &self.slots {
            if keys.contains(&key) {
                kept.insert(key, self.vector(slot));
            }
        }
        *self = kept;
    }

    /// The keys of `docs` under `model`, in order.
    pub fn keys(model: &Model, docs: &[ToolDoc]) -> Vec<u64> {
        docs.iter()
            .map(|doc| Self::key(&model.card().name, &document_text(doc)))
            .collect()
    }

    /// Embeds the tools of `docs` (whose keys are `keys`, from [`keys`](Self::keys)) the cache
    /// lacks, over every core, and stores them; returns the keys it added.
    pub fn fill(&mut self, model: &Model, docs: &[ToolDoc], keys: &[u64]) -> Vec<u64> {
        self.fill_counting(model, docs, keys, &AtomicUsize::new(0))
    }

    /// [`fill`](Self::fill), adding one to `done` as each tool is embedded (another thread
    /// may read it to show progress).
    pub fn fill_counting(
        &mut self,
        model: &Model,
        docs: &[ToolDoc],
        keys: &[u64],
        done: &AtomicUsize,
    ) -> Vec<u64> {
        let missing: Vec<usize> = (0..docs.len())
            .filter(|&i| self.get(keys[i]).is_none())
            .collect();
        let vectors = embed_in_parallel(model, docs, &missing, done);
        let mut added = Vec::with_capacity(missing.len());
        for (&i, vector) in missing.iter().zip(&vectors) {
            if vector.len() == self.dims {
                self.insert(keys[i], vector);
                added.push(keys[i]);
            }
        }
        added
    }

    /// How many of `keys` the cache lacks.
    pub fn missing(&self, keys: &[u64]) -> usize {
        keys.iter().filter(|k| self.get(**k).is_none()).count()
    }

    /// The vectors of the tools whose keys are `keys`, lined up with them; tools the cache
    /// lacks have none.
    pub fn lookup(&self, keys: &[u64]) -> DocVectors {
        let mut data = vec![0.0; keys.len() * self.dims];
        let mut present = vec![false; keys.len()];
        for (i, &key) in keys.iter().enumerate() {
            if let Some(v) = self.get(key) {
                data[i * self.dims..][..self.dims].copy_from_slice(v);
                present[i] = true;
            }
        }
        DocVectors {
            dims: self.dims,
            data: Rows::Owned(data),
            present,
        }
    }
}

fn embed_in_parallel(
    model: &Model,
    docs: &[ToolDoc],
    which: &[usize],
    done: &AtomicUsize,
) -> Vec<Vec<f32>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = which.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = which
            .chunks(per)
            .map(|part| {
                let worker = scope.spawn(move || {
                    part.iter()
                        .map(|&i| {
                            let vector = model.embed_document(&docs[i]);
                            done.fetch_add(1, Ordering::Relaxed);
                            vector
                        })
                        .collect::<Vec<_>>()
                });
                (part.len(), worker)
            })
            .collect();
        // A worker that died leaves its tools without vectors (empty ones are not stored).
        workers
            .into_iter()
            .flat_map(|(len, w)| w.join().unwrap_or_else(|_| vec![Vec::new(); len]))
            .collect()
    })
}

/// One vector per tool of an index, in its order; a tool not embedded yet has none.
#[derive(Debug)]
pub struct DocVectors {
    dims: usize,
    data: Rows,
    present: Vec<bool>,
}

/// The rows: computed here, or read in place from a file of little-endian `f32`s.
#[derive(Debug)]
enum Rows {
    Owned(Vec<f32>),
    Mapped {
        map: memmap2::Mmap,
        start: usize,
        len: usize,
    },
}

impl std::ops::Deref for Rows {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            Rows::Owned(rows) => rows,
            // SAFETY: `DocVectors::mapped` checked that the range lies in the map, starts
            // 4-aligned, and that this is a little-endian target (the file's byte order).
            Rows::Mapped { map, start, len } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().add(*start).cast::<f32>(), *len)
            },
        }
    }
}

impl DocVectors {
    /// Vectors for `tools` tools read in place from `map` at byte `start` (rows of `dims`
    /// little-endian `f32`s); `None` when they do not fit, are misaligned, or this target is
    /// big-endian.
    pub fn mapped(map: memmap2::Mmap, start: usize, dims: usize, tools: usize) -> Option<Self> {
        let len = dims.checked_mul(tools)?;
        let fits = start
            .checked_add(len.checked_mul(4)?)
            .is_some_and(|end| end <= map.len());
        let aligned = map.as_ptr().wrapping_add(start).align_offset(4) == 0;
        if !fits || !aligned || dims == 0 || cfg!(target_endian = "big") {
            return None;
        }
        Some(Self {
            dims,
            data: Rows::Mapped { map, start, len },
            present: vec![true; tools],
        })
    }

    /// The rows, when every tool has one.
    pub fn matrix(&self) -> Option<&[f32]> {
        (self.missing() == 0).then_some(&self.data)
    }

    /// The vector of tool `doc`, if it has one.
    pub fn get(&self, doc: usize) -> Option<&[f32]> {
        self.present
            .get(doc)
            .copied()
            .unwrap_or(false)
            .then(|| &self.data[doc * self.dims..][..self.dims])
    }

    /// How many tools have no vector.
    pub fn missing(&self) -> usize {
        self.present.iter().filter(|p| !**p).count()
    }
}
