//! Tool results through the gateway, within their budget (`crate::outputs`): what is over it is
//! cut at a clean boundary and kept behind a handle that `read_output` (offered in both modes)
//! reads on, for the client that made the call only. Every call is recorded in the usage log
//! (sizes and time, never arguments or content).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::outputs::{self, Budget, ClientScope, Store, UsageLog, UsageRecord};

/// The budget, the handle store and the usage log of one gateway.
pub struct Outputs {
    budget: Budget,
    /// `None` when budgeting is off or the store cannot be opened (results then pass whole).
    store: Option<Arc<Store>>,
    usage: UsageLog,
}

impl Outputs {
    /// Outputs within `budget` (0: off, unless a tool's own budget says otherwise), kept in
    /// the user's store.
    pub fn new(budget: Budget) -> Outputs {
        let store = match Store::open_default() {
            Ok(store) => Some(Arc::new(store)),
            Err(e) => {
                tracing::warn!(error = %e, "no output store: results pass uncut");
                None
            }
        };
        Outputs {
            budget,
            store,
            usage: UsageLog::open_default(),
        }
    }

    /// The `read_output` tool, when results are budgeted.
    pub fn tool(&self) -> Option<Value> {
        let budgeted = self.store.is_some() && !self.budget.is_off();
        budgeted.then(outputs::read_output_tool)
    }

    /// `read_output` for `scope`; `None` when results are not budgeted (no such tool).
    pub async fn read(&self, arguments: Value, scope: ClientScope) -> Option<Value> {
        let store = Arc::clone(self.store.as_ref()?);
        let budget = self.budget;
        let read = tokio::task::spawn_blocking(move || {
            outputs::read_output(&store, &scope, &arguments, budget)
        });
        read.await.ok()
    }

    /// `result` of `server`'s `tool`, within `budget` (the tool's own) or the default, and
    /// the call recorded.
    pub async fn apply(
        &self,
        (server, tool): (&str, &str),
        result: Value,
        scope: ClientScope,
        budget: Option<Budget>,
        took: Duration,
    ) -> Value {
        let budget = budget.unwrap_or(self.budget);
        let store = match &self.store {
            Some(store) if !budget.is_off() => Arc::clone(store),
            _ => {
                self.record_uncut((server, tool), &result, &scope, took);
                return result;
            }
        };
        let usage = self.usage.clone();
        let call = (server.to_string(), tool.to_string());
        let budgeted = tokio::task::spawn_blocking(move || {
            within_budget(&store, budget, &usage, &call, result, &scope, took)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        budgeted.unwrap_or_else(|message| unbudgeted(&message))
    }

    /// [`Outputs::apply`] on this thread (blocking: file writes, maybe the tokenizer), for a
    /// caller that is not in a hurry (`call --batch` printing a result).
    pub fn apply_blocking(
        &self,
        (server, tool): (&str, &str),
        result: Value,
        scope: &ClientScope,
        took: Duration,
    ) -> Value {
        let store = match &self.store {
            Some(store) if !self.budget.is_off() => store,
            _ => {
                self.record_uncut((server, tool), &result, scope, took);
                return result;
            }
        };
        let call = (server.to_string(), tool.to_string());
        within_budget(store, self.budget, &self.usage, &call, result, scope, took)
            .unwrap_or_else(|message| unbudgeted(&message))
    }
}

impl Outputs {
    /// Records a call whose result passes whole (budgeting off).
    fn record_uncut(
        &self,
        (server, tool): (&str, &str),
        result: &Value,
        scope: &ClientScope,
        took: Duration,
    ) {
        let bytes = serde_json::to_vec(result).map_or(0, |b| b.len());
        let stats = outputs::Stats {
            bytes_sent: bytes,
            bytes_total: bytes,
            tokens_sent: None,
            is_cut: false,
            handles: Vec::new(),
        };
        if let Err(e) = self
            .usage
            .append(&UsageRecord::new(server, tool, scope, &stats, took))
        {
            tracing::debug!(error = %e, "usage not recorded");
        }
    }
}

/// Budgets `result`, records the call.
fn within_budget(
    store: &Store,
    budget: Budget,
    usage: &UsageLog,
    (server, tool): &(String, String),
    result: Value,
    scope: &ClientScope,
    took: Duration,
) -> Result<Value, String> {
    let budgeted =
        outputs::budget_result(result, budget, store, scope).map_err(|e| e.to_string())?;
    let record = UsageRecord::new(server, tool, scope, &budgeted.stats, took);
    if let Err(e) = usage.append(&record) {
        tracing::debug!(error = %e, "usage not recorded");
    }
    Ok(budgeted.result)
}

/// What the client gets when its result could not be budgeted (never the whole result
/// unbounded).
fn unbudgeted(message: &str) -> Value {
    tracing::warn!(%message, "a result could not be budgeted");
    serde_json::json!({"isError": true, "content": [{"type": "text",
        "text": format!("mcp-launch could not keep this result within its budget: {message}")}]})
}
