//! The baseline we measure against: plain Okapi BM25 as mcp-launchpad does it — one bag of
//! words per tool from server name, tool name and description, lower-cased and split at
//! anything that is not `a-z0-9` (so snake_case splits but camelCase does not), no stemming,
//! no stopwords, no synonyms, no parameters; `k1` 1.5, `b` 0.75, negative idf floored at a
//! quarter of the average idf; every tool with a positive score is returned.
//!
//! For the evaluation only (`benches/search.rs`, the fixture tests); never used by the CLI.

use std::collections::HashMap;

use super::doc::ToolDoc;
use super::Hit;

const K1: f64 = 1.5;
const B: f64 = 0.75;
const EPSILON: f64 = 0.25;

/// Plain BM25 over name and description.
#[derive(Debug, Clone)]
pub struct BaselineIndex {
    /// Term → (doc, term frequency) postings.
    postings: HashMap<String, Vec<(usize, u32)>>,
    /// Term → idf.
    idf: HashMap<String, f64>,
    /// Each document's length in tokens.
    lengths: Vec<f64>,
    average_length: f64,
}

/// Lower-cases and splits at every character outside `a-z0-9`.
pub fn tokenize(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

impl BaselineIndex {
    /// Indexes `docs` (hits index into the same slice).
    pub fn build(docs: &[ToolDoc]) -> BaselineIndex {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(docs.len());
        for (id, doc) in docs.iter().enumerate() {
            let tokens = tokenize(&format!("{} {} {}", doc.server, doc.tool, doc.description));
            lengths.push(tokens.len() as f64);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for token in tokens {
                *tf.entry(token).or_default() += 1;
            }
            for (term, count) in tf {
                postings.entry(term).or_default().push((id, count));
            }
        }
        let n = docs.len() as f64;
        let mut idf: HashMap<String, f64> = postings
            .iter()
            .map(|(term, list)| {
                let df = list.len() as f64;
                (term.clone(), ((n - df + 0.5) / (df + 0.5)).ln())
            })
            .collect();
        let average_idf = idf.values().sum::<f64>() / idf.len().max(1) as f64;
        for value in idf.values_mut() {
            if *value < 0.0 {
                *value = EPSILON * average_idf;
            }
        }
        let average_length = lengths.iter().sum::<f64>() / n.max(1.0);
        BaselineIndex {
            postings,
            idf,
            lengths,
            average_length,
        }
    }

    /// The best `limit` tools for `query`, raw BM25 scores (not normalised).
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for token in tokenize(query) {
            let (Some(list), Some(&idf)) = (self.postings.get(&token), self.idf.get(&token)) else {
                continue;
            };
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let norm = 1.0 - B + B * self.lengths[doc] / self.average_length.max(1e-9);
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
        }
        let mut hits: Vec<Hit> = scores
            .into_iter()
            .filter(|&(_, score)| score > 0.0)
            .map(|(doc, score)| Hit {
                doc,
                score,
                parts: Default::default(),
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        hits.truncate(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_snake_case_but_not_camel_case() {
        assert_eq!(
            tokenize("get_file getFileContents"),
            ["get", "file", "getfilecontents"]
        );
    }
}
