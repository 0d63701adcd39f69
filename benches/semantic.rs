//! Search by meaning: quality and cost, printed as Markdown (`cargo bench --bench semantic`).
//!
//! Needs an installed embedding model (`mcp-launch model install`, or `MCP_LAUNCH_MODEL_DIR`).
//! Quality, on the shared evaluation set `tests/fixtures/search-bench` (33 real servers, 479
//! tools): recall@1, recall@5 and MRR per kind of query for hybrid, semantic-only and BM25,
//! on the development split (what the fusion was chosen on) and on the held-out split (never
//! tuned on), and the "nothing fits" trade-off: for thresholds on the best hybrid score, the
//! share of negative queries answered with nothing against the share of correct first answers
//! kept. Cost: model open, index time per tool (all cores), query embedding, and hybrid
//! ranking over 10,000 tools in a long-lived process.

use std::time::{Duration, Instant};

#[path = "common/timing.rs"]
mod timing;
use timing::{median, ms};

use mcp_launch::search::baseline::BaselineIndex;
use mcp_launch::search::eval::{self, BenchSet, Case};
use mcp_launch::search::semantic::{DocVectors, Model, VectorCache};
use mcp_launch::search::{Meaning, Method, Query, SearchIndex, ToolDoc};

const ROUNDS: usize = 30;
const SYNTHETIC_TOOLS: usize = 10_000;

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let dir = match mcp_launch::model::locate() {
        Ok(Some(dir)) => dir,
        _ if !benching => {
            println!("(no embedding model installed: `cargo bench --bench semantic` needs one)");
            return;
        }
        other => panic!("no usable embedding model ({other:?}): run `mcp-launch model install`"),
    };
    if !benching {
        println!("(semantic bench skipped: run `cargo bench --bench semantic`)");
        return;
    }
    let started = Instant::now();
    let model = Model::open(&dir).expect("the model opens");
    let open = started.elapsed();
    let set = BenchSet::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search-bench"),
    )
    .expect("search-bench");
    let started = Instant::now();
    let mut cache = VectorCache::new(&model.card().name, model.dimensions());
    let keys = VectorCache::keys(&model, &set.docs);
    cache.fill(&model, &set.docs, &keys);
    let index_time = started.elapsed();
    let vectors = cache.lookup(&keys);
    let index = SearchIndex::build(set.docs.clone());
    println!(
        "Model `{}` ({}), {} dimensions, {:.1} MB on disk.\n",
        model.card().name,
        model.card().source,
        model.dimensions(),
        mcp_launch::model::size_on_disk(&dir) as f64 / 1e6
    );
    for (title, cases) in [
        ("Development split", &set.dev),
        ("Held-out split (never tuned on)", &set.held_out),
    ] {
        quality(title, &index, &model, &vectors, cases);
    }
    cost(&model, &set.docs, &vectors, open, index_time);
}

fn quality(title: &str, index: &SearchIndex, model: &Model, vectors: &DocVectors, cases: &[Case]) {
    let run = |method: Method| {
        eval::evaluate(cases, |q| {
            let query = model.embed_query(q);
            let meaning = Meaning {
                query: &query,
                docs: vectors,
            };
            eval::ranked(index, q, method, Some(meaning))
        })
        .0
    };
    let (hybrid, semantic, bm25) = (
        run(Method::Hybrid),
        run(Method::Semantic),
        run(Method::Bm25),
    );
    let peer = BaselineIndex::build(index.docs());
    let (plain, _) = eval::evaluate(cases, |q| eval::baseline(&peer, index.docs(), q));
    println!(
        "## {title}: hybrid (ours) vs our BM25 ({} queries)\n",
        cases.len()
    );
    println!("{}", eval::markdown_table(&hybrid, &bm25));
    println!("Hybrid (ours) vs plain BM25 (mcp-launchpad style, the peer):\n");
    println!("{}", eval::markdown_table(&hybrid, &plain));
    println!("Semantic only vs our BM25:\n");
    println!("{}", eval::markdown_table(&semantic, &bm25));
    tradeoff(index, model, vectors, cases);
}

/// Best hybrid score per query, with the answer gate off: negatives' and correct answers'.
fn tradeoff(index: &SearchIndex, model: &Model, vectors: &DocVectors, cases: &[Case]) {
    let index = &eval::without_answer_gate(index);
    let mut negatives = Vec::new();
    let mut correct = Vec::new();
    for case in cases {
        let query = model.embed_query(&case.query);
        let q = Query {
            text: &case.query,
            method: Method::Hybrid,
            limit: 1,
            server: None,
        };
        let hits = index
            .search_with(
                &q,
                Some(Meaning {
                    query: &query,
                    docs: vectors,
                }),
            )
            .unwrap_or_default();
        let top = hits.first();
        let score = top.map_or(0.0, |h| h.score);
        if case.expected.is_empty() {
            negatives.push(score);
        } else if top
            .and_then(|h| index.doc(h.doc))
            .is_some_and(|d| case.expected.contains(&eval::qualified(&d)))
        {
            correct.push(score);
        }
    }
    println!("\"Nothing fits\": a best hybrid score under the threshold answers nothing ({} negatives, {} correct first answers).\n", negatives.len(), correct.len());
    println!("| threshold | negatives rejected | correct first answers kept |\n|---:|---:|---:|");
    for t in [0.15, 0.2, 0.25, 0.3, 0.35, 0.4] {
        let rejected =
            negatives.iter().filter(|s| **s < t).count() as f64 / negatives.len().max(1) as f64;
        let kept = correct.iter().filter(|s| **s >= t).count() as f64 / correct.len().max(1) as f64;
        println!(
            "| {t:.2} | {:.0}% | {:.0}% |",
            rejected * 100.0,
            kept * 100.0
        );
    }
    println!();
}

fn cost(
    model: &Model,
    docs: &[ToolDoc],
    vectors: &DocVectors,
    open: Duration,
    index_time: Duration,
) {
    let queries = [
        "create a pull request for my branch",
        "what time is it in another city",
        "land approved contribution onto the default line of development",
    ];
    let embed = median(ROUNDS, || {
        let started = Instant::now();
        for q in queries {
            std::hint::black_box(model.embed_query(q));
        }
        started.elapsed() / queries.len() as u32
    });
    // 10,000 tools: the set replicated, each copy's vectors reused (ranking cost, not embedding).
    let mut big = Vec::new();
    let mut cache = VectorCache::new(&model.card().name, model.dimensions());
    while big.len() < SYNTHETIC_TOOLS {
        let copy = big.len() / docs.len();
        for (i, doc) in docs.iter().enumerate() {
            let mut doc = doc.clone();
            doc.server = format!("{}{copy}", doc.server);
            if let Some(v) = vectors.get(i) {
                let text = mcp_launch::search::semantic::document_text(&doc);
                cache.insert(VectorCache::key(&model.card().name, &text), v);
            }
            big.push(doc);
            if big.len() == SYNTHETIC_TOOLS {
                break;
            }
        }
    }
    let big_vectors = cache.lookup(&VectorCache::keys(model, &big));
    let index = SearchIndex::build(big);
    let search = median(ROUNDS, || {
        let started = Instant::now();
        for text in queries {
            let query = model.embed_query(text);
            let q = Query {
                text,
                method: Method::Hybrid,
                limit: 5,
                server: None,
            };
            std::hint::black_box(
                index
                    .search_with(
                        &q,
                        Some(Meaning {
                            query: &query,
                            docs: &big_vectors,
                        }),
                    )
                    .unwrap(),
            );
        }
        started.elapsed() / queries.len() as u32
    });
    let per_tool = index_time / docs.len() as u32;
    println!("## Cost\n");
    println!("| what | time |\n|---|---:|");
    println!(
        "| open the model (map the weights, read the vocabulary) | {:.1} ms |",
        ms(open)
    );
    println!(
        "| embed {} tools, all cores | {:.1} s ({:.1} ms per tool; 10,000 tools ≈ {:.0} s) |",
        docs.len(),
        index_time.as_secs_f64(),
        ms(per_tool),
        per_tool.as_secs_f64() * 10_000.0
    );
    println!(
        "| embed one query (median of {ROUNDS}) | {:.2} ms |",
        ms(embed)
    );
    println!("| hybrid query over {SYNTHETIC_TOOLS} tools in a long-lived process, embedding included | {:.2} ms |", ms(search));
    println!();
}
