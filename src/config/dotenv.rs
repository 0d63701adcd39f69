//! A small `.env` parser.
//!
//! Accepted, one per line: `KEY=VALUE`, `export KEY=VALUE`, blank lines, `# comments`.
//! - Unquoted values are trimmed; ` #…` (a `#` after whitespace) starts a comment, so
//!   `URL=http://h/#frag` keeps its `#`.
//! - `'single'` quotes are literal. `"double"` quotes understand `\n`, `\r`, `\t`, `\"`, `\\`
//!   (any other `\x` is kept as written). After the closing quote only a comment may follow.
//! - Values are not interpolated and may not span lines. A later duplicate key wins.
//! - Keys must be `[A-Za-z_][A-Za-z0-9_]*`. A bad line is an error carrying its 1-based number.

use super::interpolate::is_variable_name;

/// A line the parser rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadLine {
    /// 1-based line number.
    pub(crate) line: usize,
    /// What is wrong with it.
    pub(crate) reason: String,
}

/// Parses `.env` text into `(key, value)` pairs in file order (duplicates kept; last wins
/// when the caller collects them into a map).
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, BadLine> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut pairs = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let bad = |reason: String| BadLine {
            line: index + 1,
            reason,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = strip_export(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(bad(format!("expected KEY=VALUE, found {line:?}")));
        };
        let key = key.trim();
        if !is_variable_name(key) {
            return Err(bad(format!("invalid variable name {key:?}")));
        }
        let value = parse_value(value).map_err(bad)?;
        pairs.push((key.to_string(), value));
    }
    Ok(pairs)
}

/// Drops a leading `export` keyword (followed by whitespace).
fn strip_export(line: &str) -> &str {
    match line.strip_prefix("export") {
        Some(rest) if rest.starts_with([' ', '\t']) => rest.trim_start(),
        _ => line,
    }
}

/// Parses what follows the `=`.
fn parse_value(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim_start();
    let (value, after) = if let Some(body) = trimmed.strip_prefix('\'') {
        let close = body.find('\'').ok_or("unterminated single-quoted value")?;
        (body[..close].to_string(), &body[close + 1..])
    } else if let Some(body) = trimmed.strip_prefix('"') {
        double_quoted(body)?
    } else {
        return Ok(unquoted(raw));
    };
    let after = after.trim_start();
    if after.is_empty() || after.starts_with('#') {
        Ok(value)
    } else {
        Err(format!("unexpected text {after:?} after the closing quote"))
    }
}

/// An unquoted value: up to a `#` that follows whitespace, trimmed.
fn unquoted(raw: &str) -> String {
    let mut end = raw.len();
    let mut previous_is_space = false;
    for (i, c) in raw.char_indices() {
        if c == '#' && previous_is_space {
            end = i;
            break;
        }
        previous_is_space = c.is_whitespace();
    }
    raw[..end].trim().to_string()
}

/// The inside of a double-quoted value (after the opening quote) → (value, text after the
/// closing quote).
fn double_quoted(body: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &body[i + 1..])),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('n') => value.push('\n'),
                Some('r') => value.push('\r'),
                Some('t') => value.push('\t'),
                Some('"') => value.push('"'),
                Some('\\') => value.push('\\'),
                Some(other) => {
                    value.push('\\');
                    value.push(other);
                }
                None => break,
            },
            other => value.push(other),
        }
    }
    Err("unterminated double-quoted value".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    fn one(text: &str) -> String {
        let parsed = pairs(text);
        assert_eq!(parsed.len(), 1, "{parsed:?}");
        parsed[0].1.clone()
    }

    #[test]
    fn plain_export_comments_and_blank_lines() {
        let text = "# header\n\nA=1\nexport B=two\n  # indented comment\nexported=3\r\n";
        assert_eq!(
            pairs(text),
            vec![
                ("A".to_string(), "1".to_string()),
                ("B".to_string(), "two".to_string()),
                ("exported".to_string(), "3".to_string()),
            ]
        );
    }

    #[test]
    fn unquoted_values_are_trimmed_and_lose_trailing_comments() {
        assert_eq!(one("K =  spaced value  "), "spaced value");
        assert_eq!(one("K=value # a comment"), "value");
        assert_eq!(one("K=http://h/#frag"), "http://h/#frag");
        assert_eq!(one("K= # only a comment"), "");
        assert_eq!(one("K="), "");
        assert_eq!(one("K=a=b"), "a=b");
    }

    #[test]
    fn single_quotes_are_literal() {
        assert_eq!(one(r"K='a \n # b'"), r"a \n # b");
        assert_eq!(one("K='x' # trailing"), "x");
    }

    #[test]
    fn double_quotes_understand_escapes() {
        assert_eq!(one(r#"K="line1\nline2""#), "line1\nline2");
        assert_eq!(one(r#"K="say \"hi\" \\ \t \q""#), "say \"hi\" \\ \t \\q");
        assert_eq!(
            one(r#"K="a # not a comment" # comment"#),
            "a # not a comment"
        );
    }

    #[test]
    fn later_duplicates_are_kept_in_order() {
        assert_eq!(
            pairs("K=1\nK=2"),
            vec![
                ("K".to_string(), "1".to_string()),
                ("K".to_string(), "2".to_string())
            ]
        );
    }

    #[test]
    fn bad_lines_report_their_number() {
        let err = parse("A=1\n\njust words\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.reason.contains("expected KEY=VALUE"), "{}", err.reason);

        assert_eq!(parse("A=1\nMY KEY=2").unwrap_err().line, 2);
        assert_eq!(parse("1A=x").unwrap_err().line, 1);
        let open = parse("A=\"never closed").unwrap_err();
        assert_eq!(open.reason, "unterminated double-quoted value");
        assert_eq!(
            parse("A='x").unwrap_err().reason,
            "unterminated single-quoted value"
        );
        assert!(parse("A='x' junk")
            .unwrap_err()
            .reason
            .contains("after the closing quote"));
    }
}
