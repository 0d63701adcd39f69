//! What the house tells about itself: the metrics registry and the tracing exporters
//! (`trace`, OTLP). Rooms record events through the small functions here — the gateway a request
//! served, the pool an upstream started or stopped, the outputs a result cut — and this room
//! decides how they are exported (Prometheus text at `/metrics`).
//!
//! It knows nothing of the rooms that record: no gateway, pool or catalog types cross into it,
//! only names and numbers. Label values are bounded by the callers' promise and by this room's
//! own checks: methods outside the MCP set read `other`, tools are named only when the caller
//! says its catalog knows them, servers only by their configured names.
//!
//! Recording is on unless `MCP_LAUNCH_METRICS=off` (read once): the bench's "metrics off".

pub mod metrics;
pub mod metrics_http;
pub mod reading;
pub mod snapshot;
pub mod trace;

pub use metrics::{
    call_served, output_budgeted, request_served, rest_served, sessions_changed,
    sparse_list_served, upstream_known, upstream_request, upstream_started, upstream_stopped,
    Outcome, OutputCut, Stop,
};
pub use metrics_http::{health_routes, metrics_page, serve_metrics, Readiness};
