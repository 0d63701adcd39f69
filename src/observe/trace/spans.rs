//! The spans themselves: one shape for the gateway's requests (kind server) and the calls it
//! makes upstream (kind client), named `{mcp.method.name} {target}` as the semantic
//! conventions for MCP ask, with their attributes. Made with the OpenTelemetry SDK's tracer
//! directly, their parent given explicitly (the client's context, else the request being
//! answered, [`super::within`]): no `tracing` span stands between, so no other span of the
//! process pays anything for traces. Without the `otel` feature a [`Span`] is empty and every
//! call here compiles to nothing.

#[cfg(feature = "otel")]
use std::sync::OnceLock;

#[cfg(feature = "otel")]
use opentelemetry::trace::{SpanBuilder, SpanKind, Status, TraceContextExt};
#[cfg(feature = "otel")]
use opentelemetry::{Context, KeyValue};
#[cfg(feature = "otel")]
use opentelemetry_sdk::trace::SdkTracer;
#[cfg(feature = "otel")]
use sha2::{Digest, Sha256};

use super::Carrier;

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

/// A span of a trace, or a disabled one (nothing in it, nothing done with it) while traces
/// are off. Clones share the span; it ends when the last is dropped.
#[derive(Clone, Default)]
pub struct Span {
    /// The span within its context (`None`: disabled).
    #[cfg(feature = "otel")]
    context: Option<Context>,
}

impl Span {
    /// The disabled span.
    pub fn none() -> Span {
        Span::default()
    }

    /// Whether this is the disabled span (always, in a build without traces).
    pub fn is_disabled(&self) -> bool {
        #[cfg(feature = "otel")]
        return self.context.is_none();
        #[cfg(not(feature = "otel"))]
        true
    }

    /// The span within its context, to be a parent or to be written into `_meta`.
    #[cfg(feature = "otel")]
    pub(super) fn context(&self) -> Option<&Context> {
        self.context.as_ref()
    }
}

/// The tracer of the installed exporter; set once, never unset while the process runs.
#[cfg(feature = "otel")]
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Turns traces on: spans are made with `tracer` from now on.
#[cfg(feature = "otel")]
pub(super) fn turn_on(tracer: SdkTracer) {
    let _ = TRACER.set(tracer);
}

/// Whether traces are exported: when not, callers skip every piece of span work. One atomic
/// load; a constant `false` in a build without traces.
#[inline]
pub fn is_on() -> bool {
    #[cfg(feature = "otel")]
    return TRACER.get().is_some();
    #[cfg(not(feature = "otel"))]
    false
}

/// The span of `call`, or a disabled span (no work at all) while traces are off. Its parent is
/// the client's span its carrier names, else the request being answered ([`super::within`]).
#[cfg(feature = "otel")]
pub fn span(call: &Call) -> Span {
    let Some(tracer) = TRACER.get() else {
        return Span::none();
    };
    let name = match call.tool {
        Some(tool) => format!("{} {tool}", call.method),
        None => call.method.to_string(),
    };
    let kind = match call.kind {
        Kind::Server => SpanKind::Server,
        Kind::Client => SpanKind::Client,
    };
    let parent = call
        .carrier
        .adopted()
        .or_else(super::request_context)
        .unwrap_or_default();
    let made = SpanBuilder::from_name(name)
        .with_kind(kind)
        .with_attributes(attributes(call))
        .start_with_context(tracer, &parent);
    Span {
        context: Some(Context::new().with_span(made)),
    }
}

/// The span of `call`: in a build without traces, always the disabled one.
#[cfg(not(feature = "otel"))]
pub fn span(_call: &Call) -> Span {
    Span::none()
}

/// The attributes of `call`'s span, all known when it is made (the semantic conventions').
#[cfg(feature = "otel")]
fn attributes(call: &Call) -> Vec<KeyValue> {
    let transport = match call.transport {
        Transport::Pipe => "pipe",
        Transport::Tcp => "tcp",
    };
    let mut attributes = Vec::with_capacity(9);
    attributes.push(KeyValue::new("mcp.method.name", call.method.to_string()));
    attributes.push(KeyValue::new("network.transport", transport));
    if call.transport == Transport::Tcp {
        attributes.push(KeyValue::new("network.protocol.name", "http"));
    }
    if let Some(tool) = call.tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_string()));
        attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    let given = [
        ("jsonrpc.request.id", call.request_id.map(str::to_string)),
        ("mcp.session.id", call.session.map(digest)),
        ("mcp_launch.server", call.server.map(str::to_string)),
    ];
    for (key, value) in given {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value));
        }
    }
    attributes
}

/// Marks `span` failed: `error_type` is the JSON-RPC error code, `tool_error` for a result
/// with `isError`, or our error's kind (`timeout`, `server_exited`…); `message` becomes the
/// status description.
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
pub fn fail(span: &Span, error_type: &str, message: &str) {
    #[cfg(feature = "otel")]
    if let Some(context) = &span.context {
        let span = context.span();
        span.set_attribute(KeyValue::new("error.type", error_type.to_string()));
        span.set_status(Status::error(message.to_string()));
    }
}

/// Marks `span` failed when `result` is a tool's error (`isError: true`: `tool_error`, as
/// the semantic conventions ask).
pub fn record_result(span: &Span, result: &serde_json::Value) {
    if span.is_disabled() {
        return;
    }
    if result.get("isError").and_then(serde_json::Value::as_bool) == Some(true) {
        fail(span, "tool_error", "the tool answered with isError");
    }
}

/// The first 16 hex digits of the SHA-256 of a session id: the same session reads the same
/// in every span, and the id itself (enough to continue the session) is never exported.
#[cfg(feature = "otel")]
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

    #[cfg(feature = "otel")]
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
