//! Every target's corpus replayed on stable Rust: the smoke of `cargo test` (the long runs are
//! `scripts/fuzz.sh`, under libFuzzer).

use std::path::{Path, PathBuf};

use super::TARGETS;

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("corpus")
        .join(target)
}

#[test]
fn every_target_has_a_fuzz_target_file_and_a_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (target, _) in TARGETS {
        let file = root.join("fuzz_targets").join(format!("{target}.rs"));
        assert!(file.is_file(), "{} is missing", file.display());
        let inputs = std::fs::read_dir(corpus(target)).map_or(0, |dir| dir.count());
        assert!(inputs > 0, "fuzz/corpus/{target}/ is empty");
    }
}

#[test]
fn every_corpus_input_runs_clean() {
    let mut failed = Vec::new();
    for (target, body) in TARGETS {
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(corpus(target))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        inputs.sort();
        for input in inputs {
            let data = std::fs::read(&input).expect("read a corpus input");
            if std::panic::catch_unwind(|| body(&data)).is_err() {
                failed.push(format!("{target} fails on {}", input.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
