//! The tools of an index, kept encoded one by one so that loading an index costs a copy, not
//! a decode: a `search` process ranks with the term index and the name tables alone, then
//! decodes only the few tools it shows. The whole list is decoded once, on first use of
//! [`StoredDocs::all`] (regex and exact need every description).

use std::borrow::Cow;
use std::sync::OnceLock;

use bytes::Bytes;

use super::bm25::StringTable;
use super::doc::ToolDoc;

/// The encoded tools and their names, readable without decoding.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredDocs {
    /// Each tool's postcard encoding, one after the other (a loaded index shares the file's
    /// buffer: loading copies nothing).
    pub(crate) blob: Bytes,
    /// Tool `i` is `blob[ends[i-1]..ends[i]]`.
    pub(crate) ends: Vec<u32>,
    /// Each tool's server name, as given.
    pub(crate) servers: StringTable,
    /// Each tool's name, as given.
    pub(crate) tools: StringTable,
    /// Every tool, decoded on first use (or kept from the build).
    decoded: OnceLock<Vec<ToolDoc>>,
}

impl PartialEq for StoredDocs {
    fn eq(&self, other: &StoredDocs) -> bool {
        self.blob == other.blob && self.ends == other.ends
    }
}

impl StoredDocs {
    /// Encodes `docs`, keeping the decoded list too.
    pub(crate) fn new(docs: Vec<ToolDoc>) -> StoredDocs {
        let mut stored = StoredDocs::default();
        let mut blob = Vec::new();
        for doc in &docs {
            // Encoding owned strings into a Vec cannot fail; an empty entry would decode as a
            // placeholder (see `decode`), never panic.
            if let Ok(bytes) = postcard::to_stdvec(doc) {
                blob.extend_from_slice(&bytes);
            }
            stored.ends.push(blob.len() as u32);
            stored.servers.push(&doc.server);
            stored.tools.push(&doc.tool);
        }
        stored.blob = Bytes::from(blob);
        stored.decoded = OnceLock::from(docs);
        stored
    }

    /// Reassembles stored parts (already checked by the store).
    pub(crate) fn from_parts(
        blob: Bytes,
        ends: Vec<u32>,
        servers: StringTable,
        tools: StringTable,
    ) -> StoredDocs {
        StoredDocs {
            blob,
            ends,
            servers,
            tools,
            decoded: OnceLock::new(),
        }
    }

    /// Number of tools.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Tool `i`'s server name.
    pub(crate) fn server(&self, i: usize) -> &str {
        self.servers.get(i)
    }

    /// Tool `i`'s name.
    pub(crate) fn tool(&self, i: usize) -> &str {
        self.tools.get(i)
    }

    /// Tool `i`, decoded alone unless the whole list already is.
    pub(crate) fn get(&self, i: usize) -> Option<Cow<'_, ToolDoc>> {
        if i >= self.len() {
            return None;
        }
        match self.decoded.get() {
            Some(all) => all.get(i).map(Cow::Borrowed),
            None => Some(Cow::Owned(self.decode(i))),
        }
    }

    /// Every tool, decoding them on first use.
    pub(crate) fn all(&self) -> &[ToolDoc] {
        self.decoded
            .get_or_init(|| (0..self.len()).map(|i| self.decode(i)).collect())
    }

    /// Decodes tool `i`. The store verified the bytes' checksum at load, so decoding only
    /// fails on a bug; the tool then appears with its names and nothing else, never a panic.
    fn decode(&self, i: usize) -> ToolDoc {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends[i] as usize;
        self.blob
            .get(start..end)
            .and_then(|bytes| postcard::from_bytes(bytes).ok())
            .unwrap_or_else(|| ToolDoc {
                server: self.server(i).to_string(),
                tool: self.tool(i).to_string(),
                title: None,
                description: String::new(),
                params: Vec::new(),
                required: Vec::new(),
            })
    }
}
