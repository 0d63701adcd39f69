//! What a project exposes of each server: its tools after the overrides (denied ones out,
//! description overrides in), with the token cost before and after. One place for `list`,
//! `tokens` and `search` to agree on. Each tool also carries what the user's approvals say of
//! its definition (see [`super::approvals`]): a changed one is flagged, and withheld when its
//! server is pinned strictly.

use serde_json::Value;

use super::approvals::{Approval, Approvals};
use super::overrides::Overrides;
use super::preflight::ServerReport;
use super::tokens::count_tools;

/// One tool of a server, as the server sent it and as the project exposes it.
#[derive(Debug, Clone)]
pub struct ExposedTool {
    /// The tool's name.
    pub name: String,
    /// The definition clients get: the server's, with the description override applied.
    pub definition: Value,
    /// False when the overrides deny it (or leave it out of an allow list).
    pub is_allowed: bool,
    /// True when the description comes from the overrides.
    pub is_overridden: bool,
    /// Tokens of the server's own definition.
    pub tokens_before: Option<usize>,
    /// Tokens of `definition` (what it costs when allowed).
    pub tokens_after: Option<usize>,
    /// What the approvals say of the server's definition.
    pub approval: Approval,
    /// Changed since approved on a server pinned strictly: not served until approved.
    pub is_withheld: bool,
}

/// Every tool of every report as the overrides expose it; reports without tools give empty
/// lists. Definitions whose description is overridden are counted anew (through the token
/// cache, off the async threads).
pub async fn expose(reports: &[ServerReport], overrides: &Overrides) -> Vec<Vec<ExposedTool>> {
    let mut exposed = expose_uncounted(reports, overrides);
    recount_overridden(&mut exposed).await;
    exposed
}

/// [`expose`] without counting overridden descriptions anew (their `tokens_after` is `None`):
/// for long-lived processes (the gateway) that must not load the tokenizer.
pub fn expose_uncounted(reports: &[ServerReport], overrides: &Overrides) -> Vec<Vec<ExposedTool>> {
    let approvals = Approvals::load();
    if let Some(problem) = approvals.problem() {
        tracing::warn!(error = %problem, "every tool reads as changed");
    }
    expose_approved(reports, overrides, &approvals)
}

/// [`expose_uncounted`] against the given approvals.
pub fn expose_approved(
    reports: &[ServerReport],
    overrides: &Overrides,
    approvals: &Approvals,
) -> Vec<Vec<ExposedTool>> {
    reports
        .iter()
        .map(|r| {
            let strict = overrides.pin(&r.stack, &r.config_name).is_strict();
            overrides
                .apply(&r.stack, &r.config_name, &r.tools)
                .into_iter()
                .map(|view| {
                    let before = r.tool_tokens.get(view.index).copied();
                    let mut definition = view.def.clone();
                    if view.is_overridden {
                        definition["description"] = Value::String(view.description.clone());
                    }
                    let approval = approvals.of(&r.stack, &r.config_name, view.def);
                    ExposedTool {
                        name: view.name.to_string(),
                        definition,
                        is_allowed: view.is_allowed,
                        is_overridden: view.is_overridden,
                        tokens_before: before,
                        tokens_after: (!view.is_overridden).then_some(before).flatten(),
                        approval,
                        is_withheld: strict && approval.is_changed(),
                    }
                })
                .collect()
        })
        .collect()
}

/// Counts the overridden definitions (through the token cache, off the async threads).
async fn recount_overridden(exposed: &mut [Vec<ExposedTool>]) {
    let recount: Vec<Value> = exposed
        .iter()
        .flatten()
        .filter(|t| t.is_overridden)
        .map(|t| t.definition.clone())
        .collect();
    if recount.is_empty() {
        return;
    }
    let counted = tokio::task::spawn_blocking(move || {
        let refs: Vec<&Value> = recount.iter().collect();
        count_tools(&refs)
    })
    .await;
    if let Ok(Some(counts)) = counted {
        let mut counts = counts.into_iter();
        for tool in exposed.iter_mut().flatten().filter(|t| t.is_overridden) {
            tool.tokens_after = counts.next();
        }
    }
}

/// Sum of `tokens_before` over all tools, or `None` if any is unknown.
pub fn total_before(tools: &[ExposedTool]) -> Option<usize> {
    tools.iter().map(|t| t.tokens_before).sum()
}

/// Sum of `tokens_after` over the allowed tools, or `None` if any is unknown.
pub fn total_after(tools: &[ExposedTool]) -> Option<usize> {
    tools
        .iter()
        .filter(|t| t.is_allowed)
        .map(|t| t.tokens_after)
        .sum()
}
