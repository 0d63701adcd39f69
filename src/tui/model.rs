//! What the screens show, derived from the preflight and the overrides: one row per server of
//! every stack, each server's tools as exposed, and the totals per stack. Pure functions of
//! the app's data; nothing here does I/O.

use std::collections::BTreeSet;

use crate::catalog::{Overrides, ServerReport, Status};
use crate::config::ServerEntry;

/// Init times above this are flagged slow (the server answered, but a model waits for it).
pub const SLOW_INIT_MS: u128 = 5_000;

/// One server of one stack in the preflight.
#[derive(Debug, Clone)]
pub struct Row {
    /// The server's config entry.
    pub entry: ServerEntry,
    /// Where its check stands.
    pub check: Check,
    /// Checks started so far (`r` starts another).
    pub checks: u32,
}

/// A server's check.
#[derive(Debug, Clone)]
pub enum Check {
    /// Under way.
    Running,
    /// Finished.
    Done(Box<ServerReport>),
}

/// The badge a row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Badge {
    /// Checking.
    Checking,
    /// Connected (or answered from the tool index).
    Ok,
    /// Connected, but only in the slow window or slower than [`SLOW_INIT_MS`].
    Slow,
    /// Failed.
    Error,
    /// Disabled in the config or the overrides.
    Disabled,
    /// A remote server waiting for `mcp-launch auth login SERVER`.
    NeedsLogin,
}

impl Badge {
    /// The word shown.
    pub fn label(self) -> &'static str {
        match self {
            Badge::Checking => "checking",
            Badge::Ok => "ok",
            Badge::Slow => "slow",
            Badge::Error => "error",
            Badge::Disabled => "disabled",
            Badge::NeedsLogin => "needs login",
        }
    }
}

/// One tool as the server detail lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLine {
    /// Its name.
    pub name: String,
    /// The description clients see (the override, else the server's).
    pub description: String,
    /// The server's own description (what a reset brings back; the left side of a diff).
    pub original: String,
    /// True when the description is overridden.
    pub overridden: bool,
    /// False when denied or left out of an allow list.
    pub allowed: bool,
    /// Tokens of its definition as the server sent it.
    pub tokens: Option<usize>,
    /// True for a tool the overrides name but the server no longer offers.
    pub stale: bool,
    /// What its definition needed to be listed to strict clients (empty: nothing).
    pub repairs: Vec<String>,
    /// When its definition changed since it was approved: the approved description (the
    /// left side of the diff; `A` approves the change).
    pub approved: Option<String>,
}

/// Counts for a stack (or any set of rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Servers.
    pub servers: usize,
    /// Servers still being checked.
    pub checking: usize,
    /// Servers that failed.
    pub errors: usize,
    /// Tools offered by enabled servers.
    pub tools: usize,
    /// Tools exposed after the overrides.
    pub allowed: usize,
    /// Tokens of the enabled servers' tools as sent.
    pub tokens_before: usize,
    /// Tokens of the exposed tools (overridden descriptions counted as sent: an estimate
    /// until they are recounted at launch).
    pub tokens_after: usize,
}

impl Row {
    /// The report, once the check finished.
    pub fn report(&self) -> Option<&ServerReport> {
        match &self.check {
            Check::Done(report) => Some(report),
            Check::Running => None,
        }
    }

    /// `stack/name`, as users type it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.entry.stack, self.entry.name)
    }

    /// The badge for this row under `overrides`.
    pub fn badge(&self, overrides: &Overrides) -> Badge {
        if overrides.is_disabled(&self.entry) {
            return Badge::Disabled;
        }
        match self.report() {
            None => Badge::Checking,
            Some(r) => match r.status {
                Status::Error => Badge::Error,
                Status::Disabled => Badge::Disabled,
                Status::NeedsLogin => Badge::NeedsLogin,
                Status::Connected | Status::Cached
                    if r.used_slow_window
                        || r.init_time.is_some_and(|t| t.as_millis() > SLOW_INIT_MS) =>
                {
                    Badge::Slow
                }
                Status::Connected | Status::Cached => Badge::Ok,
            },
        }
    }

    /// The server's tools as the overrides expose them, then its stale ones.
    pub fn tools(&self, overrides: &Overrides) -> Vec<ToolLine> {
        let Some(report) = self.report() else {
            return Vec::new();
        };
        let stack = &self.entry.stack;
        let server = &self.entry.name;
        let repairs = report.repairs();
        let mut lines: Vec<ToolLine> = overrides
            .apply(stack, server, &report.tools)
            .into_iter()
            .map(|view| ToolLine {
                repairs: (repairs.of_tool(view.name).into_iter().flatten())
                    .map(ToString::to_string)
                    .collect(),
                name: view.name.to_string(),
                overridden: view.is_overridden,
                allowed: view.is_allowed,
                tokens: report.tool_tokens.get(view.index).copied(),
                original: view.original_description().to_string(),
                description: view.description,
                stale: false,
                approved: (report.changed.get(view.name))
                    .map(|approved| crate::catalog::tool::description(approved).to_string()),
            })
            .collect();
        let mut stale: BTreeSet<String> = overrides
            .stale_names(stack, server, &report.tools)
            .into_iter()
            .collect();
        stale.extend(report.stale.iter().cloned());
        for name in stale {
            if lines.iter().any(|l| l.name == name) {
                continue;
            }
            lines.push(ToolLine {
                name,
                description: String::new(),
                original: String::new(),
                overridden: false,
                allowed: false,
                tokens: None,
                stale: true,
                repairs: Vec::new(),
                approved: None,
            });
        }
        lines
    }

    /// Warnings worth a glance: the report's own, and descriptions over the limit.
    pub fn warnings(&self, overrides: &Overrides) -> Vec<String> {
        self.warnings_of(&self.tools(overrides))
    }

    /// The same from the server's tools as [`Row::tools`] gave them (for a caller that has
    /// them already).
    pub fn warnings_of(&self, tools: &[ToolLine]) -> Vec<String> {
        let Some(report) = self.report() else {
            return Vec::new();
        };
        let mut warnings = report.warnings.clone();
        warnings.extend(report.repairs().note());
        let long = tools
            .iter()
            .filter(|t| {
                t.allowed
                    && t.description.chars().count() > crate::catalog::CHATGPT_DESCRIPTION_LIMIT
            })
            .count();
        if long > 0 {
            warnings.push(format!(
                "{long} description(s) over {} characters",
                crate::catalog::CHATGPT_DESCRIPTION_LIMIT
            ));
        }
        warnings
    }
}

/// Totals over `rows` under `overrides`.
pub fn totals<'a>(rows: impl IntoIterator<Item = &'a Row>, overrides: &Overrides) -> Totals {
    let mut t = Totals::default();
    for row in rows {
        t.servers += 1;
        match row.badge(overrides) {
            Badge::Checking => t.checking += 1,
            Badge::Error => t.errors += 1,
            Badge::Disabled | Badge::NeedsLogin => {}
            Badge::Ok | Badge::Slow => {
                for tool in row.tools(overrides).iter().filter(|l| !l.stale) {
                    t.tools += 1;
                    t.tokens_before += tool.tokens.unwrap_or(0);
                    if tool.allowed {
                        t.allowed += 1;
                        t.tokens_after += tool.tokens.unwrap_or(0);
                    }
                }
            }
        }
    }
    t
}

/// Tool names that appear in more than one enabled server of the same stack (clients that
/// flatten names would see a clash).
pub fn duplicate_names<'a>(
    rows: impl IntoIterator<Item = &'a Row>,
    overrides: &Overrides,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut duplicates = BTreeSet::new();
    for row in rows {
        for tool in row.tools(overrides).into_iter().filter(|t| t.allowed) {
            if !seen.insert(tool.name.clone()) {
                duplicates.insert(tool.name);
            }
        }
    }
    duplicates
}
