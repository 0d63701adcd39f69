//! The span of each request the pool sends upstream (`observe::trace`, kind client): a child
//! of the request being answered (`trace::within`, `trace::carried`), held until the answer,
//! its W3C context written into
//! the request's `_meta` (SEP-414; the HTTP transport also sends it as headers), so the
//! server's own spans join the client's trace.

use serde_json::Value;

use crate::config::{ServerEntry, ServerSpec};
use crate::mcp::McpError;
use crate::observe::trace::{self, Call, Carrier, Kind, Span, Transport};

/// The span of `method` to `server` (a disabled one, `params` untouched, while traces are
/// off), its context written into `params._meta`.
pub(super) fn span_of(server: &str, entry: &ServerEntry, method: &str, params: &mut Value) -> Span {
    if !trace::is_on() {
        return Span::none();
    }
    let tool = params.get("name").and_then(Value::as_str);
    let span = trace::span(&Call {
        kind: Kind::Client,
        method,
        tool: tool.filter(|_| method == "tools/call"),
        request_id: None,
        session: None,
        transport: match entry.spec {
            Ok(ServerSpec::Stdio { .. }) => Transport::Pipe,
            _ => Transport::Tcp,
        },
        server: Some(server),
        carrier: Carrier::default(),
    });
    #[cfg(feature = "otel")]
    if let Some(fields) = params.as_object_mut() {
        let meta = fields
            .entry("_meta")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            trace::inject(&span, meta);
        }
    }
    span
}

/// Marks the span failed when the server answered with an error: its JSON-RPC code, a tool
/// error (`isError`), or how the request failed (`timeout`, `server_exited`…).
pub(super) fn record(span: &Span, outcome: &Result<Value, McpError>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(result) => trace::record_result(span, result),
        Err(McpError::Rpc { error, .. }) => {
            trace::fail(
                span,
                &error.code.to_string(),
                "the server answered with an error",
            );
        }
        Err(error) => trace::fail(span, error.kind(), error.kind()),
    }
}
