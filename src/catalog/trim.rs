//! Trimming tool descriptions to a character budget (ChatGPT Actions cut descriptions at 300
//! characters), for `mcp-launch tool describe --trim`.
//!
//! Invariants:
//! - The result never holds more than `max_chars` Unicode scalar values, the closing `…`
//!   included, and never splits a character.
//! - It never splits a grapheme cluster either (a letter and its combining marks, an emoji
//!   ZWJ sequence with its modifiers, a flag, a Hangul syllable): extended grapheme clusters
//!   after UAX #29, from `unicode-segmentation`. Only when one cluster alone exceeds the budget
//!   is the result just `…`.
//! - A text already within budget comes back unchanged (only trailing whitespace removed).

use unicode_segmentation::UnicodeSegmentation;

/// The mark that ends a cut text (one character, counted in the budget).
pub const ELLIPSIS: char = '…';

/// ChatGPT Actions cut tool descriptions at this many characters.
pub const CHATGPT_DESCRIPTION_LIMIT: usize = 300;

/// A cut may fall back to the last word boundary only if that keeps at least this share of the
/// budget (in tenths): losing more than the last ~30% to reach a space reads worse than a hard
/// cut inside a long word.
const MIN_KEPT_TENTHS: usize = 7;

/// `text` cut to at most `max_chars` characters (Unicode scalar values), `…` included.
///
/// Within budget (after removing trailing whitespace) the text is returned as is. Otherwise
/// runs of whitespace collapse to one space (that alone may be enough), then the text is cut
/// at the last word boundary when one lies in the last ~30% of the budget, else at the last
/// whole grapheme cluster that fits; trailing spaces and `,;:` before the `…` are dropped.
///
/// ```
/// use mcp_launch::catalog::trim_description;
/// assert_eq!(trim_description("Read a file from disk", 15), "Read a file…");
/// assert_eq!(trim_description("short  ", 300), "short");
/// ```
pub fn trim_description(text: &str, max_chars: usize) -> String {
    let text = text.trim_end();
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max_chars {
        return collapsed;
    }
    if max_chars == 0 {
        return String::new();
    }
    let budget = max_chars - 1;

    // The longest prefix of whole clusters within the budget.
    let (mut end, mut used) = (0, 0);
    for cluster in collapsed.graphemes(true) {
        let n = cluster.chars().count();
        if used + n > budget {
            break;
        }
        used += n;
        end += cluster.len();
    }
    let head = &collapsed[..end];
    let ends_a_word = collapsed[end..].starts_with(' ');
    let cut = match head.rfind(' ') {
        Some(space)
            if !ends_a_word && head[..space].chars().count() * 10 >= budget * MIN_KEPT_TENTHS =>
        {
            &head[..space]
        }
        _ => head,
    };
    let cut = cut.trim_end_matches([' ', ',', ';', ':']);
    format!("{cut}{ELLIPSIS}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> usize {
        s.chars().count()
    }

    #[test]
    fn clusters_tile_the_text_and_keep_marks_sequences_and_flags_whole() {
        let text = "e\u{301}t\u{e9} 👩\u{200d}💻 🇫🇷 한국어 \r\n x";
        let clusters: Vec<&str> = text.graphemes(true).collect();
        assert_eq!(clusters.concat(), text);
        for whole in ["e\u{301}", "👩\u{200d}💻", "🇫🇷", "\r\n"] {
            assert!(clusters.contains(&whole), "{whole:?} in {clusters:?}");
        }
    }

    #[test]
    fn within_budget_is_unchanged_but_for_trailing_whitespace() {
        assert_eq!(trim_description("Read a file.", 300), "Read a file.");
        assert_eq!(
            trim_description("Two  spaces\nkept.\n\n", 300),
            "Two  spaces\nkept."
        );
        let exact = "a".repeat(300);
        assert_eq!(trim_description(&exact, 300), exact);
        let exact_words = "word ".repeat(60);
        assert_eq!(chars(&exact_words), 300);
        assert_eq!(
            trim_description(&exact_words, 300),
            exact_words.trim_end(),
            "trailing space dropped, nothing cut"
        );
    }

    #[test]
    fn collapsing_whitespace_may_be_enough() {
        let text = format!("{}\n\n          tail", "x".repeat(290));
        assert_eq!(chars(&text), 306);
        assert_eq!(
            trim_description(&text, 300),
            format!("{} tail", "x".repeat(290))
        );
    }

    #[test]
    fn ascii_cuts_at_a_word_boundary() {
        let text = "Search the repository for files matching a pattern and return their paths";
        let out = trim_description(text, 40);
        assert_eq!(out, "Search the repository for files…");
        assert!(chars(&out) <= 40);
        // 301 characters of words: cut at the last space, `…` within the budget.
        let long = "alpha beta gamma delta ".repeat(14);
        let out = trim_description(&long, 300);
        assert!(chars(&out) <= 300, "{}", chars(&out));
        assert!(out.ends_with("…"));
        let kept = out.trim_end_matches('…');
        assert!(long.starts_with(kept) && !kept.ends_with(' '));
        assert!(long[kept.len()..].starts_with(' '), "cut between words");
    }

    #[test]
    fn the_budget_is_exact_when_the_cut_falls_on_a_space() {
        // The 299 characters before the `…` end just before a space: all of them stay.
        let text = format!("{} tail", "y".repeat(299));
        assert_eq!(
            trim_description(&text, 300),
            format!("{}…", "y".repeat(299))
        );
    }

    #[test]
    fn punctuation_before_the_ellipsis_is_dropped() {
        assert_eq!(
            trim_description("one, two, three, four", 12),
            "one, two…",
            "not `one, two,…`"
        );
    }

    #[test]
    fn a_single_long_word_is_cut_hard() {
        let word = "x".repeat(400);
        let out = trim_description(&word, 300);
        assert_eq!(out, format!("{}…", "x".repeat(299)));
        assert_eq!(chars(&out), 300);
        // A space too early in the budget does not pull the cut back.
        let text = format!("ab {}", "z".repeat(400));
        assert_eq!(chars(&trim_description(&text, 300)), 300);
        assert!(trim_description(&text, 300).starts_with("ab zzz"));
    }

    #[test]
    fn cjk_is_cut_by_character() {
        let text = "这是一个非常长的工具描述".repeat(40);
        let out = trim_description(&text, 300);
        assert_eq!(chars(&out), 300);
        assert!(out.ends_with('…'));
        assert!(text.starts_with(out.trim_end_matches('…')));
    }

    #[test]
    fn emoji_sequences_are_never_split() {
        let family = "👨\u{200d}👩\u{200d}👧"; // 5 scalar values, one cluster
        let text = format!("{}{}", "a".repeat(296), family.repeat(3));
        let out = trim_description(&text, 300);
        // 296 + 5 > 299: the family does not fit, and is not split.
        assert_eq!(out, format!("{}…", "a".repeat(296)));
        let thumbs = "👍🏽"; // emoji + skin tone modifier
        let out = trim_description(&format!("{}{thumbs}{thumbs}", "b".repeat(298)), 300);
        assert_eq!(out, format!("{}…", "b".repeat(298)));
        let flags = "🇫🇷🇩🇪🇯🇵";
        assert_eq!(trim_description(flags, 4), "🇫🇷…");
    }

    #[test]
    fn combining_marks_stay_with_their_letter() {
        let e = "e\u{301}"; // é as two scalar values
        let text = e.repeat(200);
        let out = trim_description(&text, 300);
        assert!(chars(&out) <= 300);
        assert_eq!(out, format!("{}…", e.repeat(149)));
        // Never a dangling mark at the start of the cut-off part.
        assert!(!out.trim_end_matches('…').ends_with('e'));
    }

    #[test]
    fn tiny_budgets() {
        assert_eq!(trim_description("hello world", 0), "");
        assert_eq!(trim_description("hello world", 1), "…");
        assert_eq!(trim_description("hello world", 2), "h…");
        assert_eq!(trim_description("", 0), "");
    }
}
