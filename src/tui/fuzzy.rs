//! The `/` filter: a case-insensitive subsequence match, scored so that contiguous runs and
//! matches at word starts (`_`, `-`, `.`, camelCase) rank first — `gfc` finds
//! `get_file_contents` before `git_fetch_commit_log`.

/// The score of `needle` in `haystack`, or `None` when it is not a subsequence. Higher is
/// better; an empty needle matches everything with 0.
pub fn score(needle: &str, haystack: &str) -> Option<i64> {
    let needle: Vec<char> = needle.chars().flat_map(char::to_lowercase).collect();
    if needle.is_empty() {
        return Some(0);
    }
    let chars: Vec<char> = haystack.chars().collect();
    let mut total = 0i64;
    let mut at = 0usize;
    let mut previous: Option<usize> = None;
    for wanted in needle {
        let found =
            (at..chars.len()).find(|&i| chars[i].to_lowercase().eq(std::iter::once(wanted)))?;
        total += 1;
        if previous.is_some_and(|p| p + 1 == found) {
            total += 5;
        }
        if is_word_start(&chars, found) {
            total += 3;
        }
        // Earlier is better, a little.
        total -= (found as i64).min(20) / 10;
        previous = Some(found);
        at = found + 1;
    }
    Some(total)
}

fn is_word_start(chars: &[char], i: usize) -> bool {
    i == 0
        || matches!(chars[i - 1], '_' | '-' | '.' | ' ' | '/')
        || (chars[i].is_uppercase() && chars[i - 1].is_lowercase())
}

#[cfg(test)]
mod tests {
    use super::score;

    #[test]
    fn subsequences_match_and_others_do_not() {
        assert!(score("gfc", "get_file_contents").is_some());
        assert!(score("GFC", "get_file_contents").is_some());
        assert!(score("xyz", "get_file_contents").is_none());
        assert_eq!(score("", "anything"), Some(0));
    }

    #[test]
    fn word_starts_and_runs_rank_first() {
        let a = score("gfc", "get_file_contents").unwrap();
        let b = score("gfc", "git_fetch_commit").unwrap();
        let c = score("gfc", "digifactory").unwrap();
        assert!(a >= b && b > c, "{a} {b} {c}");
        assert!(score("echo", "echo").unwrap() > score("echo", "e_c_h_o").unwrap());
        assert!(score("read", "read_file").unwrap() > score("read", "ReplaceAllData").unwrap());
    }
}
