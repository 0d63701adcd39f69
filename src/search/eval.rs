//! The evaluation harness: a labelled query set run against a search function, scored as
//! recall@1, recall@5 and MRR per kind of query. Shared by `benches/search.rs` (the report)
//! and the fixture tests (the targets), so both measure the same thing.
//!
//! Fixtures (`tests/fixtures/search/`): `tools.json` maps server names to `tools/list`
//! entries; `queries.json` is a list of `{kind, query, expected}` where `expected` lists the
//! acceptable answers as `server/tool` (empty for `no_answer`). A query is recalled at k when
//! any acceptable answer is among the first k results; MRR uses the first acceptable answer
//! within the first [`DEPTH`] results.
//!
//! The shared evaluation set (`tests/fixtures/search-bench/`, see [`BenchSet`]) comes with a
//! held-out split fixed by a hash of each query's id: quality targets are asserted on that
//! split only, and nothing is tuned on it.

use serde::Deserialize;
use serde_json::Value;

use super::baseline::BaselineIndex;
use super::doc::ToolDoc;
use super::{Method, Query, SearchIndex};

/// How many results each query asks for.
pub const DEPTH: usize = 10;

/// The kinds of query, in report order (`no_answer` last: it is scored differently).
pub const KINDS: [&str; 8] = [
    "keyword",
    "task",
    "paraphrase",
    "platform",
    "exact_name",
    "ambiguous",
    "cross_server",
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

/// The shared evaluation set, read from a directory laid out as `tests/fixtures/search-bench/`:
/// `tools/<server>.json` (a `tools/list` array each), `queries.jsonl` and `holdout_ids.txt`.
#[derive(Debug, Clone)]
pub struct BenchSet {
    /// Every server's tools, servers in file-name order.
    pub docs: Vec<ToolDoc>,
    /// Queries that may be looked at while tuning.
    pub dev: Vec<Case>,
    /// Queries never tuned on: what quality is judged by.
    pub held_out: Vec<Case>,
    /// Ids of the held-out queries as listed in `holdout_ids.txt`.
    pub held_out_ids: Vec<String>,
}

/// One line of `queries.jsonl`.
#[derive(Deserialize)]
struct BenchQuery {
    id: String,
    query: String,
    kind: String,
    gold: Vec<BenchGold>,
}

#[derive(Deserialize)]
struct BenchGold {
    server: String,
    tool: String,
}

impl BenchQuery {
    fn into_case(self) -> Case {
        let kind = match self.kind.as_str() {
            "negative" => "no_answer".to_string(),
            other => other.replace('-', "_"),
        };
        let expected = self
            .gold
            .iter()
            .map(|g| format!("{}/{}", g.server, g.tool))
            .collect();
        Case {
            kind,
            query: self.query,
            expected,
        }
    }
}

impl BenchSet {
    /// Reads the set in `dir`; any unreadable file is an error naming it.
    pub fn load(dir: &std::path::Path) -> Result<BenchSet, String> {
        let read = |path: std::path::PathBuf| {
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
        };
        let mut files: Vec<_> = std::fs::read_dir(dir.join("tools"))
            .map_err(|e| format!("{}/tools: {e}", dir.display()))?
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut docs = Vec::new();
        for path in files {
            let server = path.file_stem().unwrap_or_default().to_string_lossy();
            let tools: Vec<Value> = serde_json::from_str(&read(path.clone())?)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            docs.extend(tools.iter().map(|t| ToolDoc::from_definition(&server, t)));
        }
        let held_out_ids: Vec<String> = read(dir.join("holdout_ids.txt"))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        let (mut dev, mut held_out) = (Vec::new(), Vec::new());
        for (n, line) in read(dir.join("queries.jsonl"))?.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let query: BenchQuery = serde_json::from_str(line)
                .map_err(|e| format!("queries.jsonl line {}: {e}", n + 1))?;
            let is_held_out = held_out_ids.contains(&query.id);
            let split = if is_held_out { &mut held_out } else { &mut dev };
            split.push(query.into_case());
        }
        Ok(BenchSet {
            docs,
            dev,
            held_out,
            held_out_ids,
        })
    }

    /// The rule the held-out split was drawn by, before any result was seen: a query is held
    /// out when the 64-bit FNV-1a hash of its id is odd.
    pub fn is_held_out_id(id: &str) -> bool {
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        hash % 2 == 1
    }

    /// Every query id in `queries.jsonl` of `dir`, in file order.
    pub fn all_ids(dir: &std::path::Path) -> Result<Vec<String>, String> {
        let path = dir.join("queries.jsonl");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<BenchQuery>(l)
                    .map(|q| q.id)
                    .map_err(|e| e.to_string())
            })
            .collect()
    }
}

/// Our BM25 ranking for `text`, [`DEPTH`] deep.
pub fn ours(index: &SearchIndex, text: &str) -> Ranking {
    ranked(index, text, Method::Bm25, None)
}

/// Our ranking for `text` by `method`, [`DEPTH`] deep, with embeddings when given.
pub fn ranked(
    index: &SearchIndex,
    text: &str,
    method: Method,
    meaning: Option<super::Meaning>,
) -> Ranking {
    let query = Query {
        text,
        method,
        limit: DEPTH,
        server: None,
    };
    let hits = index.search_with(&query, meaning).unwrap_or_default();
    hits.iter()
        .filter_map(|h| Some((qualified(index.doc(h.doc)?.as_ref()), h.score)))
        .collect()
}

/// A copy of `index` whose hybrid ranking never answers "nothing fits", to measure where that
/// threshold should sit.
pub fn without_answer_gate(index: &SearchIndex) -> SearchIndex {
    let mut open = index.clone();
    open.fusion.answer = 0.0;
    open
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
