//! Text → terms: the one analyzer used for documents, queries, synonyms and name keys, so that
//! what is indexed and what is asked always meet.
//!
//! - Identifier-aware splitting: a chunk (a run of letters, digits, `_` and `-`) splits at
//!   `_`/`-`, at camelCase humps (`getFileContents` → get file contents, `HTTPServer` → http
//!   server) and between letters and digits (`contents2` → contents 2). A short mixed chunk
//!   (`s3`, `ec2`, `k8s`, ≤ 4 characters) is also kept whole.
//! - Lower-casing, then a small, predictable suffix stemmer ([`stem`]).
//! - Stopwords ([`is_stopword`]) are dropped from documents and queries alike.

/// Words that carry no meaning for finding a tool ("how do I …", "a", "the").
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "by",
    "called", "can", "could", "did", "do", "does", "e", "eg", "etc", "for", "from", "g", "give",
    "has", "have", "help", "how", "i", "ie", "if", "in", "into", "is", "it", "its", "just", "let",
    "lets", "like", "me", "my", "named", "need", "not", "of", "on", "or", "our", "please", "s",
    "should", "so", "some", "t", "that", "the", "their", "them", "then", "there", "these", "this",
    "those", "titled", "to", "tool", "tools", "us", "use", "using", "via", "want", "was", "we",
    "were", "what", "when", "where", "which", "who", "will", "with", "would", "you", "your",
];

/// Irregular forms the suffix rules cannot reach, mapped to their base word before stemming.
const IRREGULAR: &[(&str, &str)] = &[
    ("children", "child"),
    ("found", "find"),
    ("got", "get"),
    ("indexes", "index"),
    ("indices", "index"),
    ("made", "make"),
    ("people", "person"),
    ("ran", "run"),
    ("sent", "send"),
    ("written", "write"),
    ("wrote", "write"),
];

/// Words that end like an inflection but are not one; never stemmed.
const UNSTEMMED: &[&str] = &["alias", "canvas", "https", "news", "series", "species"];

/// Whether `word` (lower-case) is a stopword.
pub(crate) fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Splits `text` into chunks: maximal runs of alphanumerics, `_` and `-` (trimmed of `_`/`-`).
pub(crate) fn chunks(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .map(|chunk| chunk.trim_matches(|c| c == '_' || c == '-'))
        .filter(|chunk| !chunk.is_empty())
}

/// Splits one chunk into its words, original case: at `_`/`-`, camelCase humps and
/// letter/digit boundaries.
pub(crate) fn words(chunk: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for part in chunk.split(['_', '-']).filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = part.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (at, cur) = chars[i];
            let prev = chars[i - 1].1;
            let next = chars.get(i + 1).map(|&(_, c)| c);
            let hump = prev.is_lowercase() && cur.is_uppercase();
            let acronym_end =
                prev.is_uppercase() && cur.is_uppercase() && next.is_some_and(|n| n.is_lowercase());
            let digit_edge = prev.is_numeric() != cur.is_numeric();
            if hump || acronym_end || digit_edge {
                out.push(&part[start..at]);
                start = at;
            }
        }
        out.push(&part[start..]);
    }
    out
}

/// The terms of a piece of text, in order: words lower-cased and stemmed, stopwords dropped.
/// A chunk of several words also yields itself, lower-cased and unstemmed, after its words —
/// always with `keep_whole` (names), else only if it is written as an identifier (`repo_path`,
/// `PromQL`; not `line-based`), so that a query typed in one piece finds it.
pub(crate) fn terms(text: &str, keep_whole: bool, out: &mut Vec<String>) {
    for chunk in chunks(text) {
        let parts = words(chunk);
        for part in &parts {
            let lower = part.to_lowercase();
            if !is_stopword(&lower) {
                out.push(stem(&lower));
            }
        }
        for segment in chunk.split(['_', '-']) {
            let is_mixed_short = segment.chars().count() <= 4
                && segment.chars().any(char::is_alphabetic)
                && segment.chars().any(char::is_numeric);
            if is_mixed_short {
                out.push(segment.to_lowercase());
            }
        }
        let is_identifier = chunk.contains('_')
            || chunk
                .chars()
                .zip(chunk.chars().skip(1))
                .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        if parts.len() > 1 && (keep_whole || is_identifier) {
            out.push(chunk.to_lowercase());
        }
    }
}

/// A name's key for exact and prefix matching: its words, lower-cased, unstemmed, joined by
/// single spaces (`getFileContents`, `get_file_contents` and `get file contents` all give
/// `get file contents`). Splits at any character that is not a letter or digit.
pub(crate) fn name_key(text: &str) -> String {
    let mut key = String::with_capacity(text.len());
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        for word in words(chunk) {
            if !key.is_empty() {
                key.push(' ');
            }
            key.extend(word.chars().flat_map(char::to_lowercase));
        }
    }
    key
}

/// Reduces a lower-case word to its stem with a few ordered, predictable rules. Only ASCII
/// words of four letters or more are touched; the result is the same for a word and its
/// inflections (`creates`, `created`, `creating` → `creat`; `queries` → `query`;
/// `branches` → `branch`; `committed` → `commit`).
///
/// 0. A few words that only look inflected ([`UNSTEMMED`]: `news`, `alias`) are kept.
/// 1. Irregular forms ([`IRREGULAR`]) are replaced by their base word.
/// 2. Plurals: `-ies` → `-y`, `-sses` → `-ss`, `-xes`/`-ches`/`-shes`/`-zes` → drop `es`,
///    else a final `s` is dropped (not after `s`, `u` or `i`: `class`, `status`, `analysis`).
/// 3. One verb suffix, if at least three letters with a vowel remain: `-ing`, `-ied` → `-y`,
///    `-ed`, and `-tion` → `-t` after a vowel (`creation` → `creat`, but `production` stays);
///    a doubled final consonant left behind is undoubled (`running` → `run`), except `l`,
///    `s`, `z` and stems of three letters (`added`).
/// 4. A final `e` is dropped from words of four letters or more (`create` → `creat`,
///    `file` → `fil`), so the bare verb meets its inflections.
pub(crate) fn stem(word: &str) -> String {
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) || UNSTEMMED.contains(&word)
    {
        return word.to_string();
    }
    let mut w = match IRREGULAR.iter().find(|(from, _)| *from == word) {
        Some((_, to)) => (*to).to_string(),
        None => word.to_string(),
    };
    strip_plural(&mut w);
    strip_verb_suffix(&mut w);
    if w.len() >= 4 && w.ends_with('e') {
        w.pop();
    }
    w
}

fn strip_plural(w: &mut String) {
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if ["sses", "xes", "ches", "shes", "zes"]
        .iter()
        .any(|suffix| w.ends_with(suffix))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !["ss", "us", "is"].iter().any(|s| w.ends_with(s)) {
        w.pop();
    }
}

fn strip_verb_suffix(w: &mut String) {
    let has_vowel = |s: &str| s.bytes().any(|b| b"aeiouy".contains(&b));
    for (suffix, replacement) in [("ing", ""), ("ied", "y"), ("ed", ""), ("tion", "t")] {
        let Some(stem) = w.strip_suffix(suffix) else {
            continue;
        };
        let min = if suffix == "tion" { 3 } else { 2 };
        let after_vowel = stem.ends_with(['a', 'e', 'i', 'o', 'u']);
        if stem.len() <= min || !has_vowel(stem) || (suffix == "tion" && !after_vowel) {
            return;
        }
        let mut stem = format!("{stem}{replacement}");
        let bytes = stem.as_bytes();
        let n = bytes.len();
        if replacement.is_empty()
            && n > 3
            && bytes[n - 1] == bytes[n - 2]
            && !b"aeioulsz".contains(&bytes[n - 1])
        {
            stem.pop();
        }
        *w = stem;
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_terms(text: &str, keep_whole: bool) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, keep_whole, &mut out);
        out
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("the") && is_stopword("how") && !is_stopword("get"));
    }

    #[test]
    fn splits_identifiers_of_every_convention() {
        assert_eq!(words("getFileContents2"), ["get", "File", "Contents", "2"]);
        assert_eq!(words("get_file_contents"), ["get", "file", "contents"]);
        assert_eq!(words("get-resource-links"), ["get", "resource", "links"]);
        assert_eq!(words("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(words("parseJSON"), ["parse", "JSON"]);
        assert_eq!(words("API-post-search"), ["API", "post", "search"]);
        assert_eq!(words("v2"), ["v", "2"]);
    }

    #[test]
    fn terms_keep_whole_identifiers_and_short_mixed_chunks() {
        assert_eq!(
            all_terms("getFileContents2", false),
            ["get", "fil", "content", "2", "getfilecontents2"]
        );
        assert_eq!(all_terms("line-based edits", false), ["lin", "bas", "edit"]);
        assert_eq!(all_terms("repo_path", true), ["repo", "path", "repo_path"]);
        assert_eq!(
            all_terms("the aws-s3 bucket", true),
            ["aws", "3", "s3", "aws-s3", "bucket"]
        );
        assert_eq!(all_terms("How do I use it?", false), Vec::<String>::new());
    }

    #[test]
    fn stems_plurals_and_verb_forms_to_one_stem() {
        for group in [
            &["create", "creates", "created", "creating", "creation"][..],
            &["query", "queries", "queried"],
            &["branch", "branches"],
            &["commit", "commits", "committed", "committing"],
            &["file", "files", "filing"],
            &["run", "runs", "running"],
            &["database", "databases"],
            &["process", "processes"],
            &["status", "statuses"],
            &["delete", "deleted", "deletion", "deleting"],
            &["send", "sent", "sending"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| s == &stems[0]),
                "{group:?} → {stems:?}"
            );
        }
        assert_eq!(stem("added"), "add");
        assert_eq!(stem("analysis"), "analysis");
        assert_eq!(stem("string"), "string");
        assert_eq!(stem("need"), "need");
        assert_eq!(stem("Über"), "Über");
        assert_eq!(stem("news"), "news");
        assert_eq!(stem("production"), "production");
        assert_eq!(stem("execution"), stem("execute"));
    }

    #[test]
    fn name_keys_ignore_the_naming_convention() {
        assert_eq!(name_key("getFileContents"), "get file contents");
        assert_eq!(name_key("get_file_contents"), "get file contents");
        assert_eq!(name_key("  Get File   contents "), "get file contents");
        assert_eq!(name_key("github__create_issue"), "github create issue");
        assert_eq!(name_key("github/create_issue"), "github create issue");
        assert_eq!(name_key("time.convert_time"), "time convert time");
    }
}
