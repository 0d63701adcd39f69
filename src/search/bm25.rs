//! BM25F over the fields of a tool, precomputed at build time so a query only walks posting
//! lists and adds numbers.
//!
//! For each term and document the build stores the saturated field-weighted frequency
//! `s = t / (k1 + t)` with `t = Σ_field weight × tf / (1 - b + b × len / avg_len)`, quantized
//! to a byte. A query scores `Σ_concept idf(concept) × max_alternative(weight × mean s)`,
//! times `coverage^coordination` (see [`TermIndex::score`]). Posting lists are sorted by
//! document, stored as gaps; a term's document frequency is its list's length; the
//! dictionary is one sorted string table, searched by bisection (no hash map at load).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::analyze;
use super::doc::ToolDoc;
use super::query::Concept;

/// How much a field counts (`weight`) and how much its length dampens a match (`b`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FieldParams {
    /// Multiplies the field's term frequency.
    pub(crate) weight: f32,
    /// Length normalisation: 0 = none, 1 = full.
    pub(crate) b: f32,
}

/// Field order in [`Tuning::fields`].
pub(crate) const NAME: usize = 0;
pub(crate) const SERVER: usize = 1;
pub(crate) const TITLE: usize = 2;
pub(crate) const DESCRIPTION: usize = 3;
pub(crate) const PARAM_NAMES: usize = 4;
pub(crate) const PARAM_DESCRIPTIONS: usize = 5;

/// The knobs of the ranking. Field weights and `k1` are baked into the stored postings (change
/// them → bump the store's format version); the others act at query time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tuning {
    /// Per field, in the order [`NAME`] … [`PARAM_DESCRIPTIONS`].
    pub(crate) fields: [FieldParams; 6],
    /// BM25 saturation: how fast repeated occurrences stop adding.
    pub(crate) k1: f32,
    /// How much a synonym's match counts relative to the typed word.
    pub(crate) synonym_weight: f32,
    /// Exponent of the coordination factor `(matched concepts / concepts)^c`: how much a tool
    /// that covers the whole query beats one that matches a single rare word. 0 = off.
    pub(crate) coordination: f32,
    /// Hits whose normalised text score is lower are dropped (`search::MIN_SCORE`).
    pub(crate) cutoff: f64,
    /// How much a query word the catalog has never seen weighs in the ideal score, relative
    /// to a word found in one tool only.
    pub(crate) unknown_weight: f32,
}

/// The tuning in use, chosen on `tests/fixtures/search` (see the module doc of `search`). The
/// tool name says most; the description is the reference; parameters help but must not drown
/// it.
pub(crate) const TUNING: Tuning = Tuning {
    fields: [
        field(3.0, 0.3),  // tool name
        field(1.0, 0.0),  // server name
        field(1.0, 0.3),  // title
        field(1.0, 0.75), // description
        field(0.5, 0.5),  // parameter names
        field(0.4, 0.75), // parameter descriptions
    ],
    k1: 1.2,
    synonym_weight: 0.75,
    coordination: 0.5,
    cutoff: super::MIN_SCORE,
    unknown_weight: 0.7,
};

const fn field(weight: f32, b: f32) -> FieldParams {
    FieldParams { weight, b }
}

impl Tuning {
    /// The saturation a term reaches in a "perfect" document: once in the name and once in
    /// the description, both of average length. A query's best possible score uses it.
    fn ideal_saturation(&self) -> f32 {
        let t = self.fields[NAME].weight + self.fields[DESCRIPTION].weight;
        t / (self.k1 + t)
    }

    /// A posting's value, in 0..1, from its per-field term frequencies and field lengths
    /// (relative to the field's average length).
    fn saturation(&self, counts: &[u16; 6], lengths: &[f32; 6]) -> f32 {
        let mut t = 0.0;
        for (f, &count) in counts.iter().enumerate() {
            if count > 0 {
                let p = self.fields[f];
                t += p.weight * f32::from(count) / (1.0 - p.b + p.b * lengths[f]);
            }
        }
        t / (self.k1 + t)
    }
}

/// Many short strings in one allocation: string `i` is `text[ends[i-1]..ends[i]]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StringTable {
    pub(crate) text: String,
    pub(crate) ends: Vec<u32>,
}

impl StringTable {
    /// Number of strings.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// String `i` (empty if out of range or not on character boundaries: a damaged table
    /// never panics).
    pub(crate) fn get(&self, i: usize) -> &str {
        let start = if i == 0 {
            0
        } else {
            self.ends.get(i - 1).copied().unwrap_or(0)
        };
        let end = self.ends.get(i).copied().unwrap_or(0);
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    /// Appends a string.
    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
    }
}

/// The term dictionary and its posting lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TermIndex {
    /// Sorted, distinct terms.
    pub(crate) terms: StringTable,
    /// Term `i`'s postings are `starts[i]..starts[i + 1]` (one more entry than terms).
    pub(crate) starts: Vec<u32>,
    /// Document ids as gaps from the previous posting of the same list (the first absolute).
    pub(crate) doc_gaps: Vec<u32>,
    /// Saturated field-weighted frequency of each posting, times 255. (A term's document
    /// frequency is the length of its posting list.)
    pub(crate) weights: Vec<u8>,
    /// Number of documents indexed.
    pub(crate) doc_count: u32,
}

/// The terms of each field of a document.
pub(crate) fn field_terms(doc: &ToolDoc) -> [Vec<String>; 6] {
    let mut fields: [Vec<String>; 6] = Default::default();
    analyze::terms(&doc.tool, true, &mut fields[NAME]);
    analyze::terms(&doc.server, true, &mut fields[SERVER]);
    if let Some(title) = &doc.title {
        analyze::terms(title, false, &mut fields[TITLE]);
    }
    analyze::terms(&doc.description, false, &mut fields[DESCRIPTION]);
    for param in &doc.params {
        analyze::terms(&param.name, true, &mut fields[PARAM_NAMES]);
        analyze::terms(&param.description, false, &mut fields[PARAM_DESCRIPTIONS]);
    }
    fields
}

/// BM25 inverse document frequency (the non-negative variant).
fn idf(doc_count: u32, df: u32) -> f32 {
    let (n, df) = (doc_count as f32, df as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

impl TermIndex {
    /// Indexes `docs` with the field weights of `tuning`.
    pub(crate) fn build(docs: &[ToolDoc], tuning: &Tuning) -> TermIndex {
        let analyzed: Vec<[Vec<String>; 6]> = docs.iter().map(field_terms).collect();
        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; 6];
        for fields in &analyzed {
            for (f, terms) in fields.iter().enumerate() {
                avg[f] += terms.len() as f32 / n;
            }
        }
        let mut postings: HashMap<&str, Vec<(u32, u8)>> = HashMap::new();
        for (id, fields) in analyzed.iter().enumerate() {
            let mut tf: HashMap<&str, [u16; 6]> = HashMap::new();
            for (f, terms) in fields.iter().enumerate() {
                for term in terms {
                    let counts = tf.entry(term.as_str()).or_default();
                    counts[f] = counts[f].saturating_add(1);
                }
            }
            let mut lengths = [0f32; 6];
            for (f, terms) in fields.iter().enumerate() {
                lengths[f] = terms.len() as f32 / avg[f].max(1e-6);
            }
            for (term, counts) in tf {
                let saturation = tuning.saturation(&counts, &lengths);
                let quantized = (saturation * 255.0).round().clamp(1.0, 255.0) as u8;
                postings
                    .entry(term)
                    .or_default()
                    .push((id as u32, quantized));
            }
        }
        let mut sorted: Vec<(&str, Vec<(u32, u8)>)> = postings.into_iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut index = TermIndex {
            doc_count: docs.len() as u32,
            starts: vec![0],
            ..TermIndex::default()
        };
        for (term, mut list) in sorted {
            list.sort_unstable_by_key(|&(doc, _)| doc);
            index.terms.push(term);
            let mut previous = 0;
            for (doc, weight) in list {
                index.doc_gaps.push(doc - previous);
                index.weights.push(weight);
                previous = doc;
            }
            index.starts.push(index.doc_gaps.len() as u32);
        }
        index
    }

    /// The id of `term`, if indexed.
    pub(crate) fn lookup(&self, term: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.terms.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.terms.get(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The idf an unseen term would have: the highest possible.
    fn unseen_idf(&self) -> f32 {
        idf(self.doc_count, 0)
    }

    /// Number of documents containing term `id`.
    fn doc_frequency(&self, id: usize) -> u32 {
        let start = self.starts.get(id).copied().unwrap_or(0);
        let end = self.starts.get(id + 1).copied().unwrap_or(0);
        end.saturating_sub(start)
    }

    /// Calls `visit(doc, saturation)` for each posting of term `id`.
    fn for_each_posting(&self, id: usize, mut visit: impl FnMut(usize, f32)) {
        let start = self.starts.get(id).copied().unwrap_or(0) as usize;
        let end = self.starts.get(id + 1).copied().unwrap_or(0) as usize;
        let (Some(gaps), Some(weights)) =
            (self.doc_gaps.get(start..end), self.weights.get(start..end))
        else {
            return;
        };
        let mut doc = 0usize;
        for (&gap, &weight) in gaps.iter().zip(weights) {
            doc += gap as usize;
            visit(doc, f32::from(weight) / 255.0);
        }
    }

    /// Scores every document that matches at least one concept. Returns `(doc, raw score)`
    /// pairs and the ideal score: what a perfect document would get for these concepts.
    ///
    /// A concept scores `idf × weight × saturation` of its best alternative in the document
    /// (an alternative of several terms, "pull request", counts only where all occur, with
    /// their mean saturation). The sum over concepts is multiplied by the coordination factor
    /// `(share of concepts matched, synonyms counting their weight)^coordination`.
    ///
    /// The ideal adds, per concept, `idf × best weight × ideal saturation`: a typed word the
    /// index lacks is measured by its synonyms; a concept with no known alternative adds
    /// `unknown_weight × highest idf`, so words the catalog has never seen pull scores down.
    pub(crate) fn score(&self, concepts: &[Concept], tuning: &Tuning) -> (Vec<(usize, f32)>, f32) {
        let mut acc = Accumulator::new(self.doc_count as usize);
        let mut ideal = 0f32;
        let saturation = tuning.ideal_saturation();
        for concept in concepts {
            let known: Vec<(Vec<usize>, f32)> = concept
                .alternatives
                .iter()
                .filter_map(|alt| {
                    let ids: Option<Vec<usize>> =
                        alt.terms.iter().map(|t| self.lookup(t)).collect();
                    ids.map(|ids| (ids, alt.weight))
                })
                .collect();
            if known.is_empty() {
                ideal += tuning.unknown_weight * self.unseen_idf() * saturation;
                continue;
            }
            // The concept's idf is its most common alternative's (df of a phrase: its rarest
            // word), as if the synonyms were one word: a rare typed word with common synonyms
            // ("make" for "create") must not outweigh the rest of the query.
            let concept_df = known
                .iter()
                .map(|(ids, _)| {
                    ids.iter()
                        .map(|&id| self.doc_frequency(id))
                        .min()
                        .unwrap_or(0)
                })
                .max()
                .unwrap_or(0);
            let concept_idf = idf(self.doc_count, concept_df);
            let mut best_weight = 0f32;
            for (ids, weight) in &known {
                best_weight = best_weight.max(*weight);
                let share = concept_idf / ids.len() as f32;
                for &id in ids {
                    self.for_each_posting(id, |doc, s| acc.add_term(doc, s * share));
                }
                acc.end_alternative(ids.len() as u8, *weight);
            }
            let concept_ideal = concept_idf * saturation * best_weight;
            ideal += concept_ideal;
            acc.end_concept();
        }
        let concepts_count = concepts.len().max(1) as f32;
        let scored = acc
            .hit_docs
            .iter()
            .map(|&d| {
                let coverage = (acc.matched[d] / concepts_count).min(1.0);
                (d, acc.total[d] * coverage.powf(tuning.coordination))
            })
            .collect();
        (scored, ideal)
    }
}

/// Dense per-document sums for one query: the current alternative's, the current concept's
/// best, and the total; each with the list of documents touched, so resetting costs only
/// what was used.
struct Accumulator {
    alt_sum: Vec<f32>,
    alt_terms: Vec<u8>,
    alt_docs: Vec<usize>,
    best: Vec<f32>,
    best_weight: Vec<f32>,
    best_docs: Vec<usize>,
    total: Vec<f32>,
    matched: Vec<f32>,
    hit_docs: Vec<usize>,
}

impl Accumulator {
    fn new(n: usize) -> Accumulator {
        Accumulator {
            alt_sum: vec![0.0; n],
            alt_terms: vec![0; n],
            alt_docs: Vec::new(),
            best: vec![0.0; n],
            best_weight: vec![0.0; n],
            best_docs: Vec::new(),
            total: vec![0.0; n],
            matched: vec![0.0; n],
            hit_docs: Vec::new(),
        }
    }

    fn add_term(&mut self, doc: usize, score: f32) {
        let (Some(sum), Some(terms)) = (self.alt_sum.get_mut(doc), self.alt_terms.get_mut(doc))
        else {
            return;
        };
        if *terms == 0 {
            self.alt_docs.push(doc);
        }
        *sum += score;
        *terms = terms.saturating_add(1);
    }

    /// Folds the alternative just scored into each document's best for the concept.
    fn end_alternative(&mut self, term_count: u8, weight: f32) {
        for doc in self.alt_docs.drain(..) {
            let value = self.alt_sum[doc] * weight;
            let is_complete = self.alt_terms[doc] >= term_count;
            self.alt_sum[doc] = 0.0;
            self.alt_terms[doc] = 0;
            if !is_complete {
                continue;
            }
            if self.best[doc] == 0.0 {
                self.best_docs.push(doc);
            }
            self.best[doc] = self.best[doc].max(value);
            self.best_weight[doc] = self.best_weight[doc].max(weight);
        }
    }

    /// Adds each document's best for the concept to its total.
    fn end_concept(&mut self) {
        for doc in self.best_docs.drain(..) {
            if self.total[doc] == 0.0 {
                self.hit_docs.push(doc);
            }
            self.total[doc] += self.best[doc];
            self.matched[doc] += self.best_weight[doc];
            self.best[doc] = 0.0;
            self.best_weight[doc] = 0.0;
        }
    }
}
