//! The names the gateway gives tools: `server__tool`, valid for the strictest clients
//! (`^[a-zA-Z0-9_-]{1,64}$`, what Claude's and OpenAI's APIs accept).
//!
//! A name that already fits is used as is. Any other — too long, or with other characters
//! (`.`, `/`, spaces, non-ASCII) — gets a deterministic short form: the invalid characters
//! become `_`, the name is cut to leave room, and `_` plus 6 hex digits of a hash of the full
//! name follow. The form depends only on the server and tool names, so it is stable across
//! restarts and across other servers coming and going. Two names that still collide get
//! longer hashes (then a counter), in a fixed order.

use std::collections::HashSet;

use crate::catalog::fnv1a;

/// The longest name clients accept.
pub const MAX_LEN: usize = 64;

/// Between the server and the tool.
pub const SEPARATOR: &str = "__";

/// True when `name` is 1–64 characters of `[a-zA-Z0-9_-]`.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The exposed name of each `(server, tool)` pair, in order; all distinct and valid.
/// With `passthrough`, tools keep their own names (one server fronted as is).
pub fn assign(pairs: &[(&str, &str)], passthrough: bool) -> Vec<String> {
    let wanted: Vec<String> = pairs
        .iter()
        .map(|(server, tool)| match passthrough {
            true => (*tool).to_string(),
            false => format!("{server}{SEPARATOR}{tool}"),
        })
        .collect();
    let mut names: Vec<String> = wanted.iter().map(|w| shorten(w, 6)).collect();
    // Collisions: every holder of a shared name after the first (in input order) gets a
    // longer hash, then a counter.
    let mut taken: HashSet<String> = HashSet::with_capacity(names.len());
    for (i, name) in names.iter_mut().enumerate() {
        if taken.insert(name.clone()) {
            continue;
        }
        let mut candidate = shorten_always(&wanted[i], 12);
        let mut n = 2;
        while !taken.insert(candidate.clone()) {
            candidate = shorten_always(&format!("{}#{n}", wanted[i]), 12);
            n += 1;
        }
        *name = candidate;
    }
    names
}

/// `wanted` when valid, else its short form with `digits` hex digits of hash.
fn shorten(wanted: &str, digits: usize) -> String {
    if is_valid(wanted) {
        wanted.to_string()
    } else {
        shorten_always(wanted, digits)
    }
}

fn shorten_always(wanted: &str, digits: usize) -> String {
    let hash = format!("{:016x}", fnv1a(wanted.as_bytes()));
    let cleaned: String = wanted
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    let room = MAX_LEN - 1 - digits;
    let head: String = cleaned.chars().take(room).collect();
    let head = head.trim_end_matches('_');
    let head = if head.is_empty() { "tool" } else { head };
    format!("{head}_{}", &hash[..digits])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_stay_and_others_get_a_stable_short_form() {
        let long_tool = "t".repeat(80);
        let pairs = [
            ("github", "create_issue"),
            ("my.server", "read file"),
            ("github", long_tool.as_str()),
            ("café", "ünïcode"),
        ];
        let names = assign(&pairs, false);
        assert_eq!(names[0], "github__create_issue");
        assert!(
            names[1].starts_with("my_server__read_file_"),
            "{}",
            names[1]
        );
        assert!(names[2].starts_with("github__ttt"), "{}", names[2]);
        assert!(names.iter().all(|n| is_valid(n)), "{names:?}");
        assert_eq!(names, assign(&pairs, false), "deterministic");
        // Another server's arrival changes no one else's name.
        let mut more = pairs.to_vec();
        more.insert(0, ("zzz", "x.y"));
        assert_eq!(&assign(&more, false)[1..], &names[..]);
    }

    #[test]
    fn collisions_are_resolved_in_input_order() {
        // Both clean up to `a_b__c` plus the same-length hash of different inputs; force a
        // true collision with identical pairs.
        let pairs = [("a", "x.y"), ("a", "x.y"), ("a", "x.y")];
        let names = assign(&pairs, false);
        let distinct: HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), 3, "{names:?}");
        assert!(names.iter().all(|n| is_valid(n)));
        let plain = [("s", "a__b"), ("s__a", "b")];
        let names = assign(&plain, false);
        assert_eq!(names[0], "s__a__b");
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn passthrough_keeps_tool_names() {
        assert_eq!(
            assign(&[("s", "test_simple_text")], true),
            ["test_simple_text"]
        );
    }

    #[test]
    fn validity() {
        assert!(is_valid("a-b_C9"));
        assert!(!is_valid(""));
        assert!(!is_valid(&"a".repeat(65)));
        assert!(!is_valid("a.b"));
    }
}
