//! Traces over OTLP/HTTP (protobuf): a span per MCP request the gateway serves and per call
//! it makes upstream, with the attributes of OpenTelemetry's semantic conventions for MCP
//! (`mcp.method.name`, `gen_ai.tool.name`, `gen_ai.operation.name = execute_tool`,
//! `jsonrpc.request.id`, `mcp.session.id`, `network.transport`, `error.type`), and W3C trace
//! context taken from clients (`_meta.traceparent`, else the HTTP `traceparent` header) and
//! passed on to upstreams (`_meta`, which the HTTP transport also sends as headers).
//!
//! Off unless asked for (`--otlp URL` or the standard `OTEL_EXPORTER_OTLP_*` variables, see
//! [`Settings::from_env`]). Off costs one atomic load per request: no exporter, no span, no
//! context is read or written. On, the spans are made with the OpenTelemetry SDK's tracer
//! directly ([`span`]), not through `tracing`: no log line or other span of the house becomes
//! part of a trace (nor any argument, result, header or key), and their enters and exits cost
//! traces nothing. Session ids are sent as a digest.
//!
//! Built without the cargo feature `otel` (on by default) no OpenTelemetry crate is in the
//! binary: [`Span`] is empty, every span call compiles to nothing, and asking for traces is
//! an error ([`TraceError::NotBuiltIn`]), never silently ignored.

mod context;
#[cfg(feature = "otel")]
mod export;
mod settings;
mod spans;

use std::future::Future;

#[cfg(feature = "otel")]
pub use context::inject;
pub use context::{Carrier, Relayed};
#[cfg(feature = "otel")]
pub use export::Exporter;
pub use settings::{Settings, TraceError};
pub use spans::{fail, is_on, record_result, span, Call, Kind, Span, Transport};

#[cfg(feature = "otel")]
tokio::task_local! {
    /// The span of the client's request the task is answering ([`within`]).
    static REQUEST: Span;
}

/// Runs `work` as the answer to the request whose span is `span`: the spans of the upstream
/// calls it makes are children of `span`. While traces are off (`span` disabled), `work` as
/// it is.
pub async fn within<F: Future>(span: Span, work: F) -> F::Output {
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        return REQUEST.scope(span, work).await;
    }
    #[cfg(not(feature = "otel"))]
    let _ = span;
    work.await
}

/// `work`, to be spawned on a task of its own, still answering the request the spawning task
/// answers ([`within`]): a gateway task's call, whose upstream call is the request's child.
pub fn carried<F: Future>(work: F) -> impl Future<Output = F::Output> {
    #[cfg(feature = "otel")]
    let span = REQUEST.try_with(Span::clone).unwrap_or_default();
    #[cfg(not(feature = "otel"))]
    let span = Span::none();
    within(span, work)
}

/// The context of the request being answered ([`within`]): the parent of the spans made
/// while answering it.
#[cfg(feature = "otel")]
fn request_context() -> Option<opentelemetry::Context> {
    REQUEST
        .try_with(|span| span.context().cloned())
        .ok()
        .flatten()
}

/// The exporter of a build without traces: asking for one is an error.
#[cfg(not(feature = "otel"))]
pub struct Exporter;

#[cfg(not(feature = "otel"))]
impl Exporter {
    /// Refuses: this build has no exporter ([`TraceError::NotBuiltIn`]).
    pub fn install(
        _settings: &Settings,
        _runtime: tokio::runtime::Handle,
    ) -> Result<Exporter, TraceError> {
        Err(TraceError::NotBuiltIn)
    }

    /// Nothing to send.
    pub fn shutdown(&self) {}
}
