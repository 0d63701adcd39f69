//! Why a search could not run. Each variant carries what the user needs to fix the query or
//! to know that the index must be rebuilt.

/// Why a search (or loading a persisted index) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// A regex or exact pattern longer than [`super::MAX_PATTERN_LEN`] characters.
    #[error("pattern is {len} characters long; the limit is {max}")]
    PatternTooLong {
        /// The pattern's length in characters.
        len: usize,
        /// The limit ([`super::MAX_PATTERN_LEN`]).
        max: usize,
    },
    /// A regex that does not compile (syntax, or too big once compiled).
    #[error("invalid regex `{pattern}`: {message}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// The regex engine's explanation.
        message: String,
    },
    /// A persisted index that is truncated, damaged or from another format version.
    #[error("the search index is unreadable: {0}")]
    CorruptIndex(String),
}

impl SearchError {
    /// A stable snake_case name for the `type` field of the JSON error envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            SearchError::PatternTooLong { .. } => "pattern_too_long",
            SearchError::InvalidPattern { .. } => "invalid_pattern",
            SearchError::CorruptIndex(_) => "corrupt_index",
        }
    }

    /// The next step for the user.
    pub fn help(&self) -> String {
        match self {
            SearchError::PatternTooLong { max, .. } => format!(
                "shorten the pattern to at most {max} characters: match a distinctive part of \
                 the name or description, or use `--method bm25` for a search in plain words"
            ),
            SearchError::InvalidPattern { .. } => "fix the regex syntax (escape `( ) [ ] { } . * \
                 + ? | ^ $ \\` with a backslash to match them literally), or use `--method exact` \
                 to search for a plain substring"
                .to_string(),
            SearchError::CorruptIndex(_) => "the tool index will be rebuilt: run `mcp-launch list \
                 --refresh` to query the servers again"
                .to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stable_and_help_names_a_next_step() {
        let too_long = SearchError::PatternTooLong { len: 300, max: 200 };
        assert_eq!(too_long.kind(), "pattern_too_long");
        assert!(too_long.help().contains("200"));
        assert!(too_long.to_string().contains("300"));
        let invalid = SearchError::InvalidPattern {
            pattern: "(".into(),
            message: "unclosed group".into(),
        };
        assert_eq!(invalid.kind(), "invalid_pattern");
        assert!(invalid.help().contains("--method exact"));
        let corrupt = SearchError::CorruptIndex("bad magic".into());
        assert_eq!(corrupt.kind(), "corrupt_index");
        assert!(corrupt.help().contains("--refresh"));
    }
}
