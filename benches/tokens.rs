//! Token counting: ours against tiktoken-rs, printed as Markdown (`cargo bench --bench tokens`).
//!
//! The corpus is every tool definition of the 33 servers of `tests/fixtures/search-bench`
//! (compact JSON, as `tokens` and `list` count them). Reported: the time to load each
//! tokenizer, the time to count the whole corpus (median of rounds), and that both agree.

use std::time::Instant;

#[path = "common/timing.rs"]
mod timing;
use timing::{median, ms};

use mcp_launch::catalog::TokenCounter;

const ROUNDS: usize = 15;

fn corpus() -> Vec<String> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/search-bench/tools"
    );
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the search-bench fixture") {
        let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("a file");
        let tools: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a tool list");
        texts.extend(tools.iter().map(|t| t.to_string()));
    }
    texts
}

fn main() {
    let texts = corpus();
    let bytes: usize = texts.iter().map(String::len).sum();

    let started = Instant::now();
    let ours = TokenCounter::load().expect("embedded vocabulary");
    let ours_load = started.elapsed();
    let started = Instant::now();
    let theirs = tiktoken_rs::o200k_base().expect("tiktoken-rs o200k_base");
    let theirs_load = started.elapsed();

    let ours_total: usize = texts.iter().map(|t| ours.count(t)).sum();
    let theirs_total: usize = texts.iter().map(|t| theirs.encode_ordinary(t).len()).sum();
    assert_eq!(
        ours_total, theirs_total,
        "the counts differ from tiktoken-rs"
    );

    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let ours_count = median(rounds, || {
        let started = Instant::now();
        std::hint::black_box(texts.iter().map(|t| ours.count(t)).sum::<usize>());
        started.elapsed()
    });
    let theirs_count = median(rounds, || {
        let started = Instant::now();
        let total = texts.iter().map(|t| theirs.encode_ordinary(t).len());
        std::hint::black_box(total.sum::<usize>());
        started.elapsed()
    });

    println!(
        "## Token counting ({} tool definitions, {} KB, {ours_total} tokens)\n",
        texts.len(),
        bytes / 1024
    );
    println!("| | ours | tiktoken-rs |");
    println!("|---|---:|---:|");
    println!(
        "| load | {:.1} ms | {:.1} ms |",
        ms(ours_load),
        ms(theirs_load)
    );
    println!(
        "| count the corpus (median of {rounds}) | {:.2} ms | {:.2} ms |",
        ms(ours_count),
        ms(theirs_count)
    );
}
