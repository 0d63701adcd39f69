//! A BM25 query, analyzed: a list of concepts, each a set of weighted alternatives. The words
//! the user typed are one alternative (weight 1); their synonyms are others (a lower weight).
//! A document scores, per concept, its best alternative — so a tool that says both "delete"
//! and "remove" is not counted twice.

use super::analyze;
use super::synonyms::Thesaurus;

/// One way to satisfy a concept: all of `terms` must occur (their saturations are averaged),
/// times `weight`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Alternative {
    /// Index terms (stemmed, no stopwords).
    pub(crate) terms: Vec<String>,
    /// 1 for what the user typed, less for a synonym.
    pub(crate) weight: f32,
}

/// One thing the query asks for: a word, a phrase, or a whole identifier.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Concept {
    /// The ways to match it; the first is what the user typed (if it has content words).
    pub(crate) alternatives: Vec<Alternative>,
}

/// File extensions that mark a query word as a file name (`config.yaml` → "file").
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cfg", "conf", "cpp", "css", "csv", "docx", "env", "gif", "go", "gz", "h", "html", "ini",
    "ipynb", "java", "jpeg", "jpg", "js", "json", "jsx", "lock", "log", "md", "mp3", "mp4", "pdf",
    "php", "png", "pptx", "py", "rb", "rs", "sh", "sql", "svg", "tar", "toml", "ts", "tsx", "tsv",
    "txt", "wav", "webp", "xlsx", "xml", "yaml", "yml", "zip",
];

/// Top-level domains that mark a query word as a web address (`example.com` → "url").
const WEB_DOMAINS: &[&str] = &[
    "ai", "app", "co", "com", "dev", "edu", "gov", "info", "io", "me", "net", "org",
];

/// A query word: its stem, and whether it is a stopword (kept for phrase matching only).
struct Word {
    stem: String,
    is_stop: bool,
}

/// Analyzes a query; synonyms get `synonym_weight`. `is_known` tells whether a term is in the
/// index: whole identifiers and short mixed chunks (`repo_path`, `s3`) become concepts only if
/// the index knows them, so an unknown spelling does not count against every document.
pub(crate) fn concepts(
    text: &str,
    synonym_weight: f32,
    is_known: impl Fn(&str) -> bool,
) -> Vec<Concept> {
    let text = rewrite_literals(text);
    let mut words = Vec::new();
    let mut extras = Vec::new();
    for chunk in analyze::chunks(&text) {
        let parts = analyze::words(chunk);
        for part in &parts {
            let lower = part.to_lowercase();
            let is_number = lower.chars().all(|c| c.is_ascii_digit());
            words.push(Word {
                is_stop: analyze::is_stopword(&lower) || is_number,
                stem: analyze::stem(&lower),
            });
        }
        let mut whole = Vec::new();
        analyze::terms(chunk, true, &mut whole);
        let stems: Vec<&str> = words.iter().map(|w| w.stem.as_str()).collect();
        extras.extend(
            whole
                .into_iter()
                .filter(|t| !stems.contains(&t.as_str()) && is_known(t)),
        );
    }
    let thesaurus = Thesaurus::get();
    let stems: Vec<String> = words.iter().map(|w| w.stem.clone()).collect();
    let mut out: Vec<Concept> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (len, alternatives) = match thesaurus.longest_match(&stems[i..]) {
            Some((len, ids)) => {
                let typed = own_terms(&words[i..i + len]);
                let mut alternatives = Vec::new();
                if !typed.is_empty() {
                    alternatives.push(Alternative {
                        terms: typed,
                        weight: 1.0,
                    });
                }
                alternatives.extend(thesaurus.synonyms_of(ids).into_iter().map(|terms| {
                    Alternative {
                        terms: terms.to_vec(),
                        weight: synonym_weight,
                    }
                }));
                (len, alternatives)
            }
            None => (1, single(own_terms(&words[i..i + 1]))),
        };
        i += len;
        let is_repeat = out
            .iter()
            .any(|c| c.alternatives.first() == alternatives.first());
        if !alternatives.is_empty() && !is_repeat {
            out.push(Concept { alternatives });
        }
    }
    for extra in extras {
        let alternatives = single(vec![extra]);
        if !out.iter().any(|c| c.alternatives == alternatives) {
            out.push(Concept { alternatives });
        }
    }
    out
}

/// Replaces the values in a query by what they are: a file name or path (`config.yaml`,
/// `src/main.rs`) by "file", a web address (`example.com`, `https://…`) by "url". A value's
/// own words (`config`, `yaml`) say nothing of the tool wanted and would outweigh those that do.
fn rewrite_literals(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for token in text.split_whitespace() {
        let core = token
            .trim_matches(|c: char| ",;:!?()[]{}<>\"'`".contains(c))
            .trim_end_matches('.');
        let replacement = if is_web_address(core) {
            "url"
        } else if is_file_name(core) {
            "file"
        } else {
            token
        };
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(replacement);
    }
    out
}

fn is_web_address(word: &str) -> bool {
    let lower = word.to_lowercase();
    if ["http://", "https://", "www."]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return true;
    }
    let host = lower.split('/').next().unwrap_or("");
    match host.rsplit_once('.') {
        Some((name, tld)) => !name.is_empty() && WEB_DOMAINS.contains(&tld),
        None => false,
    }
}

fn is_file_name(word: &str) -> bool {
    if ["/", "./", "../", "~/"].iter().any(|p| word.starts_with(p)) && word.len() > 2 {
        return true;
    }
    let last = word.rsplit('/').next().unwrap_or("");
    match last.rsplit_once('.') {
        Some((name, ext)) => {
            !name.is_empty() && FILE_EXTENSIONS.contains(&ext.to_lowercase().as_str())
        }
        None => false,
    }
}

/// The content words of a span, as index terms.
fn own_terms(words: &[Word]) -> Vec<String> {
    words
        .iter()
        .filter(|w| !w.is_stop)
        .map(|w| w.stem.clone())
        .collect()
}

/// One alternative of weight 1, or none if there are no terms.
fn single(terms: Vec<String>) -> Vec<Alternative> {
    if terms.is_empty() {
        Vec::new()
    } else {
        vec![Alternative { terms, weight: 1.0 }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(concepts: &[Concept]) -> Vec<String> {
        concepts
            .iter()
            .map(|c| c.alternatives[0].terms.join(" "))
            .collect()
    }

    #[test]
    fn drops_stopwords_and_keeps_content_words() {
        let c = concepts("how do I delete a file?", 0.6, |_| false);
        assert_eq!(typed(&c), ["delet", "fil"]);
        let delete = &c[0].alternatives;
        assert!(delete
            .iter()
            .any(|a| a.terms == ["remov"] && a.weight < 1.0));
    }

    #[test]
    fn phrases_become_one_concept() {
        let c = concepts("open a pull request", 0.6, |_| false);
        assert_eq!(typed(&c), ["open", "pull request"]);
        assert!(c[1].alternatives.iter().any(|a| a.terms == ["pr"]));
    }

    #[test]
    fn known_identifiers_are_extra_concepts() {
        let c = concepts("repo_path of git_status", 0.6, |t| t == "repo_path");
        assert_eq!(typed(&c), ["repo", "path", "git", "status", "repo_path"]);
    }

    #[test]
    fn file_names_urls_and_numbers_are_values_not_words() {
        let c = concepts(
            "read config.yaml and open https://example.com/x for issue 42",
            0.6,
            |_| false,
        );
        assert_eq!(typed(&c), ["read", "fil", "open", "url", "issu"]);
        let c = concepts("edit src/main.rs on example.com", 0.6, |_| false);
        assert_eq!(typed(&c), ["edit", "fil", "url"]);
    }

    #[test]
    fn repeated_words_count_once() {
        let c = concepts("step by step", 0.6, |_| false);
        assert_eq!(typed(&c), ["step"]);
    }

    #[test]
    fn a_stopword_phrase_keeps_only_its_synonyms() {
        let c = concepts("who am I", 0.6, |_| false);
        assert_eq!(c.len(), 1);
        assert!(c[0].alternatives.iter().all(|a| a.weight < 1.0));
        assert!(c[0]
            .alternatives
            .iter()
            .any(|a| a.terms == ["authenticat", "user"]));
    }
}
