//! The persisted index:
//!
//! ```text
//! MAGIC (8 bytes) | format version (u32 LE) | checksum of the rest (u64 LE)
//! | length of the tables (u64 LE) | tables (postcard) | encoded tools (raw bytes)
//! ```
//!
//! The tables are the term index, the name keys, the tools' names and the ends of each tool's
//! encoding; the tools themselves stay encoded (see `stored_docs`). Loading verifies the
//! checksum, then every offset and length, so damaged bytes give
//! [`SearchError::CorruptIndex`], never a panic or an answer read out of range.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::bm25::{StringTable, TermIndex};
use super::error::SearchError;
use super::names::NameKeys;
use super::stored_docs::StoredDocs;

/// First bytes of every persisted index.
pub(crate) const MAGIC: &[u8; 8] = b"MCPLSRCH";

/// Bump whenever the encoding, the analyzer or the field weights change: an index built by
/// another version is then rebuilt instead of misread.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Bytes before the checksummed part: magic, version, checksum.
const HEADER_LEN: usize = 8 + 4 + 8;

/// The tables, borrowed for writing.
#[derive(Serialize)]
struct TablesRef<'a> {
    terms: &'a TermIndex,
    names: &'a NameKeys,
    servers: &'a StringTable,
    tools: &'a StringTable,
    ends: &'a [u32],
}

/// The tables, read back.
#[derive(Deserialize)]
struct Tables {
    terms: TermIndex,
    names: NameKeys,
    servers: StringTable,
    tools: StringTable,
    ends: Vec<u32>,
}

/// What a persisted index holds.
pub(crate) struct Parts {
    pub(crate) docs: StoredDocs,
    pub(crate) terms: TermIndex,
    pub(crate) names: NameKeys,
}

/// Encodes an index.
pub(crate) fn encode(docs: &StoredDocs, terms: &TermIndex, names: &NameKeys) -> Vec<u8> {
    let tables = TablesRef {
        terms,
        names,
        servers: &docs.servers,
        tools: &docs.tools,
        ends: &docs.ends,
    };
    // Serializing plain data into a Vec cannot fail; if it ever did, the empty tables make
    // loading report a corrupt index rather than crash here.
    let tables = postcard::to_stdvec(&tables).unwrap_or_default();
    let mut rest = Vec::with_capacity(8 + tables.len() + docs.blob.len());
    rest.extend_from_slice(&(tables.len() as u64).to_le_bytes());
    rest.extend_from_slice(&tables);
    rest.extend_from_slice(&docs.blob);
    let mut out = Vec::with_capacity(HEADER_LEN + rest.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&checksum(&rest).to_le_bytes());
    out.extend_from_slice(&rest);
    out
}

/// Decodes and checks an index. The tools stay in `bytes`' buffer, shared, not copied.
pub(crate) fn decode(bytes: Bytes) -> Result<Parts, SearchError> {
    let corrupt = SearchError::CorruptIndex;
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| corrupt("not a search index (bad magic bytes)".into()))?;
    let (version, rest) = split_array::<4>(rest)?;
    let version = u32::from_le_bytes(version);
    if version != FORMAT_VERSION {
        return Err(corrupt(format!(
            "format version {version}, this build reads version {FORMAT_VERSION}"
        )));
    }
    let (sum, rest) = split_array::<8>(rest)?;
    if u64::from_le_bytes(sum) != checksum(rest) {
        return Err(corrupt(
            "checksum mismatch (damaged or truncated file)".into(),
        ));
    }
    let (len, rest) = split_array::<8>(rest)?;
    let len = usize::try_from(u64::from_le_bytes(len)).unwrap_or(usize::MAX);
    if len > rest.len() {
        return Err(corrupt("tables longer than the file".into()));
    }
    let (tables, blob) = rest.split_at(len);
    let tables: Tables = postcard::from_bytes(tables).map_err(|e| corrupt(e.to_string()))?;
    check(&tables, blob.len()).map_err(corrupt)?;
    let blob = bytes.slice_ref(blob);
    Ok(Parts {
        docs: StoredDocs::from_parts(blob, tables.ends, tables.servers, tables.tools),
        terms: tables.terms,
        names: tables.names,
    })
}

fn split_array<const N: usize>(bytes: &[u8]) -> Result<([u8; N], &[u8]), SearchError> {
    bytes
        .split_first_chunk::<N>()
        .map(|(head, rest)| (*head, rest))
        .ok_or_else(|| SearchError::CorruptIndex("truncated header".into()))
}

/// A fast 64-bit hash of `bytes`, word by word: catches damaged and truncated files (it is
/// not meant to resist a forger).
fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        hash = (hash.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    (hash.rotate_left(23) ^ u64::from_le_bytes(tail)).wrapping_mul(K)
}

fn check(tables: &Tables, blob_len: usize) -> Result<(), String> {
    let n = tables.ends.len();
    let t = &tables.terms;
    for (table, what) in [
        (&t.terms, "term dictionary"),
        (&tables.names.tools, "tool name keys"),
        (&tables.names.servers, "server name keys"),
        (&tables.servers, "server names"),
        (&tables.tools, "tool names"),
    ] {
        check_table(table, what)?;
    }
    let counts = [
        t.doc_count as usize,
        tables.names.tools.len(),
        tables.names.servers.len(),
        tables.servers.len(),
        tables.tools.len(),
    ];
    if counts.iter().any(|&c| c != n) {
        return Err("tool counts disagree".into());
    }
    if tables.ends.windows(2).any(|w| w[0] > w[1])
        || tables.ends.last().is_some_and(|&e| e as usize != blob_len)
        || (n == 0 && blob_len != 0)
    {
        return Err("tool offsets out of range".into());
    }
    let terms = t.terms.len();
    if t.starts.len() != terms + 1 {
        return Err("term table lengths disagree".into());
    }
    if (1..terms).any(|i| t.terms.get(i - 1) >= t.terms.get(i)) {
        return Err("term dictionary not sorted".into());
    }
    if t.starts.first() != Some(&0)
        || t.starts.windows(2).any(|w| w[0] > w[1])
        || t.starts.last().map(|&s| s as usize) != Some(t.doc_gaps.len())
        || t.weights.len() != t.doc_gaps.len()
    {
        return Err("posting offsets out of range".into());
    }
    for w in t.starts.windows(2) {
        let mut doc = 0u64;
        for &gap in &t.doc_gaps[w[0] as usize..w[1] as usize] {
            doc += u64::from(gap);
            if doc >= n as u64 {
                return Err("posting refers to a missing tool".into());
            }
        }
    }
    Ok(())
}

fn check_table(table: &StringTable, what: &str) -> Result<(), String> {
    let mut previous = 0;
    for &end in &table.ends {
        let end = end as usize;
        if end < previous || !table.text.is_char_boundary(end) {
            return Err(format!("{what}: bad string offsets"));
        }
        previous = end;
    }
    if previous != table.text.len() {
        return Err(format!("{what}: trailing bytes"));
    }
    Ok(())
}
