//! Budgeted outputs: every tool result measured in o200k tokens, cut at a clean boundary when
//! over its budget, the whole kept behind a persisted handle that `read_output` reads on.
//!
//! This room knows nothing of MCP sessions, HTTP or processes: it takes a `CallToolResult` as
//! JSON and gives one back. It uses the tokenizer (`catalog::TokenCounter`), loaded lazily
//! once, and never for a result whose size in bytes is within the budget (tokens never
//! outnumber bytes): the long-lived gateway keeps its memory small. Outputs are never logged.
//!
//! The face, for the gateway, `call` and the lean tools server:
//!
//! ```no_run
//! use mcp_launch::outputs::{self, Budget, ClientScope, ReadRequest, Store};
//! # fn main() -> Result<(), outputs::OutputsError> {
//! let store = Store::open_default()?; // $XDG_STATE_HOME/mcp-launch/outputs, 24 h, 512 MB
//! let scope = ClientScope::local(); // or ClientScope::new(&session_id_or_key)
//! let result = serde_json::json!({"content": [{"type": "text", "text": "…"}]});
//! let budgeted = outputs::budget_result(result, Budget::default(), &store, &scope)?;
//! // budgeted.result goes to the client; budgeted.stats to the usage record.
//! let arguments = serde_json::json!({"handle": "h_…", "offset": 200});
//! let (handle, request) = ReadRequest::from_arguments(&arguments)?;
//! let answer = store.read(&handle, &scope, &request, Budget::default())?;
//! let _result = answer.to_result(); // a CallToolResult
//! // Or the whole tool at once (errors become `isError` results):
//! let _result = outputs::read_output(&store, &scope, &arguments, Budget::default());
//! # Ok(()) }
//! ```
//!
//! A cut result carries a last text block, the envelope (`[mcp-launch: this result was over
//! its budget of 6,000 tokens. kept lines 1-212 of 48,113 (…). More: read_output {"handle":
//! "h_…", "offset": 212}, or grep. Handles last 24h.]`), and the same facts for programs in
//! `_meta["mcp-launch/outputs"]` (`{budget, cuts: [{handle, part, kept, total}]}`).
//! [`read_output_tool`] is the tool definition to expose; [`budget_for`] reads a budget from
//! a flag value.

mod calls;
pub(crate) mod cut;
mod envelope;
mod error;
mod measure;
pub(crate) mod read;
mod store;
mod usage;

pub use calls::{Outputs, Served};
pub use cut::{cut_json, cut_json_arrays, cut_text, ArraysCut, JsonCut, JsonCutAt, TextCut};
pub use envelope::human_bytes;
pub use envelope::{budget_result, budget_result_with, json_len, Budgeted, Stats, Structured};
pub use error::OutputsError;
pub(crate) use measure::cost_within;
pub use measure::{is_tokenizer_loaded, tokens, window, Total};
pub use read::{read_output, ReadOutput, ReadRequest};
pub use store::{is_handle, ClientScope, Kind, Store, DEFAULT_MAX_BYTES, DEFAULT_TTL};
pub use usage::{totals, UsageLog, UsageRecord, UsageTotal, ROTATE_BYTES};

use serde_json::{json, Value};

/// The budget when none is set (`--max-output-tokens`, overrides).
pub const DEFAULT_MAX_TOKENS: usize = 6_000;

/// Tokens set aside for the envelope: what is kept gets the budget less this, so the result
/// with its envelope stays within the budget.
pub const ENVELOPE_TOKENS: usize = 160;

/// The `_meta` member a cut result carries.
pub const META_KEY: &str = "mcp-launch/outputs";

/// The most tokens a result may cost; 0 turns budgeting off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// o200k tokens; 0 = off.
    pub max_tokens: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

impl Budget {
    /// A budget of `max_tokens` (0 = off).
    pub fn new(max_tokens: usize) -> Budget {
        Budget { max_tokens }
    }

    /// True when budgeting is off.
    pub fn is_off(&self) -> bool {
        self.max_tokens == 0
    }
}

/// The budget a flag or override value sets: `6000`, `6k`, `0` (off).
pub fn budget_for(text: &str) -> Option<Budget> {
    let text = text.trim();
    let (digits, scale) = match text.strip_suffix(['k', 'K']) {
        Some(digits) => (digits, 1000),
        None => (text, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .map(Budget::new)
}

/// The `read_output` tool's name.
pub const READ_OUTPUT: &str = "read_output";

/// The `read_output` tool as `tools/list` shows it (one line of description, a small schema).
pub fn read_output_tool() -> Value {
    json!({
        "name": READ_OUTPUT,
        "description": "Read more of a cut result by handle: lines from offset, grep regex, or jsonpath.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "handle": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1},
                "grep": {"type": "string"},
                "jsonpath": {"type": "string"}
            },
            "required": ["handle"]
        }
    })
}

#[cfg(test)]
mod tests;
