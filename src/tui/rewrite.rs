//! Rewriting tool descriptions — trim, cut, clear, reset, replace — on one tool or on many at
//! once, as description overrides saved with [`Effect::Save`] (so they reload next time, and
//! the CLI sees them too). The server screen (on its selected or marked tools) and the
//! descriptions screen both go through [`rewrite`], so they cannot disagree.
//!
//! A result equal to the server's own description removes the override instead of storing a
//! copy: a later change of the server's text then shows through.

use crate::catalog::{trim_description, Edit, CHATGPT_DESCRIPTION_LIMIT};

use super::app::{App, Notice};
use super::msg::Effect;

/// What to do to a description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrite {
    /// Shorten to [`CHATGPT_DESCRIPTION_LIMIT`] characters at a word boundary, `…` included.
    Trim,
    /// Keep the first [`CHATGPT_DESCRIPTION_LIMIT`] characters, wherever that falls (what
    /// ChatGPT itself would keep).
    Truncate,
    /// An empty description (an override of `""`: clients see none).
    Clear,
    /// Remove the override: the server's description again.
    Reset,
    /// This text (from an editor; trailing whitespace dropped).
    Replace(String),
}

/// What a rewrite does to one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing: already within the limit.
    Within,
    /// The override becomes this text.
    Override(String),
    /// No override: the server's text.
    Original,
}

impl Rewrite {
    /// The rewrite a key asks for, the same on every screen: `t` trim, `T` cut, `x` clear,
    /// `R` reset.
    pub fn for_key(key: char) -> Option<Rewrite> {
        match key {
            't' => Some(Rewrite::Trim),
            'T' => Some(Rewrite::Truncate),
            'x' => Some(Rewrite::Clear),
            'R' => Some(Rewrite::Reset),
            _ => None,
        }
    }

    /// The outcome for a tool whose server says `original` and whose clients see `current`.
    pub fn outcome(&self, original: &str, current: &str) -> Outcome {
        let over = current.chars().count() > CHATGPT_DESCRIPTION_LIMIT;
        let text = match self {
            Rewrite::Trim | Rewrite::Truncate if !over => return Outcome::Within,
            Rewrite::Trim => trim_description(current, CHATGPT_DESCRIPTION_LIMIT),
            Rewrite::Truncate => truncate(current, CHATGPT_DESCRIPTION_LIMIT),
            Rewrite::Clear => String::new(),
            Rewrite::Reset => return Outcome::Original,
            Rewrite::Replace(text) => text.trim_end().to_string(),
        };
        if text == original {
            Outcome::Original
        } else {
            Outcome::Override(text)
        }
    }

    /// The past participle for notices ("3 description(s) trimmed").
    fn done(&self) -> &'static str {
        match self {
            Rewrite::Trim => "trimmed",
            Rewrite::Truncate => "cut",
            Rewrite::Clear => "cleared",
            Rewrite::Reset => "reset to the server's",
            Rewrite::Replace(_) => "saved",
        }
    }
}

/// The first `max_chars` characters of `text` (Unicode scalar values), trailing whitespace
/// dropped. Unlike [`trim_description`] it cuts inside a word and adds no `…`; a combined
/// emoji at the cut may lose its tail.
pub fn truncate(text: &str, max_chars: usize) -> String {
    let cut: String = text.chars().take(max_chars).collect();
    cut.trim_end().to_string()
}

/// Characters in `text`, as the limit counts them (Unicode scalar values, not bytes).
pub fn char_count(text: &str) -> usize {
    text.chars().count()
}

/// Applies `rewrite` to the tools `names` of the server in row `row` (stale or unknown names
/// are passed over), says what happened, and asks to save when anything changed.
pub(super) fn rewrite(
    app: &mut App,
    row: usize,
    names: &[String],
    rewrite: &Rewrite,
) -> Vec<Effect> {
    let Some(r) = app.rows.get(row) else {
        return Vec::new();
    };
    let (stack, server) = (r.entry.stack.clone(), r.entry.name.clone());
    let tools = r.tools(&app.overrides);
    let (mut within, mut last_text, mut edits) = (0usize, None, Vec::new());
    for name in names {
        let Some(tool) = tools.iter().find(|t| &t.name == name && !t.stale) else {
            continue;
        };
        let text = match rewrite.outcome(&tool.original, &tool.description) {
            Outcome::Within => {
                within += 1;
                continue;
            }
            Outcome::Override(text) => Some(text),
            Outcome::Original => None,
        };
        last_text = Some(text.clone().unwrap_or_else(|| tool.original.clone()));
        edits.push(Edit::Describe {
            stack: stack.clone(),
            server: server.clone(),
            tool: name.clone(),
            text,
        });
    }
    let (changes, save) = app.edit_if_changed(edits);
    let changed = changes.iter().filter(|c| c.changed).count();
    let notice = match (names, last_text) {
        (_, None) if within > 0 => format!(
            "{} within {CHATGPT_DESCRIPTION_LIMIT} characters already",
            one_or_many(names, within)
        ),
        (_, None) => "no description to change".to_string(),
        ([name], Some(_)) if changed == 0 => format!("{name}: unchanged"),
        ([name], Some(text)) => {
            let count = char_count(&text);
            let over = if count > CHATGPT_DESCRIPTION_LIMIT {
                " — over the limit (t trims)"
            } else {
                ""
            };
            format!(
                "{name}: {} ({count}/{CHATGPT_DESCRIPTION_LIMIT} characters){over}",
                rewrite.done()
            )
        }
        (_, Some(_)) => {
            let mut text = format!("{changed} description(s) {}", rewrite.done());
            if within > 0 {
                text.push_str(&format!(
                    "; {within} within {CHATGPT_DESCRIPTION_LIMIT} already"
                ));
            }
            text
        }
    };
    app.say(notice);
    save.into_iter().collect()
}

fn one_or_many(names: &[String], count: usize) -> String {
    match names {
        [name] => name.clone(),
        _ => format!("{count} description(s)"),
    }
}

/// The external editor closed: its text replaces the description, or its failure is shown.
pub(super) fn on_external_edit(
    app: &mut App,
    row: usize,
    tool: String,
    result: Result<String, String>,
) -> Vec<Effect> {
    match result {
        Ok(text) => rewrite(app, row, &[tool], &Rewrite::Replace(text)),
        Err(why) => {
            app.notice = Some(Notice {
                text: format!("{tool}: not edited: {why}"),
                is_error: true,
            });
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_and_truncate_leave_short_texts_alone() {
        for rewrite in [Rewrite::Trim, Rewrite::Truncate] {
            assert_eq!(rewrite.outcome("short", "short"), Outcome::Within);
            let exact = "x".repeat(CHATGPT_DESCRIPTION_LIMIT);
            assert_eq!(rewrite.outcome(&exact, &exact), Outcome::Within);
        }
    }

    #[test]
    fn trim_cuts_at_a_word_and_truncate_anywhere() {
        let long = "word ".repeat(100);
        let Outcome::Override(trimmed) = Rewrite::Trim.outcome(&long, &long) else {
            panic!("trimmed")
        };
        assert!(char_count(&trimmed) <= CHATGPT_DESCRIPTION_LIMIT);
        assert!(trimmed.ends_with("word…"), "{trimmed}");
        let long = "abcdefghij".repeat(40);
        let Outcome::Override(cut) = Rewrite::Truncate.outcome(&long, &long) else {
            panic!("cut")
        };
        assert_eq!(cut, long[..CHATGPT_DESCRIPTION_LIMIT]);
        assert_eq!(truncate("héllo wörld", 7), "héllo w");
        assert_eq!(truncate("ab   cd", 4), "ab", "trailing spaces dropped");
    }

    #[test]
    fn clear_reset_and_replace() {
        assert_eq!(
            Rewrite::Clear.outcome("Reads a file", "Reads a file"),
            Outcome::Override(String::new())
        );
        assert_eq!(Rewrite::Clear.outcome("", "x"), Outcome::Original);
        assert_eq!(Rewrite::Reset.outcome("a", "b"), Outcome::Original);
        assert_eq!(
            Rewrite::Replace("New text\n\n".into()).outcome("a", "a"),
            Outcome::Override("New text".into())
        );
        assert_eq!(
            Rewrite::Replace("Reads a file\n".into()).outcome("Reads a file", "x"),
            Outcome::Original,
            "the server's own text is no override"
        );
    }

    #[test]
    fn counts_are_characters_not_bytes() {
        assert_eq!(char_count("héllo…"), 6);
        assert_eq!(char_count("a\nb"), 3);
    }
}
