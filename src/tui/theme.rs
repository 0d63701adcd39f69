//! The TUI's styles: named ANSI colours (the terminal's palette decides the exact shade, so they
//! read on dark and light backgrounds alike) and reverse video for the selection. With
//! `NO_COLOR` set, only modifiers remain (bold, dim, reverse).

use ratatui::style::{Color, Modifier, Style};

/// Every style the screens use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Healthy: connected servers, allowed tools.
    pub good: Style,
    /// Broken: errors, denied tools.
    pub bad: Style,
    /// Needs a look: warnings, slow servers, stale tools.
    pub warn: Style,
    /// Secondary text.
    pub dim: Style,
    /// Titles and headers.
    pub title: Style,
    /// Keys in the status bar and help.
    pub key: Style,
    /// The selected row.
    pub selected: Style,
}

impl Theme {
    /// Colours unless `NO_COLOR` is set (to anything non-empty).
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if no_color {
            Theme::monochrome()
        } else {
            Theme::colored()
        }
    }

    /// The colour theme.
    pub fn colored() -> Theme {
        Theme {
            good: Style::new().fg(Color::Green),
            bad: Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            warn: Style::new().fg(Color::Yellow),
            dim: Style::new().add_modifier(Modifier::DIM),
            title: Style::new().add_modifier(Modifier::BOLD),
            key: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
        }
    }

    /// Modifiers only (`NO_COLOR`).
    pub fn monochrome() -> Theme {
        Theme {
            good: Style::new(),
            bad: Style::new().add_modifier(Modifier::BOLD),
            warn: Style::new().add_modifier(Modifier::UNDERLINED),
            dim: Style::new().add_modifier(Modifier::DIM),
            title: Style::new().add_modifier(Modifier::BOLD),
            key: Style::new().add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monochrome_has_no_colours() {
        let t = Theme::monochrome();
        for style in [t.good, t.bad, t.warn, t.dim, t.title, t.key, t.selected] {
            assert_eq!((style.fg, style.bg), (None, None));
        }
    }
}
