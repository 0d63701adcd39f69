//! Search quality and speed, printed as Markdown (`cargo bench --bench search`).
//!
//! Quality: the fixture catalog and queries of `tests/fixtures/search`, ours against the plain
//! BM25 baseline (what mcp-launchpad does): recall@1, recall@5 and MRR per kind of query, and
//! for `no_answer` queries the share answered with nothing. Then the same on
//! `queries_holdout.json`: queries written after the ranking was tuned, never tuned on — the
//! honest estimate for queries nobody has seen.
//!
//! Speed: a synthetic catalog of 10,000 tools (the fixtures replicated under varied server
//! names, each copy with a word of its own so the dictionary grows as in a real catalog):
//! build time, persisted size, load time (`from_bytes`), query latency over the query set,
//! and what one `search` process pays after start-up: read the file, load, answer one query.

use std::time::{Duration, Instant};

use mcp_launch::search::baseline::BaselineIndex;
use mcp_launch::search::{eval, Method, Query, SearchIndex, ToolDoc};

/// Size of the synthetic catalog.
const SYNTHETIC_TOOLS: usize = 10_000;
/// Repetitions of each timing (the median is reported).
const ROUNDS: usize = 30;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/search/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn main() {
    let docs = eval::load_catalog(&fixture("tools.json")).expect("tools.json");
    let cases = eval::load_cases(&fixture("queries.json")).expect("queries.json");
    let holdout = eval::load_cases(&fixture("queries_holdout.json")).expect("holdout");
    quality("Search quality", &docs, &cases);
    quality("Held-out queries (not tuned on)", &docs, &holdout);
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this unoptimised, where
    // timings would only mislead.
    if std::env::args().any(|a| a == "--bench") {
        speed(&docs, &cases);
    } else {
        println!("(speed section skipped: run `cargo bench --bench search` for timings)");
    }
}

fn quality(title: &str, docs: &[ToolDoc], cases: &[eval::Case]) {
    let ours = SearchIndex::build(docs.to_vec());
    let base = BaselineIndex::build(docs);
    let (ours_rows, misses) = eval::evaluate(cases, |q| eval::ours(&ours, q));
    let (base_rows, _) = eval::evaluate(cases, |q| eval::baseline(&base, docs, q));
    println!(
        "## {title} ({} tools, {} queries)\n",
        docs.len(),
        cases.len()
    );
    println!("{}", eval::markdown_table(&ours_rows, &base_rows));
    println!(
        "Answerable queries whose first result was not an expected answer: {}",
        misses.len()
    );
    for miss in &misses {
        let got: Vec<&str> = miss.got.iter().map(|(name, _)| name.as_str()).collect();
        println!("- {} `{}` → {:?}", miss.case.kind, miss.case.query, got);
    }
    println!();
}

fn speed(docs: &[ToolDoc], cases: &[eval::Case]) {
    let catalog = synthesize(docs, SYNTHETIC_TOOLS);
    let started = Instant::now();
    let index = SearchIndex::build(catalog);
    let build = started.elapsed();
    let bytes = index.to_bytes();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("search.idx");
    std::fs::write(&path, &bytes).expect("write index");

    let bytes = bytes::Bytes::from(bytes);
    let load = median(ROUNDS, || {
        let started = Instant::now();
        let loaded = SearchIndex::from_bytes(bytes.clone()).expect("loads");
        let elapsed = started.elapsed();
        drop(loaded);
        elapsed
    });

    let mut latencies: Vec<Duration> = Vec::new();
    for method in [Method::Bm25, Method::Exact] {
        for case in cases {
            let text = if method == Method::Exact {
                case.query.split_whitespace().next().unwrap_or("")
            } else {
                case.query.as_str()
            };
            let query = Query {
                text,
                method,
                limit: 5,
                server: None,
            };
            let started = Instant::now();
            let hits = index.search(&query).expect("search");
            latencies.push(started.elapsed());
            std::hint::black_box(hits);
        }
    }
    let regex = median(ROUNDS, || {
        let query = Query {
            text: "(create|open).*(pull|merge).?request",
            method: Method::Regex,
            limit: 5,
            server: None,
        };
        let started = Instant::now();
        std::hint::black_box(index.search(&query).expect("regex"));
        started.elapsed()
    });
    let bm25: Vec<Duration> = latencies[..cases.len()].to_vec();
    let exact: Vec<Duration> = latencies[cases.len()..].to_vec();

    let one_process = median(ROUNDS, || {
        let started = Instant::now();
        let bytes = std::fs::read(&path).expect("read index");
        let loaded = SearchIndex::from_bytes(bytes).expect("loads");
        let query = Query {
            text: "open a pull request for my branch",
            method: Method::Bm25,
            limit: 5,
            server: None,
        };
        let hits = loaded.search(&query).expect("search");
        let shown: Vec<_> = hits.iter().filter_map(|h| loaded.doc(h.doc)).collect();
        std::hint::black_box(shown);
        started.elapsed()
    });
    let decode_all = median(ROUNDS, || {
        let loaded = SearchIndex::from_bytes(bytes.clone()).expect("loads");
        let started = Instant::now();
        std::hint::black_box(loaded.docs().len());
        started.elapsed()
    });

    println!(
        "## Search speed ({} tools, release build)\n",
        index.docs().len()
    );
    println!("| measure | value |\n|---|---:|");
    println!("| build the index | {} |", ms(build));
    println!(
        "| persisted size (`to_bytes`) | {:.1} MiB |",
        bytes.len() as f64 / 1048576.0
    );
    println!("| load (`from_bytes`), median | {} |", ms(load));
    println!(
        "| bm25 query, p50 / p99 ({} queries) | {} / {} |",
        bm25.len(),
        ms(percentile(&bm25, 50)),
        ms(percentile(&bm25, 99))
    );
    println!(
        "| exact query, p50 / p99 | {} / {} |",
        ms(percentile(&exact, 50)),
        ms(percentile(&exact, 99))
    );
    println!(
        "| regex query (alternations, wildcards), median | {} |",
        ms(regex)
    );
    println!(
        "| read file + load + one bm25 query + decode its hits, median | {} |",
        ms(one_process)
    );
    println!(
        "| decode every tool (first `docs()` call; regex/exact need it), median | {} |",
        ms(decode_all)
    );
}

/// `count` tools made of the fixtures: copy `k` of a tool lives on server `{server}-{k}` and
/// has an extra sentence with a word found nowhere else, as real catalogs have vocabulary of
/// their own.
fn synthesize(docs: &[ToolDoc], count: usize) -> Vec<ToolDoc> {
    let mut seed: u64 = 0x5eed;
    let mut word = move || {
        (0..7)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                char::from(b'a' + ((seed >> 33) % 26) as u8)
            })
            .collect::<String>()
    };
    (0..)
        .flat_map(|copy| docs.iter().map(move |doc| (copy, doc)))
        .take(count)
        .map(|(copy, doc)| {
            let mut doc = doc.clone();
            if copy > 0 {
                doc.server = format!("{}-{copy}", doc.server);
                doc.description = format!("{} Used by the {} team.", doc.description, word());
            }
            doc
        })
        .collect()
}

fn median(rounds: usize, mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..rounds).map(|_| run()).collect();
    times.sort();
    times[times.len() / 2]
}

fn percentile(times: &[Duration], p: usize) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let rank = (sorted.len() * p).div_ceil(100).saturating_sub(1);
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
