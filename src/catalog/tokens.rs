//! Token cost of tool definitions, counted with the o200k_base tokenizer (GPT-4o family),
//! whose vocabulary is embedded in the binary: counting works offline.
//!
//! Loading the vocabulary costs ~150 ms and tens of megabytes, so it happens once per process,
//! off the async threads, and never on paths that do not show token counts (`call`).

use serde_json::Value;
use tiktoken_rs::CoreBPE;

/// Counts tokens of tool definitions.
pub struct TokenCounter {
    bpe: CoreBPE,
}

impl TokenCounter {
    /// Loads the o200k_base vocabulary (blocking; ~150 ms).
    pub fn load() -> Option<Self> {
        match tiktoken_rs::o200k_base() {
            Ok(bpe) => Some(Self { bpe }),
            Err(e) => {
                tracing::warn!(error = %e, "could not load the o200k_base tokenizer; token counts omitted");
                None
            }
        }
    }

    /// Tokens of `text`.
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    /// Tokens a tool definition costs in a model's context: its compact JSON as the server sent
    /// it (name, description, input schema and any other fields), which is what clients forward.
    pub fn count_tool(&self, tool: &Value) -> usize {
        self.count(&tool.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_reference_tokenizer() {
        let counter = TokenCounter::load().expect("vocabulary is embedded");
        // Reference values from Python tiktoken's o200k_base.
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count(""), 0);
        let tool = serde_json::json!({"name": "echo"});
        assert_eq!(
            counter.count_tool(&tool),
            counter.count(r#"{"name":"echo"}"#)
        );
    }
}
