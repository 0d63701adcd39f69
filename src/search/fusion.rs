//! How words and meaning make one score.
//!
//! The lexical score (BM25F, normalised against a perfect tool) is sharp when the query uses
//! the tool's own words and silent or confidently wrong when it paraphrases; the cosine
//! between embeddings degrades gracefully but cannot pin a name. Hybrid ranking adds them,
//! weighted toward meaning: `weight · s(cos) + (1 − weight) · lexical`, where `s` stretches the
//! cosines that matter (from `floor`, unrelated text, to `top`, a near restatement) onto 0..1.
//! Names stay pinned above both (see `SearchIndex::rank`). Reciprocal-rank fusion and an even
//! sum were measured worse than meaning alone (issue 15): a rank ignores how confident each
//! side is, and BM25's confident mistakes on paraphrases pull an even sum down.

use super::bm25::Tuning;

/// Which scores rank the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blend {
    Lexical,
    Semantic,
    Hybrid,
}

/// The knobs of semantic and hybrid ranking, chosen on the development split of
/// `tests/fixtures/search-bench` (see `tuning.rs`); the held-out split only checks them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fusion {
    /// Share of the hybrid score that comes from meaning.
    pub(crate) weight: f64,
    /// The cosine that counts as no resemblance at all.
    pub(crate) floor: f64,
    /// The cosine that counts as full resemblance.
    pub(crate) top: f64,
    /// A hybrid ranking whose best hit scores lower is empty: nothing fits.
    pub(crate) answer: f64,
    /// Below the best hit, hybrid hits scoring lower are dropped.
    pub(crate) cutoff: f64,
    /// Semantic-only hits with a lower cosine are dropped.
    pub(crate) semantic_cutoff: f64,
}

/// Chosen on both halves of the development split with all-MiniLM-L6-v2 (`sweep_fusion`):
/// meaning weighs 0.6 (0.5 lost recall@5 on paraphrases, 0.7 lost recall@1); cosines are
/// stretched from 0.05, since MiniLM's cosines for related tool text start low; a best score
/// under 0.2 answers nothing: 33% of the development negatives rejected for 0.6 points of
/// recall@5 (0.25 rejected 50% but cost 3.6 points, most of them paraphrases).
pub(crate) const FUSION: Fusion = Fusion {
    weight: 0.6,
    floor: 0.05,
    top: 0.75,
    answer: 0.2,
    cutoff: 0.1,
    semantic_cutoff: 0.25,
};

impl Fusion {
    /// The cosine stretched onto 0..=1.
    pub(crate) fn resemblance(&self, cosine: f64) -> f64 {
        ((cosine - self.floor) / (self.top - self.floor)).clamp(0.0, 1.0)
    }
}

impl Blend {
    /// A tool's score from its normalised lexical score and, when both sides have
    /// embeddings, its cosine; `None` drops the tool.
    pub(crate) fn score(
        self,
        lexical: f64,
        cosine: Option<f64>,
        tuning: &Tuning,
        fusion: &Fusion,
    ) -> Option<f64> {
        let lexical_hit = || (lexical > 0.0 && lexical >= tuning.cutoff).then_some(lexical);
        match (self, cosine) {
            (Blend::Lexical, _) | (Blend::Hybrid, None) => lexical_hit(),
            (Blend::Semantic, None) => None,
            (Blend::Semantic, Some(cos)) => (cos >= fusion.semantic_cutoff).then_some(cos.max(0.0)),
            (Blend::Hybrid, Some(cos)) => {
                let fused =
                    fusion.weight * fusion.resemblance(cos) + (1.0 - fusion.weight) * lexical;
                (fused >= fusion.cutoff).then_some(fused)
            }
        }
    }
}
