//! The `regex` and `exact` methods: a pattern tested against each tool's name (or
//! `server/tool`, when the match reaches into the tool's name), then its title and
//! description, then its parameters. Where it first matches sets the tier; tiers rank in
//! that order, shorter names first within a tier (a short name matched is a closer match).
//!
//! Both are case-insensitive (a regex may turn that off with `(?-i)`); `exact` is a literal
//! substring. Patterns are capped at [`MAX_PATTERN_LEN`] characters and the compiled regex at
//! [`COMPILED_SIZE_LIMIT`] bytes, so no query can make a search slow or large.

use regex::{Regex, RegexBuilder};

use super::doc::ToolDoc;
use super::error::SearchError;
use super::{Hit, MAX_PATTERN_LEN};

/// Upper bound on a compiled regex, in bytes (the regex crate's `size_limit`). Far above what
/// any 200-character pattern needs unless it nests counted repetitions.
pub(crate) const COMPILED_SIZE_LIMIT: usize = 1 << 20;

/// Score of a tool whose whole name equals an `exact` query.
pub(crate) const WHOLE_NAME: f64 = 1.0;
/// Score of a tool whose name matches the pattern (for `exact`: contains it).
pub(crate) const NAME: f64 = 0.9;
/// Score of a tool whose title or description matches.
pub(crate) const DESCRIPTION: f64 = 0.6;
/// Score of a tool where only a parameter's name or description matches.
pub(crate) const PARAMETER: f64 = 0.3;

/// Whether a pattern is a regex or a literal substring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// A regex (case-insensitive unless it says otherwise).
    Regex,
    /// A case-insensitive literal substring.
    Literal,
}

/// Compiles `pattern`, enforcing the length and size limits.
pub(crate) fn compile(pattern: &str, kind: Pattern) -> Result<Regex, SearchError> {
    let len = pattern.chars().count();
    if len > MAX_PATTERN_LEN {
        return Err(SearchError::PatternTooLong {
            len,
            max: MAX_PATTERN_LEN,
        });
    }
    let source = match kind {
        Pattern::Regex => pattern.to_string(),
        Pattern::Literal => regex::escape(pattern),
    };
    RegexBuilder::new(&source)
        .case_insensitive(true)
        .size_limit(COMPILED_SIZE_LIMIT)
        .build()
        .map_err(|e| SearchError::InvalidPattern {
            pattern: pattern.to_string(),
            message: e.to_string(),
        })
}

/// Finds the documents `re` matches, best tier first, at most `limit`.
pub(crate) fn find(
    docs: &[ToolDoc],
    re: &Regex,
    literal: Option<&str>,
    server: Option<&str>,
    limit: usize,
) -> Vec<Hit> {
    let whole = literal.map(str::to_lowercase);
    let mut hits: Vec<(Hit, usize)> = Vec::new();
    let mut qualified = String::new();
    for (id, doc) in docs.iter().enumerate() {
        if server.is_some_and(|s| s != doc.server) {
            continue;
        }
        qualified.clear();
        qualified.push_str(&doc.server);
        qualified.push('/');
        qualified.push_str(&doc.tool);
        let tool_start = doc.server.len() + 1;
        // `server/tool` counts when the match reaches into the tool's name (`github/create`),
        // not when it lies in the server's alone (`files` would match every tool of `files`).
        let spans_both = || {
            re.find_iter(&qualified)
                .any(|m| m.start() < tool_start && m.end() > tool_start)
        };
        let score = if re.is_match(&doc.tool) || spans_both() {
            let is_whole = whole
                .as_deref()
                .is_some_and(|w| doc.tool.to_lowercase() == w || qualified.to_lowercase() == w);
            if is_whole {
                WHOLE_NAME
            } else {
                NAME
            }
        } else if re.is_match(&doc.description)
            || doc.title.as_deref().is_some_and(|t| re.is_match(t))
        {
            DESCRIPTION
        } else if doc
            .params
            .iter()
            .any(|p| re.is_match(&p.name) || re.is_match(&p.description))
        {
            PARAMETER
        } else {
            continue;
        };
        hits.push((
            Hit {
                doc: id,
                score,
                parts: Default::default(),
            },
            doc.tool.chars().count(),
        ));
    }
    hits.sort_by(|(a, a_len), (b, b_len)| {
        b.score
            .total_cmp(&a.score)
            .then(a_len.cmp(b_len))
            .then(a.doc.cmp(&b.doc))
    });
    hits.into_iter().take(limit).map(|(hit, _)| hit).collect()
}
