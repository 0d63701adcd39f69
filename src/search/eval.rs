//! The evaluation harness: a labelled query set run against a search function, scored as
//! recall@1, recall@5 and MRR per kind of query. Shared by `benches/search.rs` (the report)
//! and the fixture tests (the targets), so both measure the same thing.
//!
//! Fixtures (`tests/fixtures/search/`): `tools.json` maps server names to `tools/list`
//! entries; `queries.json` is a list of `{kind, query, expected}` where `expected` lists the
//! acceptable answers as `server/tool` (empty for `no_answer`). A query is recalled at k when
//! any acceptable answer is among the first k results; MRR uses the first acceptable answer
//! within the first [`DEPTH`] results.

use serde::Deserialize;
use serde_json::Value;

use super::baseline::BaselineIndex;
use super::doc::ToolDoc;
use super::{Method, Query, SearchIndex};

/// How many results each query asks for.
pub const DEPTH: usize = 10;

/// The kinds of query, in report order (`no_answer` last: it is scored differently).
pub const KINDS: [&str; 6] = [
    "keyword",
    "task",
    "paraphrase",
    "platform",
    "exact_name",
    "no_answer",
];

/// One labelled query.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    /// One of [`KINDS`].
    pub kind: String,
    /// What a user or agent would type.
    pub query: String,
    /// Acceptable answers as `server/tool`; empty when no tool should match.
    pub expected: Vec<String>,
}

/// A search function's answer: `server/tool` names, best first, with their scores.
pub type Ranking = Vec<(String, f64)>;

/// Scores of one kind of query (or of all answerable queries: kind `overall`).
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// The kind, or `overall`.
    pub kind: String,
    /// Number of queries.
    pub queries: usize,
    /// Share of queries whose first result is acceptable.
    pub recall_at_1: f64,
    /// Share of queries with an acceptable result in the first five.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first acceptable result.
    pub mrr: f64,
    /// For `no_answer`: share of queries answered with nothing.
    pub rejected: f64,
}

/// A query whose expected answer was not first.
#[derive(Debug, Clone)]
pub struct Miss {
    /// The case.
    pub case: Case,
    /// What came back (first few).
    pub got: Ranking,
}

/// Reads `tools.json`: server name → list of tool definitions.
pub fn load_catalog(json: &str) -> Result<Vec<ToolDoc>, serde_json::Error> {
    let servers: serde_json::Map<String, Value> = serde_json::from_str(json)?;
    let mut docs = Vec::new();
    for (server, tools) in &servers {
        for tool in tools.as_array().into_iter().flatten() {
            docs.push(ToolDoc::from_definition(server, tool));
        }
    }
    Ok(docs)
}

/// Reads `queries.json`.
pub fn load_cases(json: &str) -> Result<Vec<Case>, serde_json::Error> {
    serde_json::from_str(json)
}

/// Our BM25 ranking for `text`, [`DEPTH`] deep.
pub fn ours(index: &SearchIndex, text: &str) -> Ranking {
    let query = Query {
        text,
        method: Method::Bm25,
        limit: DEPTH,
        server: None,
    };
    let hits = index.search(&query).unwrap_or_default();
    hits.iter()
        .filter_map(|h| Some((qualified(index.doc(h.doc)?.as_ref()), h.score)))
        .collect()
}

/// The baseline's ranking for `text`, [`DEPTH`] deep.
pub fn baseline(index: &BaselineIndex, docs: &[ToolDoc], text: &str) -> Ranking {
    index
        .search(text, DEPTH)
        .iter()
        .map(|h| (qualified(&docs[h.doc]), h.score))
        .collect()
}

/// `server/tool`.
pub fn qualified(doc: &ToolDoc) -> String {
    format!("{}/{}", doc.server, doc.tool)
}

/// Runs every case through `run` and scores the answers per kind, plus `overall` over all
/// answerable cases. Also returns the answerable cases whose first result was wrong.
pub fn evaluate(cases: &[Case], mut run: impl FnMut(&str) -> Ranking) -> (Vec<Scores>, Vec<Miss>) {
    let mut rows = Vec::new();
    let mut misses = Vec::new();
    let mut overall = Acc::default();
    for kind in KINDS {
        let mut acc = Acc::default();
        for case in cases.iter().filter(|c| c.kind == kind) {
            let got = run(&case.query);
            if case.expected.is_empty() {
                acc.add_rejection(got.is_empty());
                continue;
            }
            let rank = got
                .iter()
                .position(|(name, _)| case.expected.contains(name));
            acc.add(rank);
            overall.add(rank);
            if rank != Some(0) {
                misses.push(Miss {
                    case: case.clone(),
                    got: got.into_iter().take(3).collect(),
                });
            }
        }
        rows.push(acc.scores(kind));
    }
    rows.insert(KINDS.len() - 1, overall.scores("overall"));
    (rows, misses)
}

/// Running sums for one row.
#[derive(Default)]
struct Acc {
    queries: usize,
    at_1: usize,
    at_5: usize,
    reciprocal: f64,
    rejected: usize,
}

impl Acc {
    fn add(&mut self, rank: Option<usize>) {
        self.queries += 1;
        if let Some(rank) = rank {
            self.at_1 += usize::from(rank == 0);
            self.at_5 += usize::from(rank < 5);
            self.reciprocal += 1.0 / (rank + 1) as f64;
        }
    }

    fn add_rejection(&mut self, is_rejected: bool) {
        self.queries += 1;
        self.rejected += usize::from(is_rejected);
    }

    fn scores(&self, kind: &str) -> Scores {
        let n = self.queries.max(1) as f64;
        Scores {
            kind: kind.to_string(),
            queries: self.queries,
            recall_at_1: self.at_1 as f64 / n,
            recall_at_5: self.at_5 as f64 / n,
            mrr: self.reciprocal / n,
            rejected: self.rejected as f64 / n,
        }
    }
}

/// The comparison table in Markdown: one row per kind that has queries, ours next to the
/// baseline's.
pub fn markdown_table(ours: &[Scores], baseline: &[Scores]) -> String {
    let mut out = String::from(
        "| kind | queries | R@1 ours | R@1 base | R@5 ours | R@5 base | MRR ours | MRR base |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (o, b) in ours.iter().zip(baseline) {
        if o.queries == 0 {
            continue;
        }
        if o.kind == "no_answer" {
            out.push_str(&format!(
                "| no_answer (share answered with nothing) | {} | {:.2} | {:.2} | | | | |\n",
                o.queries, o.rejected, b.rejected
            ));
        } else {
            out.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
                o.kind,
                o.queries,
                o.recall_at_1,
                b.recall_at_1,
                o.recall_at_5,
                b.recall_at_5,
                o.mrr,
                b.mrr
            ));
        }
    }
    out
}
