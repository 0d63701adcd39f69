//! What `mcp-launch top` shows: every running process of ours (gateways, daemons, `up`
//! stacks) and per upstream server its state and figures, as one [`Snapshot`]. `top --json`
//! prints it as it is here (the field names are documented in docs/TOP.md and stay stable);
//! the TUI draws it.
//!
//! Figures come from the process's own metrics ([`super::reading::Totals`]): totals since the
//! process started, and rates from two readings ([`Rates`]).

use std::collections::HashMap;
use std::path::PathBuf;

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
    /// Whether its upstreams can be stopped and restarted from `top` (gateways: yes).
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
    /// Median call latency in milliseconds, since its process started (from the histogram).
    pub p50_ms: Option<f64>,
    /// 99th percentile call latency in milliseconds, since its process started.
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
            let ms = |q| t.quantile(q).map(|s| (s * 1000.0 * 100.0).round() / 100.0);
            upstream.p50_ms = ms(0.5);
            upstream.p99_ms = ms(0.99);
            upstream.state = match t.is_up {
                Some(true) => "up".into(),
                Some(false) => "down".into(),
                None => String::new(),
            };
        }
        upstream
    }
}

/// The readings of each process at the last sample, so the next one can tell rates.
#[derive(Debug, Default)]
pub struct Rates {
    last: HashMap<(u32, String), (std::time::Instant, Totals)>,
}

impl Rates {
    /// Fills `process`'s rates from `totals` (read just now) and the reading kept from the
    /// last call, then keeps this one. The interval, in milliseconds (0 the first time).
    pub fn fill(&mut self, process: &mut Process, totals: Totals) -> u64 {
        let key = (process.pid, process.channel.clone());
        let now = std::time::Instant::now();
        let mut interval = 0;
        if let Some((then, before)) = self.last.get(&key) {
            let secs = now.duration_since(*then).as_secs_f64();
            if secs > 0.0 {
                interval = (secs * 1000.0) as u64;
                let per_s = |now: u64, before: u64| {
                    let per_s = now.saturating_sub(before) as f64 / secs;
                    Some((per_s * 100.0).round() / 100.0)
                };
                process.requests_per_s = per_s(totals.requests, before.requests);
                for upstream in &mut process.upstreams {
                    let was = before.servers.get(&upstream.name).map_or(0, |t| t.calls);
                    upstream.calls_per_s = per_s(upstream.calls, was);
                }
            }
        }
        self.last.insert(key, (now, totals));
        interval
    }

    /// Forgets processes no longer running (keeps those of `processes`).
    pub fn keep_only(&mut self, processes: &[Process]) {
        self.last.retain(|(pid, channel), _| {
            processes
                .iter()
                .any(|p| p.pid == *pid && p.channel == *channel)
        });
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
        assert_eq!(rates.fill(&mut p, first), 0, "no rate from one reading");
        assert_eq!(p.upstreams[0].calls_per_s, None);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let second = totals(15);
        let mut p = process(&second);
        let interval = rates.fill(&mut p, second);
        assert!(interval >= 50, "{interval}");
        let per_s = p.upstreams[0].calls_per_s.unwrap();
        assert!(per_s > 0.0 && per_s <= 100.0, "{per_s}");
        assert_eq!(p.upstreams[0].state, "up");
        assert!(p.upstreams[0].p50_ms.unwrap() <= 1.0);
        rates.keep_only(&[]);
        assert!(rates.last.is_empty());
    }
}
