//! A compact o200k_base counter: the vocabulary stays where the binary holds it, indexed by
//! one table of `u32` slots, and text is counted (never encoded) with the standard byte-pair
//! merge: split into pieces by the o200k pattern ([`super::pieces`]), then in each piece the
//! adjacent pair of lowest rank (leftmost on a tie) is merged until no pair is a token.
//!
//! Memory: the vocabulary (`o200k_base.vocab`, 1.6 MB, written by `scripts/o200k-vocab.py`
//! from the public o200k_base.tiktoken, MIT) is embedded and read in place, so its pages are
//! the binary's (shared, paged in as touched); the heap holds the token offsets (0.8 MB) and
//! the hash index (2 MB), built in a few milliseconds. tiktoken-rs's CoreBPE held ~50 MB in
//! 600k small allocations and took ~0.3 s to build.

use std::collections::BinaryHeap;

use super::pieces::Pieces;

/// The embedded vocabulary: u32 LE count N, N token lengths, the tokens' bytes in rank order.
static VOCAB: &[u8] = include_bytes!("o200k_base.vocab");

/// Tokens in o200k_base (ranks 0..N; the two special tokens are never produced by counting).
const TOKENS: usize = 199_998;

/// The hash index has 2^19 slots: a load of 0.38, so a probe rarely goes past its first slot
/// (most lookups in a merge are misses, which end at the first empty slot).
const SLOT_BITS: u32 = 19;
/// A slot holds a rank (18 bits) and 14 bits of its token's hash, compared before the bytes.
const RANK_BITS: u32 = 18;
const RANK_MASK: u32 = (1 << RANK_BITS) - 1;
const EMPTY: u32 = u32::MAX;

/// Pieces at least this long merge through a heap (O(n log n)); shorter ones by scanning their
/// pairs (O(n²), faster at the sizes of nearly every piece).
const HEAP_MERGE_FROM: usize = 128;

/// Why the embedded vocabulary was refused (only a build from a damaged file would see it).
#[derive(Debug, thiserror::Error)]
#[error(
    "the embedded o200k_base vocabulary is damaged ({0}); rebuild it with scripts/o200k-vocab.py"
)]
pub struct DamagedVocabulary(&'static str);

/// The o200k_base vocabulary, indexed for lookups by bytes.
pub struct Vocabulary {
    /// The tokens' bytes back to back, in rank order (in the binary).
    arena: &'static [u8],
    /// Token `r` is `arena[offsets[r]..offsets[r + 1]]`.
    offsets: Vec<u32>,
    /// Open addressing, linear probing: `hash tag << RANK_BITS | rank`, or [`EMPTY`].
    slots: Vec<u32>,
}

impl Vocabulary {
    /// Indexes the embedded vocabulary.
    pub fn load() -> Result<Self, DamagedVocabulary> {
        Self::from_bytes(VOCAB)
    }

    fn from_bytes(vocab: &'static [u8]) -> Result<Self, DamagedVocabulary> {
        let count = vocab
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or(DamagedVocabulary("no header"))?;
        if count != TOKENS {
            return Err(DamagedVocabulary("wrong token count"));
        }
        let lengths = vocab
            .get(4..4 + count)
            .ok_or(DamagedVocabulary("truncated lengths"))?;
        let arena = &vocab[4 + count..];
        let mut offsets = Vec::with_capacity(count + 1);
        let mut at = 0u32;
        offsets.push(at);
        for &len in lengths {
            at += u32::from(len);
            offsets.push(at);
        }
        if at as usize != arena.len() {
            return Err(DamagedVocabulary("lengths and bytes disagree"));
        }
        let mut vocabulary = Self {
            arena,
            offsets,
            slots: vec![EMPTY; 1 << SLOT_BITS],
        };
        for rank in 0..count as u32 {
            vocabulary.insert(rank);
        }
        Ok(vocabulary)
    }

    fn token(&self, rank: u32) -> &[u8] {
        let r = rank as usize;
        &self.arena[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    fn insert(&mut self, rank: u32) {
        let (mut slot, tag) = place(self.token(rank));
        while self.slots[slot] != EMPTY {
            slot = (slot + 1) & ((1 << SLOT_BITS) - 1);
        }
        self.slots[slot] = tag | rank;
    }

    /// The rank of the token spelled `bytes`, if it is one.
    #[inline]
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let (mut slot, tag) = place(bytes);
        loop {
            let entry = self.slots[slot];
            if entry == EMPTY {
                return None;
            }
            if entry & !RANK_MASK == tag && self.token(entry & RANK_MASK) == bytes {
                return Some(entry & RANK_MASK);
            }
            slot = (slot + 1) & ((1 << SLOT_BITS) - 1);
        }
    }

    /// The o200k_base tokens of `text` (as tiktoken's `encode_ordinary(text).len()`).
    pub fn count(&self, text: &str) -> usize {
        Pieces::new(text)
            .map(|piece| self.piece_tokens(piece.as_bytes()))
            .sum()
    }

    /// The tokens of one piece: one when it is a token, else what the merges leave.
    fn piece_tokens(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.rank(piece).is_some() {
            return piece.len().min(1);
        }
        if piece.len() < HEAP_MERGE_FROM {
            self.merge_by_scan(piece)
        } else {
            self.merge_by_heap(piece)
        }
    }

    /// The rank of `piece[from..to]` as a token, or `u32::MAX` (never merged).
    #[inline]
    fn pair_rank(&self, piece: &[u8], from: usize, to: usize) -> u32 {
        self.rank(&piece[from..to]).unwrap_or(u32::MAX)
    }

    /// Byte-pair merge of a short piece: `starts` are the parts' first bytes (then the end),
    /// `pairs[i]` the rank of part `i` joined to part `i + 1`.
    fn merge_by_scan(&self, piece: &[u8]) -> usize {
        let mut starts: Vec<usize> = (0..=piece.len()).collect();
        let mut pairs: Vec<u32> = (0..piece.len() - 1)
            .map(|i| self.pair_rank(piece, i, i + 2))
            .collect();
        while let Some((i, _)) = pairs
            .iter()
            .enumerate()
            .filter(|(_, &rank)| rank != u32::MAX)
            .min_by_key(|&(i, &rank)| (rank, i))
        {
            starts.remove(i + 1);
            pairs.remove(i);
            if i + 2 < starts.len() {
                pairs[i] = self.pair_rank(piece, starts[i], starts[i + 2]);
            }
            if i > 0 {
                pairs[i - 1] = self.pair_rank(piece, starts[i - 1], starts[i + 1]);
            }
        }
        starts.len() - 1
    }

    /// Byte-pair merge of a long piece: parts as a linked list keyed by their first byte, and
    /// candidate merges in a min-heap of (rank, start); an entry whose pair has since changed
    /// is skipped when it comes up.
    fn merge_by_heap(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        // next[s]: where the part starting at s ends; prev[s]: the part before it.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|s| s.wrapping_sub(1)).collect();
        let mut pair: Vec<u32> = (0..n)
            .map(|s| {
                if s + 2 <= n {
                    self.pair_rank(piece, s, s + 2)
                } else {
                    u32::MAX
                }
            })
            .collect();
        let mut heap: BinaryHeap<std::cmp::Reverse<(u32, usize)>> = pair
            .iter()
            .enumerate()
            .filter(|(_, &rank)| rank != u32::MAX)
            .map(|(s, &rank)| std::cmp::Reverse((rank, s)))
            .collect();
        let mut parts = n;
        while let Some(std::cmp::Reverse((rank, s))) = heap.pop() {
            if pair[s] != rank {
                continue;
            }
            let absorbed = next[s];
            let end = next[absorbed];
            pair[absorbed] = u32::MAX;
            next[s] = end;
            parts -= 1;
            if end < n {
                prev[end] = s;
            }
            let mut consider = |start: usize, pair: &mut Vec<u32>| {
                let to = next[start];
                pair[start] = if to < n {
                    self.pair_rank(piece, start, next[to])
                } else {
                    u32::MAX
                };
                if pair[start] != u32::MAX {
                    heap.push(std::cmp::Reverse((pair[start], start)));
                }
            };
            consider(s, &mut pair);
            if s > 0 {
                consider(prev[s], &mut pair);
            }
        }
        parts
    }
}

/// The first slot to probe for `bytes` and the tag stored beside its rank: both from one
/// multiplicative hash over 8-byte words (top bits: the slot; the next 14: the tag).
#[inline]
fn place(bytes: &[u8]) -> (usize, u32) {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        h = (h.rotate_left(26) ^ w).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(26) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let slot = (h >> (64 - SLOT_BITS)) as usize;
    let tag = ((h >> (64 - SLOT_BITS - (32 - RANK_BITS))) as u32) << RANK_BITS;
    (slot, tag)
}

#[cfg(test)]
#[path = "o200k_tests.rs"]
mod tests;
