//! The one metrics registry of the process, and the functions rooms record through.
//!
//! Names follow Prometheus' conventions: `mcp_launch_` first, base units (`_seconds`),
//! counters end in `_total` (the OpenMetrics encoder adds it). Every label value is bounded:
//! `method` is one of the MCP methods or `other`, `outcome` one of three words, `server` a
//! configured name, `tool` a tool the caller's catalog knows or `other`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

/// The variable that turns recording off (`off`, `0`, `false`); the exposition stays served.
pub const METRICS_ENV: &str = "MCP_LAUNCH_METRICS";

/// The `tool` label of a tool its catalog does not know (a client may send any name).
pub const OTHER: &str = "other";

/// The content type of [`render`]'s text (OpenMetrics 1.0, which Prometheus scrapes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The MCP methods a client may send us; any other reads `other` (a custom method is
/// free text, and a label must not be).
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "server/discover",
    "subscriptions/listen",
];

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered with a result.
    Ok,
    /// A tool ran and said no (`isError: true`).
    ToolError,
    /// Answered with an error (JSON-RPC error, refusal, unavailable server, timeout).
    Error,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
        }
    }
}

/// Why an upstream session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Nothing used it for the idle limit.
    Idle,
    /// The server exited or the connection broke (it restarts on the next need).
    Lost,
    /// The pool shut down.
    Shutdown,
    /// Stopped on purpose while idle: an operator's stop or restart (`top`'s `s`/`r`), or
    /// after the first check of a server that is not always on — not an idle stop.
    Asked,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    server: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestLabels {
    server: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamRequestLabels {
    server: String,
    method: &'static str,
    outcome: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets from 100 µs to ~52 s (doubling): a ping through the gateway and a slow
/// tool both land in a bucket of their own.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 20))
}

/// Cold-start buckets from 10 ms to ~82 s: `npx` fetching a package is the slow end.
fn start_time() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

/// Every metric, registered once.
struct Metrics {
    registry: Registry,
    is_on: AtomicBool,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Histograms<MethodLabels>,
    upstream_seconds: Histograms<UpstreamRequestLabels>,
    upstream_up: Family<ServerLabels, Gauge>,
    upstream_starts: Family<ServerLabels, Counter>,
    upstream_start_seconds: Histograms<ServerLabels>,
    upstream_restarts: Family<ServerLabels, Counter>,
    upstream_idle_stops: Family<ServerLabels, Counter>,
    sessions: Gauge,
    output_cuts: Family<ServerLabels, Counter>,
    output_cut_bytes: Family<ServerLabels, Counter>,
    output_cut_tokens: Family<ServerLabels, Counter>,
    handles_stored: Counter,
    sparse_tokens_saved: Counter,
    rest_requests: Family<RestLabels, Counter>,
    rest_seconds: Histograms<ServerLabels>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Metrics {
        let mut metrics = Metrics {
            registry: Registry::with_prefix("mcp_launch"),
            is_on: AtomicBool::new(is_on_in_env()),
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(latency),
            upstream_seconds: Family::new_with_constructor(latency),
            upstream_up: Family::default(),
            upstream_starts: Family::default(),
            upstream_start_seconds: Family::new_with_constructor(start_time),
            upstream_restarts: Family::default(),
            upstream_idle_stops: Family::default(),
            sessions: Gauge::default(),
            output_cuts: Family::default(),
            output_cut_bytes: Family::default(),
            output_cut_tokens: Family::default(),
            handles_stored: Counter::default(),
            sparse_tokens_saved: Counter::default(),
            rest_requests: Family::default(),
            rest_seconds: Family::new_with_constructor(latency),
        };
        metrics.register();
        metrics
    }

    fn register(&mut self) {
        let r = &mut self.registry;
        r.register(
            "requests",
            "MCP requests clients sent the gateway, by method, server, tool (tools/call) and outcome",
            self.requests.clone(),
        );
        r.register_with_unit(
            "request_duration",
            "Time the gateway took to answer a client's request, by method",
            Unit::Seconds,
            self.request_seconds.clone(),
        );
        r.register_with_unit(
            "upstream_request_duration",
            "Time an upstream server took to answer a request of ours, by server, method and outcome",
            Unit::Seconds,
            self.upstream_seconds.clone(),
        );
        r.register(
            "upstream_up",
            "1 while the upstream server has a live session, else 0",
            self.upstream_up.clone(),
        );
        r.register(
            "upstream_starts",
            "Sessions started with the upstream server (first starts and restarts)",
            self.upstream_starts.clone(),
        );
        r.register_with_unit(
            "upstream_start_duration",
            "Time from starting an upstream server to its finished handshake (cold start)",
            Unit::Seconds,
            self.upstream_start_seconds.clone(),
        );
        r.register(
            "upstream_restarts",
            "Starts of an upstream server after its session was lost (it exited or the connection broke)",
            self.upstream_restarts.clone(),
        );
        r.register(
            "upstream_idle_stops",
            "Upstream sessions ended because nothing used them for the idle limit",
            self.upstream_idle_stops.clone(),
        );
        r.register(
            "sessions",
            "Client sessions open on the gateway's HTTP endpoint",
            self.sessions.clone(),
        );
        r.register(
            "output_cuts",
            "Tool results cut to their token budget, by server",
            self.output_cuts.clone(),
        );
        r.register_with_unit(
            "output_cut",
            "Bytes of tool results kept out of the answer by their budget (behind handles), by server",
            Unit::Bytes,
            self.output_cut_bytes.clone(),
        );
        r.register(
            "output_cut_tokens",
            "Tokens of tool results' text kept out of the answer by their budget (each cut part's tokens less those sent of it), by server",
            self.output_cut_tokens.clone(),
        );
        r.register(
            "output_handles_stored",
            "Handles stored for the rest of cut results",
            self.handles_stored.clone(),
        );
        r.register(
            "sparse_tokens_saved",
            "Tokens of tool definitions a sparse tools/list did not send (the full list's minus the sparse list's)",
            self.sparse_tokens_saved.clone(),
        );
        r.register(
            "rest_requests",
            "REST requests to a stack front's routes (the OpenAPI side), by server, tool and outcome",
            self.rest_requests.clone(),
        );
        r.register_with_unit(
            "rest_request_duration",
            "Time a stack front took to answer a REST request, by server",
            Unit::Seconds,
            self.rest_seconds.clone(),
        );
    }
}

fn is_on_in_env() -> bool {
    let value = std::env::var(METRICS_ENV).unwrap_or_default();
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "off" | "0" | "false" | "no"
    )
}

/// The registry when recording is on.
fn recording() -> Option<&'static Metrics> {
    let metrics = &*METRICS;
    metrics.is_on.load(Ordering::Relaxed).then_some(metrics)
}

/// `method` as a label: one of the MCP methods, else `other`.
fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or(OTHER)
}

/// A client's request answered in `took` (every method; `tools/call` is counted by
/// [`call_served`], which knows its server and tool).
pub fn request_served(method: &str, took: Duration, outcome: Outcome) {
    let Some(m) = recording() else { return };
    let method = method_label(method);
    m.request_seconds
        .get_or_create(&MethodLabels { method })
        .observe(took.as_secs_f64());
    if method != "tools/call" {
        count_request(m, method, "", "", outcome);
    }
}

/// A client's `tools/call` answered: `tool` is `Some` only for a tool the gateway's catalog
/// knows (else it is counted as `other`: a client may send any name).
pub fn call_served(server: &str, tool: Option<&str>, outcome: Outcome) {
    let Some(m) = recording() else { return };
    count_request(m, "tools/call", server, tool.unwrap_or(OTHER), outcome);
}

fn count_request(m: &Metrics, method: &'static str, server: &str, tool: &str, outcome: Outcome) {
    let labels = RequestLabels {
        method,
        server: server.to_string(),
        tool: tool.to_string(),
        outcome: outcome.label(),
    };
    m.requests.get_or_create(&labels).inc();
}

/// A request of ours to an upstream server answered (or failed) in `took`.
pub fn upstream_request(server: &str, method: &str, took: Duration, is_ok: bool) {
    let Some(m) = recording() else { return };
    let outcome = if is_ok { Outcome::Ok } else { Outcome::Error };
    let labels = UpstreamRequestLabels {
        server: server.to_string(),
        method: method_label(method),
        outcome: outcome.label(),
    };
    m.upstream_seconds
        .get_or_create(&labels)
        .observe(took.as_secs_f64());
}

fn server(name: &str) -> ServerLabels {
    ServerLabels {
        server: name.to_string(),
    }
}

/// A configured upstream server: its series exist from the start. `is_up` when it comes with
/// a live session (the preflight's, adopted: started, not timed here).
pub fn upstream_known(name: &str, is_up: bool) {
    let Some(m) = recording() else { return };
    let labels = server(name);
    m.upstream_up.get_or_create(&labels).set(i64::from(is_up));
    let starts = m.upstream_starts.get_or_create(&labels);
    if is_up {
        starts.inc();
    }
    drop(starts);
    let _ = m.upstream_restarts.get_or_create(&labels);
    let _ = m.upstream_idle_stops.get_or_create(&labels);
}

/// An upstream session started after `took`; `is_restart` when the one before was lost.
pub fn upstream_started(name: &str, took: Duration, is_restart: bool) {
    let Some(m) = recording() else { return };
    let labels = server(name);
    m.upstream_up.get_or_create(&labels).set(1);
    m.upstream_starts.get_or_create(&labels).inc();
    m.upstream_start_seconds
        .get_or_create(&labels)
        .observe(took.as_secs_f64());
    if is_restart {
        m.upstream_restarts.get_or_create(&labels).inc();
    }
}

/// An upstream session ended.
pub fn upstream_stopped(name: &str, why: Stop) {
    let Some(m) = recording() else { return };
    let labels = server(name);
    m.upstream_up.get_or_create(&labels).set(0);
    if why == Stop::Idle {
        m.upstream_idle_stops.get_or_create(&labels).inc();
    }
}

/// The gateway's HTTP sessions now number `open`.
pub fn sessions_changed(open: usize) {
    let Some(m) = recording() else { return };
    m.sessions.set(i64::try_from(open).unwrap_or(i64::MAX));
}

/// What a budget kept out of one result's answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputCut {
    /// Bytes of the result as it came less those sent (0: it fit).
    pub bytes: usize,
    /// Tokens of its text kept out, as the budget pass counted them (binaries count in bytes
    /// only).
    pub tokens: usize,
    /// Handles stored for what was kept out.
    pub handles: usize,
}

/// A result of `server`'s was budgeted and `cut` kept out of its answer.
pub fn output_budgeted(server: &str, cut: OutputCut) {
    let Some(m) = recording() else { return };
    if cut == OutputCut::default() {
        return;
    }
    let labels = self::server(server);
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    m.output_cuts.get_or_create(&labels).inc();
    m.output_cut_bytes
        .get_or_create(&labels)
        .inc_by(count(cut.bytes));
    m.output_cut_tokens
        .get_or_create(&labels)
        .inc_by(count(cut.tokens));
    m.handles_stored.inc_by(count(cut.handles));
}

/// A sparse `tools/list` answered: `saved` tokens of definitions not sent.
pub fn sparse_list_served(saved: usize) {
    let Some(m) = recording() else { return };
    m.sparse_tokens_saved
        .inc_by(u64::try_from(saved).unwrap_or(u64::MAX));
}

/// A REST request to a stack front answered in `took`: `server` is `Some` only for a server
/// the stack exposes and `tool` only for one of its tools (else `other`: a client may send
/// any path).
pub fn rest_served(server: Option<&str>, tool: Option<&str>, took: Duration, outcome: Outcome) {
    let Some(m) = recording() else { return };
    let server = server.unwrap_or(OTHER);
    let labels = RestLabels {
        server: server.to_string(),
        tool: tool.unwrap_or(OTHER).to_string(),
        outcome: outcome.label(),
    };
    m.rest_requests.get_or_create(&labels).inc();
    m.rest_seconds
        .get_or_create(&self::server(server))
        .observe(took.as_secs_f64());
}

/// The exposition of every metric (OpenMetrics text, [`CONTENT_TYPE`]).
pub fn render() -> String {
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &METRICS.registry);
    text
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
