//! One server's choices in the overrides file ([`ServerOverrides`]): switched off or on,
//! allow / deny lists, descriptions, output budgets, its `pin`; and the edits the TUI and the
//! CLI make to them ([`Change`], [`Action`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::tool;
use super::{Pin, ALL_TOOLS};

/// What a project chose for one server. Every field is optional; absent means "as configured /
/// as the server says".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerOverrides {
    /// Wins over the config's `"disabled"`, either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// When present, only these tools are exposed (tools that appear later stay hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<BTreeSet<String>>,
    /// Tools never exposed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub deny: BTreeSet<String>,
    /// Description overrides: tool name → the text clients see instead of the server's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub descriptions: BTreeMap<String, String>,
    /// Output budgets in o200k tokens: tool name → budget, `"*"` for the server's other tools
    /// (0: never cut). Over it, a result is cut and the rest kept behind a handle.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_output_tokens: BTreeMap<String, usize>,
    /// What the gateway does with a tool whose definition changed since it was approved
    /// (absent: the stack's `pin`, else warn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<Pin>,
}

/// The entry of a server nobody chose anything for.
pub(super) static NO_OVERRIDES: ServerOverrides = ServerOverrides {
    disabled: None,
    allow: None,
    deny: BTreeSet::new(),
    descriptions: BTreeMap::new(),
    max_output_tokens: BTreeMap::new(),
    pin: None,
};

/// What a mutation did to one tool (or, with `tool: None`, to the server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The tool, or `None` for the server itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What was done.
    pub action: Action,
    /// False when the overrides already said so.
    #[serde(skip)]
    pub changed: bool,
}

/// The kinds of [`Change`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The server is enabled.
    Enabled,
    /// The server is disabled.
    Disabled,
    /// The tool is allowed (removed from `deny`, added to `allow` when there is one).
    Allowed,
    /// The tool is denied.
    Denied,
    /// The tool left the allow list (`allow --only` with other tools): now hidden.
    Unlisted,
    /// Every choice about the tool (or, for the server, every choice at all) is forgotten.
    Reset,
    /// The tool's description is overridden.
    Described,
    /// The tool's description override is removed: the server's own is back.
    DescriptionCleared,
    /// The tool's output budget (or, for `"*"`, the server's default) is set.
    Budgeted,
    /// The tool's output budget is removed: the run's budget applies again.
    BudgetCleared,
}

impl Action {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Enabled => "enabled",
            Action::Disabled => "disabled",
            Action::Allowed => "allowed",
            Action::Denied => "denied",
            Action::Unlisted => "unlisted",
            Action::Reset => "reset",
            Action::Described => "described",
            Action::DescriptionCleared => "description_cleared",
            Action::Budgeted => "budgeted",
            Action::BudgetCleared => "budget_cleared",
        }
    }
}

pub(super) fn change(tool: &str, action: Action, changed: bool) -> Change {
    Change {
        tool: Some(tool.to_string()),
        action,
        changed,
    }
}

/// One tool as a project exposes it: the server's definition with overrides applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolView<'a> {
    /// Position in the server's tool list (to find parallel data such as token counts).
    pub index: usize,
    /// The definition as the server sent it (never modified).
    pub def: &'a Value,
    /// The tool's name.
    pub name: &'a str,
    /// The description clients see: the override, else the server's.
    pub description: String,
    /// True when `description` comes from the overrides.
    pub is_overridden: bool,
    /// False when the tool is denied or left out of the server's allow list.
    pub is_allowed: bool,
}

impl ToolView<'_> {
    /// The server's own description.
    pub fn original_description(&self) -> &str {
        tool::description(self.def)
    }
}

impl ServerOverrides {
    /// True when nothing is chosen (such entries are not written).
    pub fn is_empty(&self) -> bool {
        self == &NO_OVERRIDES
    }

    /// The output budget the project set for `tool` (its own, else the server's `"*"`).
    pub fn output_budget(&self, tool: &str) -> Option<usize> {
        let budgets = &self.max_output_tokens;
        budgets
            .get(tool)
            .or_else(|| budgets.get(ALL_TOOLS))
            .copied()
    }

    /// True unless the tool is denied or missing from an allow list.
    pub fn is_allowed(&self, tool: &str) -> bool {
        !self.deny.contains(tool) && self.allow.as_ref().is_none_or(|a| a.contains(tool))
    }

    /// Allows each tool: out of `deny`, and into `allow` when the server has an allow list.
    pub fn allow(&mut self, tools: &[String]) -> Vec<Change> {
        tools
            .iter()
            .map(|t| {
                let undenied = self.deny.remove(t);
                let listed = self.allow.as_mut().is_some_and(|a| a.insert(t.clone()));
                change(t, Action::Allowed, undenied || listed)
            })
            .collect()
    }

    /// Makes `tools` the allow list (started or replaced) and takes them out of `deny`: every
    /// other tool, present or future, is hidden.
    pub fn allow_only(&mut self, tools: &[String]) -> Vec<Change> {
        let old = self.allow.take();
        let new: BTreeSet<String> = tools.iter().cloned().collect();
        let mut changes: Vec<Change> = tools
            .iter()
            .map(|t| {
                let undenied = self.deny.remove(t);
                let listed = !old.as_ref().is_some_and(|o| o.contains(t));
                change(t, Action::Allowed, undenied || listed)
            })
            .collect();
        for dropped in old.iter().flatten().filter(|t| !new.contains(*t)) {
            changes.push(change(dropped, Action::Unlisted, true));
        }
        self.allow = Some(new);
        changes
    }

    /// Denies each tool: into `deny`, out of `allow`.
    pub fn deny(&mut self, tools: &[String]) -> Vec<Change> {
        tools
            .iter()
            .map(|t| {
                let unlisted = self.allow.as_mut().is_some_and(|a| a.remove(t));
                let denied = self.deny.insert(t.clone());
                change(t, Action::Denied, denied || unlisted)
            })
            .collect()
    }

    /// Forgets every choice about each tool: out of `allow` and `deny`, description override
    /// and output budget dropped. (With an allow list, a tool reset is hidden like any unlisted
    /// tool.)
    pub fn reset(&mut self, tools: &[String]) -> Vec<Change> {
        tools
            .iter()
            .map(|t| {
                let unlisted = self.allow.as_mut().is_some_and(|a| a.remove(t));
                let undenied = self.deny.remove(t);
                let undescribed = self.descriptions.remove(t).is_some();
                let unbudgeted = self.max_output_tokens.remove(t).is_some();
                let changed = unlisted || undenied || undescribed || unbudgeted;
                change(t, Action::Reset, changed)
            })
            .collect()
    }

    /// Sets (`Some`) or removes (`None`) the output budget of `tool` (`"*"`: the server's
    /// other tools), in o200k tokens; 0 means never cut.
    pub fn set_budget(&mut self, tool: &str, tokens: Option<usize>) -> Change {
        match tokens {
            Some(tokens) => {
                let old = self.max_output_tokens.insert(tool.to_string(), tokens);
                change(tool, Action::Budgeted, old != Some(tokens))
            }
            None => {
                let old = self.max_output_tokens.remove(tool);
                change(tool, Action::BudgetCleared, old.is_some())
            }
        }
    }

    /// Sets (`Some`) or removes (`None`) the tool's description override.
    pub fn describe(&mut self, tool: &str, text: Option<String>) -> Change {
        match text {
            Some(text) => {
                let old = self.descriptions.insert(tool.to_string(), text.clone());
                change(tool, Action::Described, old.as_ref() != Some(&text))
            }
            None => {
                let old = self.descriptions.remove(tool);
                change(tool, Action::DescriptionCleared, old.is_some())
            }
        }
    }

    /// Forgets everything chosen for the server.
    pub fn clear(&mut self) -> Change {
        let changed = !self.is_empty();
        *self = ServerOverrides::default();
        Change {
            tool: None,
            action: Action::Reset,
            changed,
        }
    }

    /// The server's tools as exposed: allowed or not, effective descriptions, in server order.
    pub fn apply<'a>(&self, tools: &'a [Value]) -> Vec<ToolView<'a>> {
        tools
            .iter()
            .enumerate()
            .map(|(index, def)| {
                let name = tool::name(def);
                let custom = self.descriptions.get(name);
                ToolView {
                    index,
                    def,
                    name,
                    description: custom
                        .cloned()
                        .unwrap_or_else(|| tool::description(def).to_string()),
                    is_overridden: custom.is_some(),
                    is_allowed: self.is_allowed(name),
                }
            })
            .collect()
    }

    /// Names the overrides mention (allow, deny, descriptions, budgets other than the
    /// server's `"*"`) that `tools` lacks, sorted.
    pub fn stale_names(&self, tools: &[Value]) -> Vec<String> {
        let offered: BTreeSet<&str> = tools.iter().map(tool::name).collect();
        let mentioned: BTreeSet<&String> = self
            .allow
            .iter()
            .flatten()
            .chain(&self.deny)
            .chain(self.descriptions.keys())
            .chain(self.max_output_tokens.keys())
            .collect();
        mentioned
            .into_iter()
            .filter(|n| n.as_str() != ALL_TOOLS && !offered.contains(n.as_str()))
            .cloned()
            .collect()
    }
}
