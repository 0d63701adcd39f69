//! What the MCP servers we serve (the gateway, the lean tools server) share of rmcp, their
//! server side: results built from JSON into rmcp's types. With `gateway/wire/` and
//! `tools/wire.rs`, the only places that name rmcp (a test checks). `stdio`: the stdio
//! transport both serve through (every bad line answered); `fds`: the process's stdin and
//! stdout under it, through the reactor.

pub mod fds;
pub mod stdio;

/// Log filter directives (appended to the default filter, each after a comma) for what rmcp
/// logs at ERROR that is routine for a server: its service's answers it could not send
/// because the client had left (every 2026-07-28 client closing its listen stream).
pub const QUIET_LOGS: &str = ",rmcp::service=off";

use rmcp::ErrorData;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// A result as an rmcp type (they are `non_exhaustive`: built from JSON, as they travel).
/// Upstreams speak the 2025 era, whose results have no `resultType`; a finished result is
/// `complete` (rmcp strips it again for clients of the 2025 era).
pub fn typed<T: DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Some(fields) = value.as_object_mut() {
        fields
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
    }
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}
