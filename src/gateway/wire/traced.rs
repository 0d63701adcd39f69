//! The span of a client's request (`observe::trace`), from what rmcp hands the handler: the
//! method, the tool, the JSON-RPC id, over HTTP the session (as a digest) and the headers,
//! and the request's `_meta`, where the client's trace context is looked for first.

use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::error::Actionable;
use crate::gateway::error::GatewayError;
use crate::observe::trace::{self, Call, Carrier, Kind, Span, Transport};

/// The request's span; a disabled one (nothing looked at) while traces are off.
pub(super) fn span(context: &RequestContext<RoleServer>, method: &str, tool: Option<&str>) -> Span {
    if !trace::is_on() {
        return Span::none();
    }
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let headers = parts.map(|parts| &parts.headers);
    let session = headers
        .and_then(|headers| headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok());
    let id = context.id.to_string();
    trace::span(&Call {
        kind: Kind::Server,
        method,
        tool,
        request_id: Some(&id),
        session,
        transport: match parts {
            Some(_) => Transport::Tcp,
            None => Transport::Pipe,
        },
        server: None,
        carrier: Carrier {
            meta: Some(&context.meta.0 .0),
            headers,
        },
    })
}

/// The client's trace context, to pass on as it came while traces are off (else `None`).
pub(super) fn relayed(context: &RequestContext<RoleServer>) -> Option<trace::Relayed> {
    if trace::is_on() {
        return None;
    }
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let carrier = Carrier {
        meta: Some(&context.meta.0 .0),
        headers: parts.map(|parts| &parts.headers),
    };
    carrier.relayed()
}

/// Marks a call's span failed when its answer is an error: a JSON-RPC error's code, a tool
/// error (`isError`), or the gateway's own refusal by its kind.
pub(super) fn record(span: &Span, outcome: &Result<Value, GatewayError>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(result) => trace::record_result(span, result),
        Err(error) if error.is_protocol_error() => {
            let code = error.as_rpc().get("code").map(Value::to_string);
            trace::fail(span, code.as_deref().unwrap_or("_OTHER"), error.kind());
        }
        Err(error) => trace::fail(span, error.kind(), error.kind()),
    }
}

/// Marks a request's span failed with the JSON-RPC error it was answered with.
pub(super) fn fail_rpc(span: &Span, error: &rmcp::ErrorData) {
    if span.is_disabled() {
        return;
    }
    trace::fail(span, &error.code.0.to_string(), &error.message);
}
