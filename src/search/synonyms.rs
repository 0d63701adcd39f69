//! The vocabulary of tools: groups of words and phrases that mean the same thing to someone
//! looking for a tool ("remove" / "delete" / "rm", "PR" / "pull request"). Applied to queries
//! only, with a down-weight (the tuning's `synonym_weight`), so a document that uses the asked
//! word still beats one that uses a synonym. Phrases go through the same analyzer as
//! everything else (stemmed), and may contain stopwords ("who am I", "go to").

use std::collections::HashMap;
use std::sync::OnceLock;

use super::analyze;

/// The longest phrase, in words, that [`Thesaurus::longest_match`] looks for.
pub(crate) const MAX_PHRASE_WORDS: usize = 4;

/// Groups of interchangeable words and phrases. A word may sit in several groups ("open" is
/// both "create" and "read"; "add" is both "create" and git's "stage").
const GROUPS: &[&[&str]] = &[
    &[
        "remove", "delete", "rm", "erase", "destroy", "purge", "trash", "wipe", "discard", "drop",
    ],
    &["cancel", "abort", "delete"],
    &[
        "find", "search", "lookup", "look up", "query", "locate", "grep", "seek",
    ],
    &["list", "ls", "enumerate", "browse", "show"],
    &[
        "get", "fetch", "read", "retrieve", "show", "view", "load", "see", "display", "open",
    ],
    &[
        "create", "make", "new", "add", "insert", "open", "spin up", "generate", "write",
    ],
    &[
        "update", "edit", "modify", "change", "patch", "alter", "amend", "set",
    ],
    &["pr", "pull request", "merge request", "mr"],
    &["repo", "repository"],
    &["dir", "folder", "directory"],
    &["file", "document", "doc"],
    &["issue", "ticket", "bug"],
    &["message", "msg", "dm", "direct message"],
    &["send", "post", "publish", "deliver"],
    &["email", "mail", "inbox"],
    &[
        "run", "execute", "exec", "invoke", "trigger", "evaluate", "eval",
    ],
    &[
        "stop",
        "kill",
        "terminate",
        "halt",
        "shut down",
        "shutdown",
        "turn off",
    ],
    &["start", "launch", "boot", "resume", "turn on"],
    &["restart", "rerun", "retry", "run again"],
    &["image", "picture", "photo", "img", "pic"],
    &["screenshot", "screen capture", "screen shot", "capture"],
    &[
        "user",
        "person",
        "member",
        "colleague",
        "teammate",
        "coworker",
    ],
    &[
        "who am i",
        "me",
        "whoami",
        "authenticated user",
        "current user",
    ],
    &["comment", "note", "remark", "reply"],
    &["url", "link", "uri"],
    &["website", "site", "web page", "webpage", "page", "url"],
    &["navigate", "go to", "goto", "visit", "open"],
    &["click", "press", "tap", "hit"],
    &["type", "fill", "enter", "input"],
    &["log", "logs", "output", "trace"],
    &["history", "log"],
    &["deploy", "deployment", "release", "ship", "rollout"],
    &["event", "meeting", "appointment", "invite", "invitation"],
    &["calendar", "agenda", "schedule"],
    &["weather", "forecast", "rain", "temperature"],
    &["customer", "client", "buyer", "purchaser"],
    &["payment", "charge", "transaction"],
    &["refund", "reimburse"],
    &["invoice", "bill"],
    &["subscription", "plan"],
    &["database", "db"],
    &["kubernetes", "k8s", "kube", "cluster"],
    &["namespace", "ns"],
    &["container", "docker"],
    &["vm", "virtual machine", "instance", "ec2"],
    &["spreadsheet", "sheet", "excel"],
    &["timezone", "time zone", "tz"],
    &["sum", "total", "plus"],
    &[
        "env",
        "environment",
        "environment variable",
        "envvar",
        "env var",
    ],
    &["diff", "difference", "compare"],
    &["undo", "revert", "reset", "rollback", "unstage"],
    &["stage", "add"],
    &["checkout", "switch"],
    &["move", "rename", "mv", "relocate"],
    &["copy", "cp", "duplicate", "clone", "fork"],
    &["write", "save", "store", "put", "persist"],
    &["upload", "attach"],
    &["download", "export"],
    &["notify", "alert", "notification"],
    &["star", "upvote", "bookmark"],
    &["task", "todo", "to-do", "chore"],
    &["song", "track", "music"],
    &["memory", "ram", "remember", "memorize"],
    // Knowledge-graph servers speak of entities and observations; people speak of facts.
    &[
        "remember", "store", "save", "record", "memorize", "keep", "add",
    ],
    &[
        "fact",
        "observation",
        "note",
        "knowledge",
        "info",
        "information",
    ],
    &["entity", "person", "people", "node"],
    &["process", "program", "pid"],
    &["terminal", "shell", "command", "console", "bash", "cli"],
    &["language", "lang", "locale"],
    &["documentation", "docs", "manual", "guide", "reference"],
    &["secret", "password", "credential", "token"],
    &["vulnerability", "vulnerable", "cve", "dependency"],
    &["error", "exception", "crash", "failure", "fail"],
    &["latitude", "lat"],
    &["longitude", "lng"],
    &["elevation", "altitude"],
    &["discount", "coupon", "promo", "voucher"],
    &["chargeback", "dispute"],
    &["stock", "inventory"],
    &["order", "purchase"],
    &["lead", "contact", "prospect"],
    &["video", "clip", "movie"],
    &["transcript", "captions", "subtitles"],
    &["paper", "publication", "article"],
    &["encyclopedia", "wikipedia"],
    &["wiki", "confluence", "knowledge base"],
    &["decline", "reject", "refuse", "accept", "respond", "rsvp"],
    &["compose", "draft"],
    &["finish", "complete", "done", "close", "resolve"],
    &["generate", "render", "draw", "produce"],
    &["detect", "identify", "recognize"],
    &["echo", "repeat"],
    &["reaction", "emoji"],
    &["cost", "spend", "spending", "expense", "billing"],
    &["slow", "performance", "latency"],
    &["think", "thought", "reason", "reasoning"],
    &["approve", "review"],
    &["sms", "text message"],
    &["restaurant", "place", "venue"],
    &["drive", "travel", "commute", "route"],
    &["near", "nearby", "local"],
    &[
        "current",
        "now",
        "right now",
        "currently",
        "latest",
        "newest",
        "recent",
    ],
    &["outage", "incident", "downtime"],
    &["blob", "object"],
];

/// One phrase of the table, analyzed.
#[derive(Debug)]
pub(crate) struct Phrase {
    /// Its terms with stopwords kept: what a query must contain to match the phrase.
    pub(crate) words: Vec<String>,
    /// Its terms without stopwords: what is looked up in the index.
    pub(crate) terms: Vec<String>,
}

/// The analyzed table: phrases, and for each matchable key the groups it belongs to.
#[derive(Debug)]
pub(crate) struct Thesaurus {
    phrases: Vec<Phrase>,
    /// Group index → indices into `phrases`.
    groups: Vec<Vec<usize>>,
    /// Phrase key (`words` joined by spaces) → indices into `phrases` with that key.
    by_key: HashMap<String, Vec<usize>>,
}

impl Thesaurus {
    /// The table, analyzed once per process.
    pub(crate) fn get() -> &'static Thesaurus {
        static THESAURUS: OnceLock<Thesaurus> = OnceLock::new();
        THESAURUS.get_or_init(Thesaurus::build)
    }

    fn build() -> Thesaurus {
        let mut phrases = Vec::new();
        let mut groups = Vec::new();
        let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
        for group in GROUPS {
            let mut members = Vec::new();
            for text in *group {
                let words = phrase_words(text);
                let terms = words
                    .iter()
                    .filter(|w| !analyze::is_stopword(w))
                    .cloned()
                    .collect();
                let phrase = Phrase { words, terms };
                by_key
                    .entry(phrase.words.join(" "))
                    .or_default()
                    .push(phrases.len());
                members.push(phrases.len());
                phrases.push(phrase);
            }
            groups.push(members);
        }
        Thesaurus {
            phrases,
            groups,
            by_key,
        }
    }

    /// The longest phrase of the table at the start of `words` (stemmed query words,
    /// stopwords included): its length in words and the phrase indices with that key.
    pub(crate) fn longest_match(&self, words: &[String]) -> Option<(usize, &[usize])> {
        (1..=words.len().min(MAX_PHRASE_WORDS))
            .rev()
            .find_map(|len| {
                let key = words[..len].join(" ");
                self.by_key.get(&key).map(|ids| (len, ids.as_slice()))
            })
    }

    /// The synonyms of the phrases `ids`: every other phrase of every group they belong to,
    /// as lists of index terms (stopwords dropped), without duplicates.
    pub(crate) fn synonyms_of(&self, ids: &[usize]) -> Vec<&[String]> {
        let mut out: Vec<&[String]> = Vec::new();
        let own: Vec<&[String]> = ids
            .iter()
            .map(|&i| self.phrases[i].terms.as_slice())
            .collect();
        for members in self
            .groups
            .iter()
            .filter(|m| ids.iter().any(|i| m.contains(i)))
        {
            for &member in members {
                let terms = self.phrases[member].terms.as_slice();
                if !terms.is_empty() && !own.contains(&terms) && !out.contains(&terms) {
                    out.push(terms);
                }
            }
        }
        out
    }
}

/// A phrase's words: lower-cased and stemmed like queries, stopwords kept.
pub(crate) fn phrase_words(text: &str) -> Vec<String> {
    analyze::chunks(text)
        .flat_map(analyze::words)
        .map(|w| analyze::stem(&w.to_lowercase()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        phrase_words(text)
    }

    fn synonyms(text: &str) -> Vec<String> {
        let t = Thesaurus::get();
        let w = words(text);
        let (len, ids) = t.longest_match(&w).expect("in the table");
        assert_eq!(len, w.len(), "{text} matched only in part");
        t.synonyms_of(ids)
            .iter()
            .map(|terms| terms.join(" "))
            .collect()
    }

    #[test]
    fn delete_and_remove_are_synonyms() {
        let of_remove = synonyms("remove");
        assert!(of_remove.contains(&"delet".to_string()), "{of_remove:?}");
        assert!(of_remove.contains(&"rm".to_string()));
        assert!(
            !of_remove.contains(&"remov".to_string()),
            "a word is not its own synonym"
        );
    }

    #[test]
    fn phrases_match_longest_first_and_expand_both_ways() {
        let of_pr = synonyms("PR");
        assert!(of_pr.contains(&"pull request".to_string()), "{of_pr:?}");
        let of_pull_request = synonyms("pull requests");
        assert!(of_pull_request.contains(&"pr".to_string()));
        assert!(of_pull_request.contains(&"merg request".to_string()));
    }

    #[test]
    fn words_in_several_groups_get_all_their_synonyms() {
        let of_open = synonyms("open");
        assert!(of_open.contains(&"creat".to_string()), "{of_open:?}");
        assert!(of_open.contains(&"read".to_string()));
        assert!(of_open.contains(&"navigat".to_string()));
    }

    #[test]
    fn stopword_phrases_match_and_expand_to_content_words() {
        let of_who = synonyms("who am I");
        assert!(
            of_who.contains(&"authenticat user".to_string()),
            "{of_who:?}"
        );
    }

    #[test]
    fn phrases_fit_the_longest_match_window() {
        let t = Thesaurus::get();
        assert!(t.phrases.iter().all(|p| p.words.len() <= MAX_PHRASE_WORDS));
        assert!(t.phrases.iter().all(|p| !p.words.is_empty()));
    }
}
