//! What `mcp-launch top` shows: every running process of ours (gateways, daemons, `up`
//! stacks) and per upstream server its state and figures, as one [`Snapshot`]. `top --json`
//! prints it as it is here (the field names are documented in docs/TOP.md and stay stable);
//! the TUI draws it.
//!
//! Figures come from the process's own metrics ([`super::reading::Totals`]): totals since the
//! process started, rates from two readings, and latency quantiles over the last
//! [`LATENCY_WINDOW`] of readings ([`Rates`]: the histograms' difference).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::reading::{ServerTotals, Totals};

/// Every process found, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// When it was taken (milliseconds since the Unix epoch).
    pub taken_unix_ms: u64,
    /// The time between the two readings rates come from, in milliseconds (0: one reading,
    /// no rates).
    pub interval_ms: u64,
    /// The time the latency quantiles (`p50_ms`, `p99_ms`) cover, in milliseconds: from the
    /// oldest reading kept (at most [`LATENCY_WINDOW`] ago) to this one (0: one reading, no
    /// quantiles).
    pub latency_window_ms: u64,
    /// The processes, daemons first, then gateways, then `up` stacks; by pid within a kind.
    pub processes: Vec<Process>,
}

/// One running process of ours.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Process {
    /// `daemon`, `stdio`, `http` (a `serve`) or `up`.
    pub kind: String,
    /// Its process id.
    pub pid: u32,
    /// When it started (seconds since the Unix epoch), when it says.
    pub started_unix: Option<u64>,
    /// The HTTP address of an `http` gateway; the front's URL of an `up` stack.
    pub address: Option<String>,
    /// The stacks an `up` runs (empty for a gateway).
    pub stacks: Vec<String>,
    /// The config files it serves.
    pub configs: Vec<PathBuf>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// Where it was read: a gateway's socket, or an `up` stack's `/metrics` URL.
    pub channel: String,
    /// Its log file, when its standard error goes to one.
    pub log: Option<PathBuf>,
    /// `sparse` or `full` for a gateway.
    pub mode: Option<String>,
    /// Whether its upstreams can be stopped and restarted from `top` (gateways, and an `up`
    /// with a native bridge: yes; mcpo runs its servers itself).
    pub controls: bool,
    /// Requests its clients sent per second (between the two readings).
    pub requests_per_s: Option<f64>,
    /// Client sessions open on its HTTP endpoint.
    pub sessions: u64,
    /// Tokens of tool definitions its sparse `tools/list` answers did not send.
    pub sparse_tokens_saved: u64,
    /// Why part of it could not be read (its metrics, its state), if so.
    pub error: Option<String>,
    /// Its upstream servers.
    pub upstreams: Vec<Upstream>,
}

/// One upstream server of a process.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Upstream {
    /// Its configured name.
    pub name: String,
    /// `up`, `restarting`, `down` (failed), `stopped`, `not started`, `exited`.
    pub state: String,
    /// `tools/call` requests sent to it since its process started.
    pub calls: u64,
    /// Calls per second between the two readings.
    pub calls_per_s: Option<f64>,
    /// Median call latency in milliseconds over the latency window (the snapshot's
    /// `latency_window_ms`, from the histograms' difference); `None` without calls in it.
    pub p50_ms: Option<f64>,
    /// 99th percentile call latency in milliseconds over the latency window.
    pub p99_ms: Option<f64>,
    /// Calls that failed (error, timeout, lost session) since its process started.
    pub errors: u64,
    /// Starts after a lost session.
    pub restarts: u64,
    /// While up: seconds since its last request ended.
    pub idle_s: Option<u64>,
    /// Results cut to their token budget.
    pub cuts: u64,
    /// Bytes of its results the budgets kept out of answers (behind handles).
    pub cut_bytes: u64,
    /// Tokens of its results' text the budgets kept out of answers.
    pub cut_tokens: u64,
    /// The last thing that went wrong.
    pub last_error: Option<String>,
}

impl Upstream {
    /// An upstream named `name` with its figures from `totals` (state and the rest are the
    /// caller's, from the process's own status).
    pub fn from_totals(name: &str, totals: Option<&ServerTotals>) -> Upstream {
        let mut upstream = Upstream {
            name: name.to_string(),
            ..Upstream::default()
        };
        if let Some(t) = totals {
            upstream.calls = t.calls;
            upstream.errors = t.errors;
            upstream.restarts = t.restarts;
            upstream.cuts = t.cuts;
            upstream.cut_bytes = t.cut_bytes;
            upstream.cut_tokens = t.cut_tokens;
            upstream.state = match t.is_up {
                Some(true) => "up".into(),
                Some(false) => "down".into(),
                None => String::new(),
            };
        }
        upstream
    }
}

/// How far back the latency quantiles look: recent enough to show a slow minute, long
/// enough to hold a few calls of a quiet server.
pub const LATENCY_WINDOW: Duration = Duration::from_secs(60);

/// The readings of each process over the last [`LATENCY_WINDOW`], so the next sample can tell
/// rates (from the last) and recent quantiles (from the oldest).
#[derive(Debug, Default)]
pub struct Rates {
    kept: HashMap<(u32, String), VecDeque<(Instant, Totals)>>,
}

/// What [`Rates::fill`] measured over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spans {
    /// Milliseconds since the last reading (rates).
    pub interval_ms: u64,
    /// Milliseconds since the oldest reading kept (quantiles).
    pub window_ms: u64,
}

impl Rates {
    /// Fills `process`'s rates (since the last reading) and quantiles (since the oldest kept,
    /// within [`LATENCY_WINDOW`]) from `totals`, read just now, then keeps it. Nothing is
    /// filled the first time.
    pub fn fill(&mut self, process: &mut Process, totals: Totals) -> Spans {
        let key = (process.pid, process.channel.clone());
        let now = Instant::now();
        let kept = self.kept.entry(key).or_default();
        while kept
            .front()
            .is_some_and(|(then, _)| now.duration_since(*then) > LATENCY_WINDOW)
        {
            kept.pop_front();
        }
        let mut spans = Spans::default();
        if let Some((then, last)) = kept.back() {
            spans.interval_ms = fill_rates(process, &totals, last, now.duration_since(*then));
        }
        if let Some((then, oldest)) = kept.front() {
            spans.window_ms = now.duration_since(*then).as_millis() as u64;
            fill_quantiles(process, &totals, oldest);
        }
        kept.push_back((now, totals));
        spans
    }

    /// Forgets processes no longer running (keeps those of `processes`).
    pub fn keep_only(&mut self, processes: &[Process]) {
        self.kept.retain(|(pid, channel), _| {
            processes
                .iter()
                .any(|p| p.pid == *pid && p.channel == *channel)
        });
    }
}

/// Calls and requests per second between `before` and `now`, `took` apart; the interval in
/// milliseconds.
fn fill_rates(process: &mut Process, now: &Totals, before: &Totals, took: Duration) -> u64 {
    let secs = took.as_secs_f64();
    if secs <= 0.0 {
        return 0;
    }
    let per_s = |now: u64, before: u64| {
        let per_s = now.saturating_sub(before) as f64 / secs;
        Some((per_s * 100.0).round() / 100.0)
    };
    process.requests_per_s = per_s(now.requests, before.requests);
    for upstream in &mut process.upstreams {
        let was = before.servers.get(&upstream.name).map_or(0, |t| t.calls);
        upstream.calls_per_s = per_s(upstream.calls, was);
    }
    (secs * 1000.0) as u64
}

/// Each upstream's p50 and p99 over the calls made between `oldest` and `now`.
fn fill_quantiles(process: &mut Process, now: &Totals, oldest: &Totals) {
    for upstream in &mut process.upstreams {
        let Some(current) = now.servers.get(&upstream.name) else {
            continue;
        };
        let recent = match oldest.servers.get(&upstream.name) {
            Some(before) => current.buckets_since(before),
            None => current.clone(),
        };
        let ms = |q| {
            recent
                .quantile(q)
                .map(|s| (s * 1000.0 * 100.0).round() / 100.0)
        };
        upstream.p50_ms = ms(0.5);
        upstream.p99_ms = ms(0.99);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(calls: u64) -> Totals {
        let mut totals = Totals {
            requests: calls * 2,
            ..Totals::default()
        };
        let server = ServerTotals {
            calls,
            buckets: vec![(0.001, calls), (f64::INFINITY, calls)],
            is_up: Some(true),
            ..ServerTotals::default()
        };
        totals.servers.insert("a".into(), server);
        totals
    }

    fn process(totals: &Totals) -> Process {
        Process {
            pid: 7,
            channel: "s".into(),
            upstreams: vec![Upstream::from_totals("a", totals.servers.get("a"))],
            ..Process::default()
        }
    }

    #[test]
    fn rates_come_from_two_readings_of_the_same_process() {
        let mut rates = Rates::default();
        let first = totals(10);
        let mut p = process(&first);
        let spans = rates.fill(&mut p, first);
        assert_eq!(spans, Spans::default(), "no rate from one reading");
        assert_eq!(p.upstreams[0].calls_per_s, None);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let second = totals(15);
        let mut p = process(&second);
        let interval = rates.fill(&mut p, second).interval_ms;
        assert!(interval >= 50, "{interval}");
        let per_s = p.upstreams[0].calls_per_s.unwrap();
        assert!(per_s > 0.0 && per_s <= 100.0, "{per_s}");
        assert_eq!(p.upstreams[0].state, "up");
        assert!(p.upstreams[0].p50_ms.unwrap() <= 1.0);
        rates.keep_only(&[]);
        assert!(rates.kept.is_empty());
    }

    /// One upstream's reading: `fast` calls under 1 ms and `slow` between 0.5 and 1 s.
    fn latencies(fast: u64, slow: u64) -> Totals {
        let mut totals = Totals::default();
        let calls = fast + slow;
        let server = ServerTotals {
            calls,
            buckets: vec![
                (0.001, fast),
                (0.5, fast),
                (1.0, calls),
                (f64::INFINITY, calls),
            ],
            ..ServerTotals::default()
        };
        totals.servers.insert("a".into(), server);
        totals
    }

    /// A server slow since start and fast lately reads fast: the quantiles cover the calls
    /// of the window (between the readings), not every call since its process started.
    #[test]
    fn quantiles_cover_the_recent_window_not_the_whole_run() {
        let mut rates = Rates::default();
        let slow_start = latencies(0, 1000);
        let mut p = process(&slow_start);
        rates.fill(&mut p, slow_start);
        assert_eq!(p.upstreams[0].p99_ms, None, "one reading: no window yet");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let fast_lately = latencies(100, 1000);
        let mut p = process(&fast_lately);
        let spans = rates.fill(&mut p, fast_lately);
        assert!(spans.window_ms >= 20, "{spans:?}");
        let p99 = p.upstreams[0].p99_ms.unwrap();
        assert!(p99 <= 1.0, "the recent calls were all under 1 ms: {p99}");
        let quiet = latencies(100, 1000);
        let mut p = process(&quiet);
        rates.fill(&mut p, quiet);
        assert!(
            p.upstreams[0].p99_ms.unwrap() <= 1.0,
            "the window starts at the oldest reading kept"
        );
    }
}
