//! `pin`: what the gateway does with a tool whose definition changed since it was approved
//! (see `catalog::approvals`). Set per server (`"pin": "strict"` in its entry) or for a whole
//! stack (`"pin": {"STACK": "strict"}` at the top of the file); the server's wins.

use serde::{Deserialize, Serialize};

use super::Overrides;

/// How a changed tool definition is treated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pin {
    /// Served as the server now sends it, with a warning (`list`, the TUI, `serve`'s log).
    #[default]
    Warn,
    /// Withheld until approved (`mcp-launch tool approve SERVER TOOL`): not listed, and a call
    /// is refused naming that command.
    Strict,
}

impl Pin {
    /// True for [`Pin::Strict`].
    pub fn is_strict(self) -> bool {
        self == Pin::Strict
    }

    /// The word used in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Pin::Warn => "warn",
            Pin::Strict => "strict",
        }
    }
}

impl Overrides {
    /// What the gateway does with the server's changed tools: its own `pin`, else its
    /// stack's, else [`Pin::Warn`].
    pub fn pin(&self, stack: &str, server: &str) -> Pin {
        (self.entry_of(stack, server).pin)
            .or_else(|| self.pins.get(stack).copied())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::Pin;
    use crate::catalog::{Edit, Overrides, OVERRIDES_FILE};

    #[test]
    fn a_server_pin_wins_over_its_stack_and_both_survive_other_edits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(OVERRIDES_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = r#"{"version": 1, "pin": {"mcp": "strict"},
                       "stacks": {"mcp": {"loose": {"pin": "warn"}}}}"#;
        std::fs::write(&path, text).unwrap();
        let o = Overrides::load(dir.path()).unwrap();
        assert_eq!(o.pin("mcp", "any"), Pin::Strict, "the stack's");
        assert_eq!(o.pin("mcp", "loose"), Pin::Warn, "the server's own");
        assert_eq!(o.pin("other", "any"), Pin::Warn, "the default");

        let edit = Edit::Deny {
            stack: "mcp".into(),
            server: "loose".into(),
            tools: vec!["rm".into()],
        };
        let updated = Overrides::update(dir.path(), &[edit]).unwrap();
        assert!(updated.saved);
        let again = Overrides::load(dir.path()).unwrap();
        assert_eq!(again.pin("mcp", "any"), Pin::Strict, "kept by a write");
        assert_eq!(again.pin("mcp", "loose"), Pin::Warn);
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(written["pin"], serde_json::json!({"mcp": "strict"}));
    }

    #[test]
    fn an_unknown_pin_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(OVERRIDES_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"version": 1, "pin": {"mcp": "paranoid"}}"#).unwrap();
        let err = Overrides::load(dir.path()).unwrap_err();
        assert!(err.to_string().contains("overrides.json:1:"), "{err}");
        assert!(err.to_string().contains("paranoid"), "{err}");
    }
}
