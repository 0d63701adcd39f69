//! The one shape every user-facing error takes before `output` renders it as
//! `{type, message, help}`.

/// An error a user can act on: a stable type name, a message (its `Display`), and what to do.
pub trait Actionable: std::fmt::Display + std::fmt::Debug {
    /// A stable snake_case name for the JSON envelope's `type`.
    fn kind(&self) -> &'static str;
    /// The next step: a flag, an environment variable, a command, a file to fix.
    fn help(&self) -> String;
}
