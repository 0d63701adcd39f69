//! The spans themselves: one shape for the gateway's requests (kind server) and the calls it
//! makes upstream (kind client), named `{mcp.method.name} {target}` as the semantic
//! conventions for MCP ask, with their attributes.

use sha2::{Digest, Sha256};
use tracing::field::Empty;
use tracing::Span;

use super::{is_on, Carrier, TARGET};

/// Which side of a call a span stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request a client sent us (the gateway answering).
    Server,
    /// A request we send an upstream server.
    Client,
}

/// How the MCP messages travel (`network.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// stdio.
    Pipe,
    /// Streamable HTTP (or legacy SSE).
    Tcp,
}

/// What a span records of a request. Only these: never arguments, results, headers or keys.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// Server or client side.
    pub kind: Kind,
    /// The JSON-RPC method (`tools/call`).
    pub method: &'a str,
    /// The tool called (`tools/call`): `gen_ai.tool.name`, and the span name's target.
    pub tool: Option<&'a str>,
    /// The JSON-RPC id, as a string.
    pub request_id: Option<&'a str>,
    /// The MCP session's id; recorded as a digest (an HTTP session id is a bearer of the
    /// session).
    pub session: Option<&'a str>,
    /// `network.transport`.
    pub transport: Transport,
    /// The upstream server's name (client spans): `mcp_launch.server`.
    pub server: Option<&'a str>,
    /// Where the client's trace context may be (server spans): adopted as the parent.
    pub carrier: Carrier<'a>,
}

/// The span of `call`, or a disabled span (no work at all) while traces are off.
pub fn span(call: &Call) -> Span {
    if !is_on() {
        return Span::none();
    }
    let name = match call.tool {
        Some(tool) => format!("{} {tool}", call.method),
        None => call.method.to_string(),
    };
    let kind = match call.kind {
        Kind::Server => "server",
        Kind::Client => "client",
    };
    let transport = match call.transport {
        Transport::Pipe => "pipe",
        Transport::Tcp => "tcp",
    };
    // Every attribute known now is given at creation: each `record` afterwards is a visit of
    // the span by the OpenTelemetry layer (a lookup, a lock, the attribute list grown).
    let session = call.session.map(digest);
    let span = tracing::info_span!(
        target: TARGET,
        "mcp",
        otel.name = %name,
        otel.kind = kind,
        mcp.method.name = call.method,
        network.transport = transport,
        network.protocol.name = (call.transport == Transport::Tcp).then_some("http"),
        gen_ai.tool.name = call.tool,
        gen_ai.operation.name = call.tool.map(|_| "execute_tool"),
        jsonrpc.request.id = call.request_id,
        mcp.session.id = session.as_deref(),
        mcp_launch.server = call.server,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    call.carrier.adopt_into(&span);
    span
}

/// Marks `span` failed: `error_type` is the JSON-RPC error code, `tool_error` for a result
/// with `isError`, or our error's kind (`timeout`, `server_exited`…); `message` becomes the
/// status description.
pub fn fail(span: &Span, error_type: &str, message: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", message);
}

/// Marks `span` failed when `result` is a tool's error (`isError: true`: `tool_error`, as
/// the semantic conventions ask).
pub fn record_result(span: &Span, result: &serde_json::Value) {
    if result.get("isError").and_then(serde_json::Value::as_bool) == Some(true) {
        fail(span, "tool_error", "the tool answered with isError");
    }
}

/// The first 16 hex digits of the SHA-256 of a session id: the same session reads the same
/// in every span, and the id itself (enough to continue the session) is never exported.
fn digest(session: &str) -> String {
    use std::fmt::Write as _;
    let mut shown = String::with_capacity(16);
    for byte in &Sha256::digest(session.as_bytes())[..8] {
        let _ = write!(shown, "{byte:02x}");
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_exported_as_a_stable_digest_never_as_itself() {
        let id = "6f1c0a7e-secret-session";
        let shown = digest(id);
        assert_eq!(shown.len(), 16);
        assert!(!shown.contains("secret"));
        assert_eq!(shown, digest(id));
        assert_ne!(shown, digest("another"));
    }

    #[test]
    fn while_traces_are_off_no_span_is_made() {
        let call = Call {
            kind: Kind::Server,
            method: "tools/call",
            tool: Some("echo"),
            request_id: Some("1"),
            session: None,
            transport: Transport::Pipe,
            server: None,
            carrier: Carrier::default(),
        };
        assert!(span(&call).is_disabled());
    }
}
