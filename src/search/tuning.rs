//! Tools for tuning the ranking on the fixture set (ignored tests, run by hand):
//!
//! ```text
//! SEARCH_TUNING="syn=0.6;name=4,coord=1" \
//!     cargo test --lib search::tuning::sweep -- --ignored --nocapture
//! SEARCH_QUERY="make a new folder" \
//!     cargo test --lib search::tuning::explain -- --ignored --nocapture
//! ```
//!
//! `sweep` prints recall@1/recall@5/MRR per kind for the current tuning and each variant, on
//! the even and the odd half of the development queries of `tests/fixtures/search-bench`
//! separately: a change that helps one half only is fitting noise. The held-out split of that
//! set is never loaded here: quality is judged on it (`search::tests::evaluation`), so tuning
//! must not see it. `explain` prints a query's concepts (`?` marks terms the index lacks) and
//! its ranking over the same catalog. Both ignore the cutoff when `cut=0` is given.

use super::bm25::{Tuning, TUNING};
use super::fusion::{Fusion, FUSION};
use super::semantic::VectorCache;
use super::{eval, query, Method, SearchIndex};

/// The development half of the shared set: its catalog and the queries that may be tuned on.
fn dev_set() -> (Vec<super::ToolDoc>, Vec<eval::Case>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search-bench");
    let set = eval::BenchSet::load(&dir).expect("search-bench loads");
    (set.docs, set.dev)
}

/// The even and the odd half of `cases`: a change that helps one only is fitting noise.
fn halves(cases: &[eval::Case]) -> [Vec<eval::Case>; 2] {
    let half = |parity: usize| -> Vec<eval::Case> {
        let picked = cases.iter().enumerate().filter(|(i, _)| i % 2 == parity);
        picked.map(|(_, c)| c.clone()).collect()
    };
    [half(0), half(1)]
}

/// Applies `key=value,…` changes to the current tuning.
fn tuning_from(spec: &str) -> Tuning {
    let mut t = TUNING;
    for change in spec.split(',').filter(|s| !s.trim().is_empty()) {
        let (key, value) = change.split_once('=').expect("key=value");
        let v: f32 = value.trim().parse().expect("a number");
        match key.trim() {
            "name" => t.fields[0].weight = v,
            "name_b" => t.fields[0].b = v,
            "server" => t.fields[1].weight = v,
            "title" => t.fields[2].weight = v,
            "desc" => t.fields[3].weight = v,
            "desc_b" => t.fields[3].b = v,
            "pname" => t.fields[4].weight = v,
            "pdesc" => t.fields[5].weight = v,
            "k1" => t.k1 = v,
            "syn" => t.synonym_weight = v,
            "coord" => t.coordination = v,
            "unk" => t.unknown_weight = v,
            "cut" => t.cutoff = f64::from(v),
            other => panic!("unknown knob {other}"),
        }
    }
    t
}

#[test]
#[ignore]
fn sweep() {
    let (docs, cases) = dev_set();
    let halves = halves(&cases);
    let spec = std::env::var("SEARCH_TUNING").unwrap_or_default();
    let variants = std::iter::once("").chain(spec.split(';').filter(|s| !s.is_empty()));
    for variant in variants {
        let index = SearchIndex::build_tuned(docs.clone(), tuning_from(variant));
        let mut line = format!(
            "{:32}",
            if variant.is_empty() {
                "current"
            } else {
                variant
            }
        );
        for cases in &halves {
            let (rows, _) = eval::evaluate(cases, |q| eval::ours(&index, q));
            for r in &rows {
                line += &match r.kind.as_str() {
                    "no_answer" => format!(" na:{:.2}", r.rejected),
                    "exact_name" | "platform" => String::new(),
                    kind => format!(
                        " {}:{:.2}/{:.2}/{:.2}",
                        &kind[..2],
                        r.recall_at_1,
                        r.recall_at_5,
                        r.mrr
                    ),
                };
            }
            line += " |";
        }
        println!("{line}");
    }
}

#[test]
#[ignore]
fn explain() {
    let (docs, _) = dev_set();
    let tuning = tuning_from(&std::env::var("SEARCH_TUNING").unwrap_or_default());
    let index = SearchIndex::build_tuned(docs, tuning);
    let text = std::env::var("SEARCH_QUERY").expect("SEARCH_QUERY");
    let known = |t: &str| index.terms.lookup(t).is_some();
    for concept in query::concepts(&text, tuning.synonym_weight, known) {
        let alternatives: Vec<String> = concept
            .alternatives
            .iter()
            .map(|a| {
                let mark = if a.terms.iter().all(|t| known(t)) {
                    ""
                } else {
                    "?"
                };
                format!("{}{mark}@{}", a.terms.join("+"), a.weight)
            })
            .collect();
        println!("concept: {}", alternatives.join(" | "));
    }
    for (name, score) in eval::ours(&index, &text) {
        println!("{score:.3} {name}");
    }
}

/// The model the semantic sweep uses: `MCP_LAUNCH_MODEL_DIR`, else the test suite's install.
fn model() -> super::semantic::Model {
    let dir = std::env::var_os("MCP_LAUNCH_MODEL_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/model"),
        std::path::PathBuf::from,
    );
    super::semantic::Model::open(&dir).expect("a model (MCP_LAUNCH_MODEL_DIR)")
}

/// Applies `key=value,…` changes to the current fusion.
fn fusion_from(spec: &str) -> Fusion {
    let mut f = FUSION;
    for change in spec.split(',').filter(|s| !s.trim().is_empty()) {
        let (key, value) = change.split_once('=').expect("key=value");
        let v: f64 = value.trim().parse().expect("a number");
        match key.trim() {
            "w" => f.weight = v,
            "floor" => f.floor = v,
            "top" => f.top = v,
            "cut" => f.cutoff = v,
            "answer" => f.answer = v,
            "scut" => f.semantic_cutoff = v,
            other => panic!("unknown knob {other}"),
        }
    }
    f
}

/// `SEARCH_FUSION="w=0.8;w=0.6,floor=0.2"`: semantic and hybrid ranking on both halves of the
/// development queries, for the current fusion and each variant (bm25 first, for reference).
#[test]
#[ignore]
fn sweep_fusion() {
    let (docs, cases) = dev_set();
    let model = model();
    let started = std::time::Instant::now();
    let mut cache = VectorCache::new(&model.card().name, model.dimensions());
    let cache_file = std::env::temp_dir().join(format!("mcpl-sweep-{}.vec", model.card().name));
    if let Ok(bytes) = std::fs::read(&cache_file) {
        cache = VectorCache::from_bytes(&bytes, &model.card().name, model.dimensions());
    }
    let keys = VectorCache::keys(&model, &docs);
    let embedded = cache.fill(&model, &docs, &keys).len();
    std::fs::write(&cache_file, cache.to_bytes()).expect("cache written");
    println!("{embedded} tools embedded in {:?}", started.elapsed());
    let vectors = cache.lookup(&keys);
    let queries: std::collections::HashMap<String, Vec<f32>> = cases
        .iter()
        .map(|c| (c.query.clone(), model.embed_query(&c.query)))
        .collect();
    let [even, odd] = halves(&cases);
    let halves = [cases.clone(), even, odd];
    let spec = std::env::var("SEARCH_FUSION").unwrap_or_default();
    let variants = std::iter::once("").chain(spec.split(';').filter(|s| !s.is_empty()));
    let mut index = SearchIndex::build(docs.clone());
    let runs = [Method::Bm25, Method::Semantic, Method::Hybrid];
    for variant in variants {
        index.fusion = fusion_from(variant);
        for method in runs {
            let mut line = format!(
                "{:24} {:8}",
                if variant.is_empty() {
                    "current"
                } else {
                    variant
                },
                method.as_str()
            );
            for cases in &halves {
                let (rows, _) = eval::evaluate(cases, |q| {
                    let meaning = super::Meaning {
                        query: &queries[q],
                        docs: &vectors,
                    };
                    eval::ranked(&index, q, method, Some(meaning))
                });
                line += &summary(&rows);
                line += " |";
            }
            println!("{line}");
        }
        let ungated = Fusion {
            answer: 0.0,
            ..index.fusion
        };
        index.fusion = ungated;
        gate_tradeoff(&index, &cases, &queries, &vectors);
    }
}

/// For thresholds on the best hybrid score: the share of negative queries answered with
/// nothing, against the share of correct first answers kept.
fn gate_tradeoff(
    index: &SearchIndex,
    cases: &[eval::Case],
    queries: &std::collections::HashMap<String, Vec<f32>>,
    vectors: &super::semantic::DocVectors,
) {
    let mut negatives = Vec::new();
    let mut correct = Vec::new();
    for case in cases {
        let meaning = super::Meaning {
            query: &queries[&case.query],
            docs: vectors,
        };
        let got = eval::ranked(index, &case.query, Method::Hybrid, Some(meaning));
        let top = got.first().map_or(0.0, |(_, s)| *s);
        if case.expected.is_empty() {
            negatives.push(top);
        } else if got.first().is_some_and(|(n, _)| case.expected.contains(n)) {
            correct.push(top);
        }
    }
    let mut line = String::from("  gate (rejected/kept):");
    for t in [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45] {
        let rejected =
            negatives.iter().filter(|s| **s < t).count() as f64 / negatives.len().max(1) as f64;
        let kept = correct.iter().filter(|s| **s >= t).count() as f64 / correct.len().max(1) as f64;
        line += &format!(" {t:.2}:{rejected:.2}/{kept:.2}");
    }
    println!("{line}");
}

fn summary(rows: &[eval::Scores]) -> String {
    let mut line = String::new();
    for r in rows {
        line += &match r.kind.as_str() {
            "no_answer" => format!(" na:{:.2}", r.rejected),
            "overall" => format!(" ALL:{:.3}/{:.3}", r.recall_at_1, r.recall_at_5),
            "paraphrase" => format!(" pa:{:.2}", r.recall_at_5),
            "keyword" => format!(" kw:{:.2}", r.recall_at_5),
            "exact_name" => format!(" ex:{:.2}", r.recall_at_1),
            _ => String::new(),
        };
    }
    line
}

/// `SEARCH_DUMP=/tmp/dev.json`: every development query's lexical score, cosine and name pin
/// for every tool, for trying fusions outside Rust (the held-out split is not written).
#[test]
#[ignore]
fn dump_features() {
    let (docs, cases) = dev_set();
    let model = model();
    let mut cache = VectorCache::new(&model.card().name, model.dimensions());
    let keys = VectorCache::keys(&model, &docs);
    cache.fill(&model, &docs, &keys);
    let vectors = cache.lookup(&keys);
    let index = SearchIndex::build(docs.clone());
    let tools: Vec<String> = docs
        .iter()
        .map(|d| format!("{}/{}", d.server, d.tool))
        .collect();
    let rows: Vec<serde_json::Value> = cases
        .iter()
        .map(|case| {
            let q = model.embed_query(&case.query);
            let lexical = index.lexical_scores(&case.query);
            let name_query = super::names::NameQuery::new(&case.query);
            let cosine: Vec<f32> = (0..docs.len())
                .map(|d| {
                    vectors
                        .get(d)
                        .map_or(0.0, |v| super::semantic::cosine(&q, v))
                })
                .collect();
            let pin: Vec<u8> = (0..docs.len())
                .map(|d| match index.names.pin(d, &name_query) {
                    None => 0,
                    Some(super::names::Pin::Prefix) => 1,
                    Some(super::names::Pin::Exact) => 2,
                })
                .collect();
            serde_json::json!({"query": case.query, "kind": case.kind, "expected": case.expected,
                "lexical": lexical, "cosine": cosine, "pin": pin})
        })
        .collect();
    let out = serde_json::json!({"tools": tools, "cases": rows});
    let path = std::env::var("SEARCH_DUMP").expect("SEARCH_DUMP");
    std::fs::write(path, out.to_string()).expect("dump written");
}
