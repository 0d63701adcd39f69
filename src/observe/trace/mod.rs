//! Traces over OTLP/HTTP (protobuf): a span per MCP request the gateway serves and per call
//! it makes upstream, with the attributes of OpenTelemetry's semantic conventions for MCP
//! (`mcp.method.name`, `gen_ai.tool.name`, `gen_ai.operation.name = execute_tool`,
//! `jsonrpc.request.id`, `mcp.session.id`, `network.transport`, `error.type`), and W3C trace
//! context taken from clients (`_meta.traceparent`, else the HTTP `traceparent` header) and
//! passed on to upstreams (`_meta`, which the HTTP transport also sends as headers).
//!
//! Off unless asked for (`--otlp URL` or the standard `OTEL_EXPORTER_OTLP_*` variables, see
//! [`Settings::from_env`]). Off costs one relaxed atomic load per request: no exporter, no
//! span, no context is read or written. On, the spans are tracing spans of one target
//! ([`TARGET`]) that only the OpenTelemetry layer takes: no other span or log event of the
//! house becomes part of a trace, so nothing a log line says (nor any argument, result,
//! header or key) ends up in a span. Session ids are sent as a digest.

mod context;
mod export;
mod spans;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::Span;

pub use context::{inject, Carrier, Relayed};
pub use export::{Exporter, Settings, TraceError};
pub use spans::{fail, record_result, span, Call, Kind, Transport};

/// The target of every span that becomes part of a trace (and of nothing else).
pub const TARGET: &str = "mcp_launch::trace";

/// Set once when an exporter is installed; never unset while the process runs.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether traces are exported: when not, callers skip every piece of span work.
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

tokio::task_local! {
    /// The span of the client's request the task is answering ([`within`]).
    static REQUEST: Span;
}

/// Runs `work` as the answer to the request whose span is `span`: the spans of the upstream
/// calls it makes are children of `span` ([`in_request`]). `span` is not entered at each poll
/// (`Instrument` would: entering and leaving a span runs every layer of the subscriber, and a
/// call's future is polled a dozen times — a quarter of what traces cost per HTTP call). While
/// traces are off (`span` disabled), `work` as it is.
pub async fn within<F: Future>(span: Span, work: F) -> F::Output {
    if span.is_disabled() {
        return work.await;
    }
    REQUEST.scope(span, work).await
}

/// `make` run with the span of the request being answered ([`within`]) as the current span,
/// so the span it makes is that span's child; else as it is (a task's call runs instrumented
/// by its request's span).
pub fn in_request<T>(make: impl FnOnce() -> T) -> T {
    match REQUEST.try_with(Span::clone) {
        Ok(request) => request.in_scope(make),
        Err(_) => make(),
    }
}

fn turn_on() {
    ON.store(true, Ordering::Relaxed);
}
