//! The exposition read back: `mcp-launch top` asks each running process for the text
//! [`super::metrics::render`] writes (over a gateway's socket, or a stack front's `/metrics`)
//! and turns it into per-upstream figures — calls, errors, latency quantiles from the
//! histogram's buckets, restarts, tokens and bytes cut — and, from two readings, rates.
//!
//! Only the series `metrics.rs` writes are read; anything else in the text is skipped, and a
//! line that does not parse is skipped too (the text comes from another process: never a
//! panic on it).

use std::collections::BTreeMap;

/// The upstream call histogram's series (`_bucket`, `_count` follow).
const UPSTREAM_SECONDS: &str = "mcp_launch_upstream_request_duration_seconds";

/// A stack front's REST request histogram's buckets (by server only).
const REST_BUCKETS: &str = "mcp_launch_rest_request_duration_seconds_bucket";

/// Histogram buckets being added up: per server, per bound.
type Buckets = BTreeMap<String, BTreeMap<Bound, u64>>;

/// One upstream server's figures since its process started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerTotals {
    /// `tools/call` requests sent to it (answered or failed).
    pub calls: u64,
    /// Those that failed (a JSON-RPC error, a timeout, a lost session).
    pub errors: u64,
    /// The call latency histogram: `(upper bound in seconds, calls at or under it)`, the
    /// cumulative counts of every outcome added up, bounds ascending (`+Inf` last).
    pub buckets: Vec<(f64, u64)>,
    /// Whether it has a live session (`None`: the text did not say).
    pub is_up: Option<bool>,
    /// Starts after a lost session.
    pub restarts: u64,
    /// Results of its cut to their token budget.
    pub cuts: u64,
    /// Bytes of its results kept out of answers by budgets (behind handles).
    pub cut_bytes: u64,
    /// Tokens of its results' text kept out of answers by budgets.
    pub cut_tokens: u64,
}

/// A process's figures since it started, as one reading of its exposition gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Per upstream server, by configured name.
    pub servers: BTreeMap<String, ServerTotals>,
    /// Requests clients sent the gateway (every method and outcome).
    pub requests: u64,
    /// Client sessions open on its HTTP endpoint.
    pub sessions: u64,
    /// Tokens of tool definitions sparse `tools/list` answers did not send.
    pub sparse_tokens_saved: u64,
    /// A stack front's REST requests, per server it exposes: `calls` those naming one of the
    /// server's tools, `errors` those of them answered with an error (not a tool's own
    /// `isError`: 424), `buckets` the time to answer every REST request of the server's.
    /// Behind mcpo these are the only figures of its servers (mcpo runs them).
    pub rest: BTreeMap<String, ServerTotals>,
}

impl ServerTotals {
    /// The calls' histogram between an earlier reading `before` and this one (bucket by
    /// bucket; a bucket that shrank — a counter reset — counts from zero).
    pub fn buckets_since(&self, before: &ServerTotals) -> ServerTotals {
        let earlier = |bound: f64| {
            let at = before
                .buckets
                .iter()
                .find(|(b, _)| b.total_cmp(&bound).is_eq());
            at.map_or(0, |(_, n)| *n)
        };
        let buckets = self.buckets.iter();
        ServerTotals {
            buckets: buckets
                .map(|&(b, n)| (b, n.saturating_sub(earlier(b))))
                .collect(),
            ..ServerTotals::default()
        }
    }

    /// The latency under which a share `q` (0..=1) of the calls fell, in seconds, read from
    /// the buckets as Prometheus' `histogram_quantile` does (linear within the bucket); `None`
    /// without calls. A quantile in the `+Inf` bucket reads as the largest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let (mut lower, mut below) = (0.0, 0u64);
        for &(bound, count) in &self.buckets {
            if count as f64 >= rank {
                if bound.is_infinite() {
                    return Some(lower);
                }
                let inside = count.saturating_sub(below);
                let share = match inside {
                    0 => 1.0,
                    n => (rank - below as f64) / n as f64,
                };
                return Some(lower + (bound - lower) * share);
            }
            (lower, below) = (bound, count);
        }
        Some(lower)
    }
}

/// Reads an exposition into per-server totals.
pub fn totals(text: &str) -> Totals {
    let mut totals = Totals::default();
    let mut buckets = Buckets::new();
    let mut rest_buckets = Buckets::new();
    for sample in text.lines().filter_map(sample) {
        let count = sample.value.max(0.0) as u64;
        match sample.name {
            "mcp_launch_requests_total" => totals.requests += count,
            "mcp_launch_sessions" => totals.sessions = count,
            "mcp_launch_sparse_tokens_saved_total" => totals.sparse_tokens_saved = count,
            _ => {}
        }
        let Some(server) = sample.label("server") else {
            continue;
        };
        if server.is_empty() {
            continue;
        }
        if sample.name.starts_with("mcp_launch_rest_") {
            read_rest(&mut totals, &mut rest_buckets, &sample, count);
            continue;
        }
        let entry = totals.servers.entry(server.to_string()).or_default();
        let is_call = sample.label("method") == Some("tools/call");
        match sample.name.strip_prefix(UPSTREAM_SECONDS) {
            Some("_count") if is_call => {
                entry.calls += count;
                if sample.label("outcome") == Some("error") {
                    entry.errors += count;
                }
            }
            Some("_bucket") if is_call => add_bucket(&mut buckets, &sample, count),
            _ => {}
        }
        match sample.name {
            "mcp_launch_upstream_up" => entry.is_up = Some(count > 0),
            "mcp_launch_upstream_restarts_total" => entry.restarts = count,
            "mcp_launch_output_cuts_total" => entry.cuts = count,
            "mcp_launch_output_cut_bytes_total" => entry.cut_bytes = count,
            "mcp_launch_output_cut_tokens_total" => entry.cut_tokens = count,
            _ => {}
        }
    }
    set_buckets(&mut totals.servers, buckets);
    set_buckets(&mut totals.rest, rest_buckets);
    totals
}

/// A sample of the REST families (its `server` label set) into `totals.rest`.
fn read_rest(totals: &mut Totals, buckets: &mut Buckets, sample: &Sample<'_>, count: u64) {
    let server = sample.label("server").unwrap_or_default();
    if sample.name == REST_BUCKETS {
        totals.rest.entry(server.to_string()).or_default();
        add_bucket(buckets, sample, count);
        return;
    }
    let is_call = sample.label("tool").is_some_and(|t| t != "other");
    if sample.name != "mcp_launch_rest_requests_total" || !is_call {
        return;
    }
    let entry = totals.rest.entry(server.to_string()).or_default();
    entry.calls += count;
    if sample.label("outcome") == Some("error") {
        entry.errors += count;
    }
}

/// A `_bucket` sample added to its server's bound (outcomes add up).
fn add_bucket(buckets: &mut Buckets, sample: &Sample<'_>, count: u64) {
    let server = sample.label("server").unwrap_or_default();
    if let Some(bound) = sample.label("le").and_then(|le| le.parse::<f64>().ok()) {
        let bounds = buckets.entry(server.to_string()).or_default();
        *bounds.entry(Bound(bound)).or_default() += count;
    }
}

/// The buckets added up, into the servers' entries.
fn set_buckets(servers: &mut BTreeMap<String, ServerTotals>, buckets: Buckets) {
    for (server, bounds) in buckets {
        if let Some(entry) = servers.get_mut(&server) {
            entry.buckets = bounds.into_iter().map(|(b, n)| (b.0, n)).collect();
        }
    }
}

/// A bucket bound as a map key (bounds are never NaN: they parse from our own `le`s).
#[derive(Debug, Clone, Copy)]
struct Bound(f64);

impl PartialEq for Bound {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Bound {}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One sample line, borrowed from the text.
struct Sample<'a> {
    name: &'a str,
    labels: Vec<(&'a str, String)>,
    value: f64,
}

impl Sample<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `name{k="v",…} value` (comments and anything malformed: `None`).
fn sample(line: &str) -> Option<Sample<'_>> {
    if line.starts_with('#') {
        return None;
    }
    let (head, value) = line.rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let (name, labels) = match head.split_once('{') {
        Some((name, rest)) => (name, label_pairs(rest.strip_suffix('}')?)?),
        None => (head, Vec::new()),
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// `k="v",…` with OpenMetrics' escapes in values (`\\`, `\"`, `\n`).
fn label_pairs(mut rest: &str) -> Option<Vec<(&str, String)>> {
    let mut pairs = Vec::new();
    while !rest.is_empty() {
        let (key, quoted) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut escaped = false;
        let mut end = None;
        for (at, c) in quoted.char_indices() {
            if escaped {
                value.push(if c == 'n' { '\n' } else { c });
                escaped = false;
                continue;
            }
            match c {
                '\\' => escaped = true,
                '"' => {
                    end = Some(at);
                    break;
                }
                c => value.push(c),
            }
        }
        pairs.push((key, value));
        rest = quoted[end? + 1..].trim_start_matches(',');
    }
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP mcp_launch_requests Requests.
# TYPE mcp_launch_requests counter
mcp_launch_requests_total{method="tools/call",server="a",tool="echo",outcome="ok"} 7
mcp_launch_requests_total{method="ping",server="",tool="",outcome="ok"} 3
mcp_launch_upstream_request_duration_seconds_bucket{server="a",method="tools/call",outcome="ok",le="0.001"} 2
mcp_launch_upstream_request_duration_seconds_bucket{server="a",method="tools/call",outcome="ok",le="0.002"} 4
mcp_launch_upstream_request_duration_seconds_bucket{server="a",method="tools/call",outcome="ok",le="+Inf"} 4
mcp_launch_upstream_request_duration_seconds_count{server="a",method="tools/call",outcome="ok"} 4
mcp_launch_upstream_request_duration_seconds_bucket{server="a",method="tools/call",outcome="error",le="0.001"} 0
mcp_launch_upstream_request_duration_seconds_bucket{server="a",method="tools/call",outcome="error",le="0.002"} 0
mcp_launch_upstream_request_duration_seconds_bucket{server="a",method="tools/call",outcome="error",le="+Inf"} 1
mcp_launch_upstream_request_duration_seconds_count{server="a",method="tools/call",outcome="error"} 1
mcp_launch_upstream_request_duration_seconds_count{server="a",method="tools/list",outcome="ok"} 9
mcp_launch_upstream_up{server="a"} 1
mcp_launch_upstream_up{server="q\"b"} 0
mcp_launch_upstream_restarts_total{server="a"} 2
mcp_launch_output_cut_bytes_total{server="a"} 5000
mcp_launch_output_cut_tokens_total{server="a"} 1200
mcp_launch_sessions 2
mcp_launch_rest_requests_total{server="m",tool="now",outcome="ok"} 3
mcp_launch_rest_requests_total{server="m",tool="now",outcome="error"} 1
mcp_launch_rest_requests_total{server="m",tool="other",outcome="ok"} 5
mcp_launch_rest_request_duration_seconds_bucket{server="m",le="0.01"} 8
mcp_launch_rest_request_duration_seconds_bucket{server="m",le="+Inf"} 9
garbage{server="a" 3
# EOF
"#;

    #[test]
    fn an_exposition_reads_as_per_server_totals() {
        let totals = totals(TEXT);
        assert_eq!(totals.requests, 10);
        assert_eq!(totals.sessions, 2);
        let a = &totals.servers["a"];
        assert_eq!(
            (a.calls, a.errors, a.restarts, a.cut_bytes, a.cut_tokens),
            (5, 1, 2, 5000, 1200)
        );
        assert_eq!(a.is_up, Some(true));
        assert_eq!(
            a.buckets,
            vec![(0.001, 2), (0.002, 4), (f64::INFINITY, 5)],
            "outcomes added up by bound"
        );
        assert_eq!(totals.servers["q\"b"].is_up, Some(false), "escapes read");
        let m = &totals.rest["m"];
        assert_eq!((m.calls, m.errors), (4, 1), "calls name a tool: {m:?}");
        assert_eq!(m.buckets, vec![(0.01, 8), (f64::INFINITY, 9)]);
        assert!(!totals.servers.contains_key("m"), "REST figures kept apart");
    }

    #[test]
    fn quantiles_interpolate_within_their_bucket() {
        let a = &totals(TEXT).servers["a"];
        // p50: rank 2.5 of 5, in (0.001, 0.002] holding 2 calls: a quarter of the way in.
        let p50 = a.quantile(0.5).unwrap();
        assert!((p50 - 0.00125).abs() < 1e-9, "{p50}");
        // p99 falls in +Inf: the largest finite bound.
        assert_eq!(a.quantile(0.99), Some(0.002));
        assert_eq!(ServerTotals::default().quantile(0.5), None);
    }

    #[test]
    fn our_own_exposition_reads_back() {
        super::super::upstream_known("reading-srv", true);
        super::super::upstream_request(
            "reading-srv",
            "tools/call",
            std::time::Duration::from_millis(3),
            true,
        );
        let totals = totals(&super::super::metrics::render());
        let srv = &totals.servers["reading-srv"];
        assert_eq!((srv.calls, srv.is_up), (1, Some(true)));
        let p50 = srv.quantile(0.5).unwrap();
        assert!(p50 > 0.001 && p50 <= 0.0033, "{p50}");
    }
}
