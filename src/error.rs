//! The one shape every user-facing error takes before `output` renders it as
//! `{type, message, help}`.

/// An error a user can act on: a stable type name, a message (its `Display`), and what to do.
pub trait Actionable: std::fmt::Display + std::fmt::Debug {
    /// A stable snake_case name for the JSON envelope's `type`.
    fn kind(&self) -> &'static str;
    /// The next step: a flag, an environment variable, a command, a file to fix.
    fn help(&self) -> String;
}

/// Where serde_json found a fault in `text`, as 1-based line and column. serde_json gives
/// column 0 when the input ends right after a newline (`2:0` for `{` and a newline): that is
/// reported as the end of the line before, where the missing text belongs.
pub fn json_position(text: &str, error: &serde_json::Error) -> (usize, usize) {
    match (error.line(), error.column()) {
        (line, 0) if line > 1 => {
            let before = text.lines().nth(line - 2).unwrap_or("");
            (line - 1, before.chars().count() + 1)
        }
        (line, column) => (line, column.max(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_at_the_end_points_after_the_last_character() {
        let text = "{\n  \"a\": 1\n";
        let error = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        assert_eq!((error.line(), error.column()), (3, 0));
        assert_eq!(json_position(text, &error), (2, 9));
        let text = "{]";
        let error = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        assert_eq!(json_position(text, &error), (1, 2));
    }
}
