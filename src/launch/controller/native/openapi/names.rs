//! Names in the generated document: which tool names can be a path, and the component and
//! operation names derived from them.

use std::collections::HashSet;
use std::fmt;

/// Paths the controller serves under `/<server>/` besides its tools. A tool of that name would
/// be ambiguous, and the front forwards these paths whatever the tool rules say, so such a
/// tool is not served at all.
const SERVER_PAGES: [&str; 3] = ["docs", "redoc", "openapi.json"];

/// Why a tool name cannot be the path segment of `POST /<server>/<tool>` as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameProblem {
    /// The name is empty.
    Empty,
    /// `.` or `..`: clients and proxies resolve them away.
    DotSegment,
    /// A character a path segment cannot hold literally (`/`, whitespace, `%`, `{`, `?`, `#`,
    /// non-ASCII, …). Percent-encoding would make the documented path differ from the name.
    Character(char),
    /// One of the controller's own pages (`docs`, `redoc`, `openapi.json`).
    ServerPage,
}

impl fmt::Display for NameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "the name is empty"),
            Self::DotSegment => write!(f, "`.` and `..` are not path segments"),
            Self::Character('/') => write!(f, "`/` would split it into two path segments"),
            Self::Character(c) if c.is_whitespace() => {
                write!(f, "a URL path cannot hold whitespace unencoded")
            }
            Self::Character(c) => write!(
                f,
                "a URL path segment cannot hold `{}` unencoded",
                c.escape_debug()
            ),
            Self::ServerPage => write!(f, "the server's own page has that path"),
        }
    }
}

/// Whether `name` can be served and documented as the path segment `/<name>`, verbatim:
/// every character must be one RFC 3986 allows literally in a segment (letters, digits,
/// `-._~!$&'()*+,;=:@`) — which also keeps OpenAPI's `{template}` braces out. The native
/// controller's router is meant to apply the same rule, so the document and the routes agree.
pub fn check_tool_name(name: &str) -> Result<(), NameProblem> {
    match name {
        "" => return Err(NameProblem::Empty),
        "." | ".." => return Err(NameProblem::DotSegment),
        _ if SERVER_PAGES.contains(&name) => return Err(NameProblem::ServerPage),
        _ => {}
    }
    match name.chars().find(|c| !is_segment_char(*c)) {
        Some(c) => Err(NameProblem::Character(c)),
        None => Ok(()),
    }
}

/// RFC 3986 `pchar` without `pct-encoded`: unreserved, sub-delims, `:` and `@`.
fn is_segment_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c)
}

/// A tool name as words for a summary: `get-annotated-message` → `Get annotated message`,
/// `readGoogleDoc` → `Read Google Doc`.
pub(super) fn readable(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 4);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        let separator = matches!(c, '_' | '-' | '.' | ' ');
        let camel_break = c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase());
        if separator || camel_break {
            if !words.is_empty() && !words.ends_with(' ') {
                words.push(' ');
            }
            if separator {
                previous = Some(c);
                continue;
            }
        }
        words.push(c);
        previous = Some(c);
    }
    let words = words.trim_end();
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_string(),
    }
}

/// Hands out names that are valid for their kind and unique within one document.
pub(super) struct Unique {
    taken: HashSet<String>,
    keep: fn(char) -> bool,
}

impl Unique {
    /// Component keys: OpenAPI requires `^[a-zA-Z0-9.\-_]+$`.
    pub(super) fn component_names() -> Self {
        Self {
            taken: HashSet::new(),
            keep: |c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'),
        }
    }

    /// OperationIds: `[A-Za-z0-9_]`, as code generators and ChatGPT Actions want them.
    pub(super) fn operation_ids() -> Self {
        Self {
            taken: HashSet::new(),
            keep: |c| c.is_ascii_alphanumeric() || c == '_',
        }
    }

    /// `base` with every other character replaced by `_`, or the first of `…_2`, `…_3`, …
    /// not yet handed out; the name is taken from then on.
    pub(super) fn allocate(&mut self, base: &str) -> String {
        let keep = self.keep;
        let base: String = base
            .chars()
            .map(|c| if keep(c) { c } else { '_' })
            .collect();
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_literal_path_segments() {
        for ok in [
            "echo",
            "get-env",
            "API-post-search",
            "a.b",
            "ns:tool",
            "x@y",
            "a~b",
            "...",
        ] {
            assert_eq!(check_tool_name(ok), Ok(()), "{ok}");
        }
        let problems = [
            ("", NameProblem::Empty),
            ("..", NameProblem::DotSegment),
            ("docs", NameProblem::ServerPage),
            ("openapi.json", NameProblem::ServerPage),
            ("a/b", NameProblem::Character('/')),
            ("read file", NameProblem::Character(' ')),
            ("{id}", NameProblem::Character('{')),
            ("50%", NameProblem::Character('%')),
            ("a?b", NameProblem::Character('?')),
            ("a#b", NameProblem::Character('#')),
            ("héllo", NameProblem::Character('é')),
            ("a\u{7}", NameProblem::Character('\u{7}')),
        ];
        for (name, problem) in problems {
            assert_eq!(check_tool_name(name), Err(problem), "{name}");
        }
        assert_eq!(
            NameProblem::Character('\u{7}').to_string(),
            "a URL path segment cannot hold `\\u{7}` unencoded"
        );
    }

    #[test]
    fn readable_names() {
        assert_eq!(readable("get-annotated-message"), "Get annotated message");
        assert_eq!(readable("read_text_file"), "Read text file");
        assert_eq!(readable("readGoogleDoc"), "Read Google Doc");
        assert_eq!(readable("API-post-search"), "API post search");
        assert_eq!(readable("__x__"), "X");
        assert_eq!(readable("-"), "-");
    }

    #[test]
    fn allocates_sanitised_unique_names() {
        let mut names = Unique::component_names();
        assert_eq!(names.allocate("a:b_input"), "a_b_input");
        assert_eq!(names.allocate("a@b_input"), "a_b_input_2");
        assert_eq!(names.allocate("a_b_input"), "a_b_input_3");
        let mut ids = Unique::operation_ids();
        assert_eq!(ids.allocate("tool_get-env.v2"), "tool_get_env_v2");
    }
}
