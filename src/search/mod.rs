//! Tool search: find the right tool among thousands, across servers, in milliseconds, without
//! starting any server. Three methods over one persisted [`SearchIndex`]:
//!
//! - **`bm25`** (default): BM25F over six fields of each tool — tool name (split into words:
//!   snake_case, camelCase, kebab-case, digits; the whole name kept too), server name, title,
//!   description, parameter names (split likewise) and parameter descriptions — weighted
//!   name 3, server 1, title 1, description 1, parameter names 0.5, parameter descriptions
//!   0.4 (`k1` 1.2). Words are stemmed by a small suffix stemmer; stopwords ("how do I …") are
//!   dropped; values in a query are replaced by what they are (`config.yaml` → file,
//!   `example.com` → url; numbers dropped). A table of tool vocabulary (remove/delete/rm,
//!   PR/pull request, dir/folder/directory …) expands each query word into a *concept*: the
//!   typed word counts 1, a synonym 0.75, a tool scores a concept's best alternative only, and
//!   a concept's idf is its most common alternative's (so "make" weighs like "create").
//!   The sum is multiplied by `√(share of concepts matched)`, so a tool that covers the query
//!   beats one that matches a single rare word.
//! - **`regex`**: case-insensitive (`(?-i)` turns that off), at most [`MAX_PATTERN_LEN`]
//!   characters, over name, then title and description, then parameters.
//! - **`exact`**: case-insensitive substring, same tiers; a whole-name match first.
//!
//! **Name pinning** (bm25): a query that is a tool's name — in any spelling
//! (`get_file_contents`, `getFileContents`, `get file contents`), alone or after its server
//! (`github create_issue`, `github__create_issue`, `github/create_issue`,
//! `github.create_issue`) — ranks that tool first with score 1.0; a query that starts a tool's
//! name (whole words, or any prefix of 3+ characters when written as an identifier) ranks it
//! next, scored 0.90–0.99.
//!
//! **Normalised scores** (bm25): a hit's score divided by the score a perfect tool would get
//! for the same query (every concept once in the name and once in the description, at
//! average length), capped at [`TEXT_SCORE_CEILING`] so that scores ≥ 0.9 always mean a name
//! match. A word no tool contains counts in that perfect score at 0.7 of the highest idf, so
//! a query about something no tool does scores low everywhere. Hits below [`MIN_SCORE`] are
//! dropped: an empty list means "no tool does that"; scores under ~0.25 mean "weak match".
//! Regex and exact hits score by tier (whole name 1.0, name 0.9, description 0.6, parameter
//! 0.3).
//!
//! The weights, the synonym weight, the coordination exponent and the cutoff were chosen on
//! `tests/fixtures/search` (518 tools, 270 queries), checked on both halves of the queries
//! separately; results are flat around the chosen values (see `tuning.rs` to re-run).
//!
//! Invariants: the index is built once per catalog change and persisted ([`SearchIndex::
//! to_bytes`]); loading it ([`SearchIndex::from_bytes`]) builds no hash map, decodes no tool
//! until asked, and checks a checksum and every offset, so damaged bytes are an error, never a
//! panic. Results are deterministic: ties break by shorter tool name, then catalog order. This
//! module knows nothing of servers' processes, the CLI or the cache's location.

mod analyze;
pub mod baseline;
mod bm25;
mod doc;
mod error;
pub mod eval;
mod fusion;
mod matcher;
mod names;
mod query;
pub mod semantic;
mod store;
mod stored_docs;
mod synonyms;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tuning;

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

pub use doc::{ParamDoc, ToolDoc};
pub use error::SearchError;

use bm25::{TermIndex, Tuning, TUNING};
use fusion::{Blend, Fusion, FUSION};
use matcher::Pattern;
use names::{NameKeys, NameQuery, Pin};
use stored_docs::StoredDocs;

/// Longest regex or exact pattern accepted, in characters (a guard against pathological
/// patterns; real ones are a few words).
pub const MAX_PATTERN_LEN: usize = 200;

/// BM25 hits with a lower normalised score are dropped. On the evaluation set, 0.1 answers
/// 17 of 20 queries about things no tool does with nothing, and pushes the expected answer
/// out of the first five for 1 of 250 answerable queries (0.15 rejected 19 of 20 but lost 8).
pub const MIN_SCORE: f64 = 0.1;

/// Highest normalised score of a hit that does not match by name; pinned hits score above.
pub const TEXT_SCORE_CEILING: f64 = 0.89;

/// Lowest score of a hit whose name starts with the query.
const PREFIX_SCORE: f64 = 0.9;

/// How to match a query against the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Method {
    /// Ranked words (BM25F with names pinned, synonyms, stemming).
    #[default]
    Bm25,
    /// Meaning only: cosine between the query's and each tool's embedding.
    Semantic,
    /// Words and meaning fused (names pinned first); the default when a model is installed.
    Hybrid,
    /// A case-insensitive regular expression over names, descriptions, parameters.
    Regex,
    /// A case-insensitive substring over names, descriptions, parameters.
    Exact,
}

impl Method {
    /// Every method, in the order help texts list them.
    pub const ALL: [Method; 5] = [
        Method::Hybrid,
        Method::Bm25,
        Method::Semantic,
        Method::Regex,
        Method::Exact,
    ];

    /// The method's name on the command line and in JSON (`bm25`, `regex`, `exact`).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Bm25 => "bm25",
            Method::Semantic => "semantic",
            Method::Hybrid => "hybrid",
            Method::Regex => "regex",
            Method::Exact => "exact",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = String;

    /// Parses `hybrid`, `bm25`, `semantic`, `regex` or `exact` (any case).
    fn from_str(s: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown search method `{s}` (expected hybrid, bm25, semantic, regex or \
                     exact)"
                )
            })
    }
}

/// What to look for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query<'a> {
    /// Words (bm25), a regex (regex) or a substring (exact).
    pub text: &'a str,
    /// How to match.
    pub method: Method,
    /// At most this many hits.
    pub limit: usize,
    /// Only tools of this server (its exact name), if set.
    pub server: Option<&'a str>,
}

/// One result: which tool, and how well it matches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Index into [`SearchIndex::docs`].
    pub doc: usize,
    /// Normalised to 0..=1 and comparable across queries (see the module doc).
    pub score: f64,
    /// What the score was made of (bm25, semantic and hybrid ranking).
    pub parts: Parts,
}

/// The parts of a ranked hit's score, for `--explain`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Parts {
    /// The normalised lexical score (0 when no word matched).
    pub lexical: f64,
    /// The cosine between query and tool embeddings, when both exist.
    pub semantic: Option<f64>,
    /// The query names the tool (whole name) or starts its name.
    pub pinned: bool,
}

/// The query's embedding and the tools' (from [`semantic`]), for semantic and hybrid ranking.
#[derive(Clone, Copy, Debug)]
pub struct Meaning<'a> {
    /// The query's unit vector.
    pub query: &'a [f32],
    /// The tools' vectors, lined up with the index.
    pub docs: &'a semantic::DocVectors,
}

/// The searchable catalog: the tools and everything precomputed to rank them. Built once per
/// catalog change, persisted with [`to_bytes`](Self::to_bytes), loaded by each `search`.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchIndex {
    docs: StoredDocs,
    terms: TermIndex,
    names: NameKeys,
    /// Always [`TUNING`] outside tests (what the stored postings were built with).
    tuning: Tuning,
    /// Always [`FUSION`] outside tests.
    fusion: Fusion,
}

impl SearchIndex {
    /// Indexes `docs` (their order is kept: [`Hit::doc`] indexes into it).
    pub fn build(docs: Vec<ToolDoc>) -> SearchIndex {
        SearchIndex::build_tuned(docs, TUNING)
    }

    fn build_tuned(docs: Vec<ToolDoc>, tuning: Tuning) -> SearchIndex {
        let terms = TermIndex::build(&docs, &tuning);
        let names = NameKeys::build(&docs);
        SearchIndex {
            docs: StoredDocs::new(docs),
            terms,
            names,
            tuning,
            fusion: FUSION,
        }
    }

    /// The indexed tools, in the order given to [`build`](Self::build). A loaded index
    /// decodes them all on the first call (a few milliseconds for 10,000 tools); to show a
    /// handful of hits, [`doc`](Self::doc) is cheaper.
    pub fn docs(&self) -> &[ToolDoc] {
        self.docs.all()
    }

    /// One indexed tool (what [`Hit::doc`] points to), decoded alone if [`docs`](Self::docs)
    /// has not been called; `None` if `index` is out of range.
    pub fn doc(&self, index: usize) -> Option<Cow<'_, ToolDoc>> {
        self.docs.get(index)
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the index holds no tool.
    pub fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// The persisted form: magic bytes, format version, checksum, then the compact encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        store::encode(&self.docs, &self.terms, &self.names)
    }

    /// Loads a persisted index without decoding its tools (see [`docs`](Self::docs)). Bytes
    /// that are damaged, truncated, or from another format version give
    /// [`SearchError::CorruptIndex`] (rebuild the index then).
    pub fn from_bytes(bytes: impl Into<bytes::Bytes>) -> Result<SearchIndex, SearchError> {
        let parts = store::decode(bytes.into())?;
        Ok(SearchIndex {
            docs: parts.docs,
            terms: parts.terms,
            names: parts.names,
            tuning: TUNING,
            fusion: FUSION,
        })
    }

    /// Runs a query. Only regex and exact patterns can fail (too long, invalid regex).
    /// Semantic and hybrid queries rank by words here: they need [`search_with`](Self::
    /// search_with) and the embeddings.
    pub fn search(&self, query: &Query) -> Result<Vec<Hit>, SearchError> {
        self.search_with(query, None)
    }

    /// Runs a query with the embeddings of the query and the tools, when there are some;
    /// without them, semantic and hybrid queries rank by words (bm25).
    pub fn search_with(
        &self,
        query: &Query,
        meaning: Option<Meaning>,
    ) -> Result<Vec<Hit>, SearchError> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        let pattern = match (query.method, meaning) {
            (Method::Semantic, Some(m)) => return Ok(self.rank(query, Some(m), Blend::Semantic)),
            (Method::Hybrid, Some(m)) => return Ok(self.rank(query, Some(m), Blend::Hybrid)),
            (Method::Bm25 | Method::Semantic | Method::Hybrid, _) => {
                return Ok(self.rank(query, None, Blend::Lexical))
            }
            (Method::Regex, _) => Pattern::Regex,
            (Method::Exact, _) => Pattern::Literal,
        };
        let re = matcher::compile(query.text, pattern)?;
        let literal = (pattern == Pattern::Literal)
            .then(|| query.text.trim())
            .filter(|t| !t.is_empty());
        Ok(matcher::find(
            self.docs(),
            &re,
            literal,
            query.server,
            query.limit,
        ))
    }

    /// Each tool's normalised lexical score for `text` (0 when no word matched).
    fn lexical_scores(&self, text: &str) -> Vec<f64> {
        let concepts = query::concepts(text, self.tuning.synonym_weight, |t| {
            self.terms.lookup(t).is_some()
        });
        let (scored, ideal) = self.terms.score(&concepts, &self.tuning);
        let mut scores = vec![0.0; self.docs.len()];
        if ideal > 0.0 {
            for &(doc, raw) in &scored {
                if let Some(slot) = scores.get_mut(doc) {
                    *slot = (f64::from(raw) / f64::from(ideal)).min(1.0);
                }
            }
        }
        scores
    }

    fn rank(&self, query: &Query, meaning: Option<Meaning>, blend: Blend) -> Vec<Hit> {
        let lexical = self.lexical_scores(query.text);
        let in_scope = |doc: usize| query.server.is_none_or(|s| self.docs.server(doc) == s);
        let name_query = NameQuery::new(query.text);
        let mut ranked: Vec<(Option<Pin>, Hit)> = Vec::new();
        for (doc, &text) in lexical.iter().enumerate() {
            if !in_scope(doc) {
                continue;
            }
            let cosine =
                meaning.and_then(|m| Some(f64::from(semantic::cosine(m.query, m.docs.get(doc)?))));
            let pin = match blend {
                Blend::Semantic => None,
                Blend::Lexical | Blend::Hybrid => self.names.pin(doc, &name_query),
            };
            let score = match pin {
                Some(Pin::Exact) => 1.0,
                Some(Pin::Prefix) => PREFIX_SCORE + (0.99 - PREFIX_SCORE) * text,
                None => match blend.score(text, cosine, &self.tuning, &self.fusion) {
                    Some(score) => score.min(TEXT_SCORE_CEILING),
                    None => continue,
                },
            };
            let parts = Parts {
                lexical: text,
                semantic: cosine,
                pinned: pin.is_some(),
            };
            ranked.push((pin, Hit { doc, score, parts }));
        }
        let name_len = |doc: usize| self.docs.tool(doc).len();
        ranked.sort_by(|(pa, a), (pb, b)| {
            pb.cmp(pa)
                .then(b.score.total_cmp(&a.score))
                .then(lexical[b.doc].total_cmp(&lexical[a.doc]))
                .then(name_len(a.doc).cmp(&name_len(b.doc)))
                .then(a.doc.cmp(&b.doc))
        });
        if blend == Blend::Hybrid && meaning.is_some() {
            let best = ranked.first().map_or(0.0, |(_, hit)| hit.score);
            if best < self.fusion.answer {
                ranked.clear();
            }
        }
        ranked.truncate(query.limit);
        ranked.into_iter().map(|(_, hit)| hit).collect()
    }
}
