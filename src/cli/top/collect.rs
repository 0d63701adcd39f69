//! One sample of everything running: each gateway asked over its socket (`status`, then
//! `metrics`), each `up` read from its project's state file and its front's `/metrics` (with
//! the stack's key, loopback only); and the keys' actions carried to the owning process.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::gateway::daemon::{self, Client};
use crate::launch::state::{BridgeServerState, StackState, StateFile};
use crate::observe::reading::{self, Totals};
use crate::observe::snapshot::{Process, Rates, Snapshot, Upstream};

use super::records::{self, Record};

/// How long one process may take to answer a sample: a stuck one must not hold the view.
const ANSWER_WAIT: Duration = Duration::from_millis(1500);

/// How long a stack front may take to stop or restart a server (a restart waits for its start).
const ACTION_WAIT: Duration = Duration::from_secs(35);

/// Samples again and again, keeping the last readings for rates.
pub struct Sampler {
    rates: Rates,
    http: reqwest::Client,
}

impl Sampler {
    /// A sampler with no readings yet.
    pub fn new() -> Sampler {
        Sampler {
            rates: Rates::default(),
            http: reqwest::Client::new(),
        }
    }

    /// Every running process now, with rates from the last sample.
    pub async fn sample(&mut self) -> Snapshot {
        let Ok(dir) = daemon::runtime_dir() else {
            return Snapshot::default();
        };
        let gateways = daemon::sockets(&dir).into_iter().map(gateway);
        let ups = records::live(&dir);
        let ups = ups.iter().map(|r| up(r, &self.http));
        let (gateways, ups) = tokio::join!(
            futures_util::future::join_all(gateways),
            futures_util::future::join_all(ups)
        );
        let mut read: Vec<(Process, Totals)> = gateways.into_iter().flatten().collect();
        read.extend(ups.into_iter().flatten());
        read.sort_by_key(|(p, _)| (kind_order(&p.kind), p.pid));
        let (mut interval, mut window) = (0, 0);
        let mut processes = Vec::with_capacity(read.len());
        for (mut process, totals) in read {
            let spans = self.rates.fill(&mut process, totals);
            interval = interval.max(spans.interval_ms);
            window = window.max(spans.window_ms);
            processes.push(process);
        }
        self.rates.keep_only(&processes);
        Snapshot {
            taken_unix_ms: unix_ms(),
            interval_ms: interval,
            latency_window_ms: window,
            processes,
        }
    }
}

fn kind_order(kind: &str) -> u8 {
    match kind {
        "daemon" => 0,
        "up" => 2,
        _ => 1,
    }
}

fn unix_ms() -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH);
    now.map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// A gateway's status and metrics over its socket; `None` when nothing answers there.
async fn gateway(socket: PathBuf) -> Option<(Process, Totals)> {
    let asked = tokio::time::timeout(ANSWER_WAIT, async {
        let mut client = Client::connect(&socket).await.ok()??;
        let status = client.status().await.ok()?;
        let metrics = client.metrics().await;
        Some((status, metrics))
    });
    let (status, metrics) = asked.await.ok()??;
    let text = |key: &str| status.get(key).and_then(Value::as_str).map(str::to_string);
    let pid = status["pid"].as_u64().unwrap_or_default() as u32;
    let (totals, error) = match metrics {
        Ok(text) => (reading::totals(&text), None),
        Err(e) => (Totals::default(), Some(e.to_string())),
    };
    let upstreams = status["upstreams"].as_array().into_iter().flatten();
    let process = Process {
        kind: text("kind").unwrap_or_default(),
        pid,
        started_unix: status["started_unix"].as_u64(),
        address: text("address"),
        configs: serde_json::from_value(status["configs"].clone()).unwrap_or_default(),
        cwd: text("cwd").map(PathBuf::from),
        channel: socket.display().to_string(),
        log: log_of(pid),
        mode: text("mode"),
        controls: true,
        sessions: totals.sessions,
        sparse_tokens_saved: totals.sparse_tokens_saved,
        error,
        upstreams: upstreams.map(|u| gateway_upstream(u, &totals)).collect(),
        ..Process::default()
    };
    Some((process, totals))
}

/// One upstream of a gateway: its state from the status, its figures from the metrics.
fn gateway_upstream(status: &Value, totals: &Totals) -> Upstream {
    let name = status["name"].as_str().unwrap_or_default();
    let mut upstream = Upstream::from_totals(name, totals.servers.get(name));
    upstream.state = super::super::daemon::state_word(status).to_string();
    upstream.restarts = upstream
        .restarts
        .max(status["restarts"].as_u64().unwrap_or(0));
    upstream.idle_s = status["idle_for_ms"].as_u64().map(|ms| ms / 1000);
    upstream.last_error = status["last_error"].as_str().map(str::to_string);
    upstream
}

/// An `up`'s stacks (from its project's state file) as one process, with the metrics its
/// first front serves (one registry per process: every front serves the same).
async fn up(record: &Record, http: &reqwest::Client) -> Option<(Process, Totals)> {
    let state = StateFile::in_project(&record.cwd).read().ok()?;
    let stacks: Vec<&StackState> = state
        .stacks
        .iter()
        .filter(|s| s.supervisor.pgid == record.pid)
        .collect();
    let first = stacks.first()?;
    let channel = format!("{}/metrics", first.local_url());
    let (mut totals, error) = match front_metrics(first, http).await {
        Ok(text) => (reading::totals(&text), None),
        Err(why) => (Totals::default(), Some(why)),
    };
    mcpo_figures(&stacks, &mut totals);
    let upstreams = stacks
        .iter()
        .flat_map(|s| stack_upstreams(s, &totals))
        .collect();
    let process = Process {
        kind: "up".into(),
        pid: record.pid as u32,
        started_unix: record.started.and_then(unix_start),
        address: Some(first.local_url()),
        stacks: stacks.iter().map(|s| s.name.clone()).collect(),
        configs: stacks.iter().map(|s| s.config.clone()).collect(),
        cwd: Some(record.cwd.clone()),
        channel,
        log: log_of(record.pid as u32),
        controls: stacks.iter().any(|s| !s.bridge_servers.is_empty()),
        sessions: totals.sessions,
        sparse_tokens_saved: totals.sparse_tokens_saved,
        error,
        upstreams,
        ..Process::default()
    };
    Some((process, totals))
}

/// A stack front's `/metrics`, asked only on loopback with the stack's key.
async fn front_metrics(stack: &StackState, http: &reqwest::Client) -> Result<String, String> {
    let parsed = loopback(stack, "/metrics")?;
    let answer = http
        .get(parsed)
        .header("X-API-Key", &stack.api_key)
        .timeout(ANSWER_WAIT)
        .send()
        .await
        .map_err(|e| format!("its front does not answer: {}", e.without_url()))?;
    if !answer.status().is_success() {
        return Err(format!(
            "its front answered {} to /metrics",
            answer.status()
        ));
    }
    answer.text().await.map_err(|e| e.without_url().to_string())
}

/// `path` on `stack`'s front, when the front is on loopback: the state file lives in the
/// project and could name any address, and what is sent there carries the stack's secrets.
fn loopback(stack: &StackState, path: &str) -> Result<reqwest::Url, String> {
    let url = format!("{}{path}", stack.local_url());
    let parsed = reqwest::Url::parse(&url).map_err(|e| e.to_string())?;
    let host = parsed.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let is_loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match is_loopback {
        true => Ok(parsed),
        false => Err(format!("its front is not on loopback ({})", stack.host)),
    }
}

/// The figures of mcpo stacks' servers: mcpo runs them, so the front's REST requests to each
/// (calls, errors, latency) stand for its calls — filed under the server's name as an
/// upstream's are, so rates and quantiles come the same way. (`up`'s first check of the
/// servers leaves series of their name, without calls: those are replaced.)
fn mcpo_figures(stacks: &[&StackState], totals: &mut Totals) {
    let mcpo = stacks.iter().filter(|s| s.bridge_servers.is_empty());
    for server in mcpo.flat_map(|s| &s.servers) {
        let Some(rest) = totals.rest.get(&server.name) else {
            continue;
        };
        let entry = totals.servers.entry(server.name.clone()).or_default();
        entry.calls = rest.calls;
        entry.errors = rest.errors;
        entry.buckets.clone_from(&rest.buckets);
    }
}

/// A stack's servers: the native bridge's, with their states; mcpo's with the figures of
/// their REST requests ([`mcpo_figures`]).
fn stack_upstreams(stack: &StackState, totals: &Totals) -> Vec<Upstream> {
    if stack.bridge_servers.is_empty() {
        return stack
            .servers
            .iter()
            .map(|s| {
                let mut upstream = Upstream::from_totals(&s.name, totals.servers.get(&s.name));
                upstream.state.clone_from(&stack.controller);
                upstream
            })
            .collect();
    }
    stack
        .bridge_servers
        .iter()
        .map(|server| bridge_upstream(server, totals))
        .collect()
}

fn bridge_upstream(server: &BridgeServerState, totals: &Totals) -> Upstream {
    let short = server.name.rsplit('/').next().unwrap_or(&server.name);
    let figures = totals
        .servers
        .get(&server.name)
        .or_else(|| totals.servers.get(short));
    let mut upstream = Upstream::from_totals(&server.name, figures);
    let exited = server.process.is_some_and(|p| !p.group_alive());
    upstream.state = match server.state.as_str() {
        "up" if exited => "exited".into(),
        other => other.into(),
    };
    upstream.restarts = upstream.restarts.max(u64::from(server.restarts));
    upstream.last_error.clone_from(&server.last_error);
    upstream
}

/// Seconds since the epoch of a start time in clock ticks since boot.
fn unix_start(ticks: u64) -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let boot: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    Some(boot + ticks / u64::try_from(per_second).ok()?.max(1))
}

/// The file a process's standard error goes to, when it is a regular file (a daemon started
/// on demand, or anything run with `2>file`); `None` for a terminal or a pipe.
pub fn log_of(pid: u32) -> Option<PathBuf> {
    let target = std::fs::read_link(format!("/proc/{pid}/fd/2")).ok()?;
    std::fs::metadata(&target)
        .is_ok_and(|m| m.is_file())
        .then_some(target)
}

/// What a key asks of an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// End its session now (it starts again on its next call).
    Stop,
    /// End its session and start it again at once.
    Restart,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Stop => "stop",
            Action::Restart => "restart",
        }
    }
}

/// Carries `action` on `server` to `process`: over a gateway's socket, or to an `up`'s stack
/// front (its admin route acts on the native bridge's pool). The answer in words, or why not.
pub async fn control(process: &Process, server: &str, action: Action) -> Result<String, String> {
    let answer = if process.kind == "up" {
        bridge_server(process, server, action).await?
    } else {
        let socket = Path::new(&process.channel);
        let mut client = match Client::connect(socket).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(format!("pid {} no longer answers", process.pid)),
            Err(e) => return Err(e.to_string()),
        };
        let answer = client.upstream(server, action.word()).await;
        answer.map_err(|e| e.to_string())?
    };
    Ok(match (action, answer["error"].as_str()) {
        (Action::Restart, Some(error)) => format!("{server}: restart failed: {error}"),
        (Action::Restart, None) => format!("{server} restarted"),
        (Action::Stop, _) => format!("{server} stopped (its next call starts it)"),
    })
}

/// `action` on the native bridge server `server` of the `up` `process`: its stack front's
/// admin route (`POST /_mcp-launch/upstream`, the stack's admin token, loopback only). An
/// mcpo stack's servers are mcpo's to run.
async fn bridge_server(process: &Process, server: &str, action: Action) -> Result<Value, String> {
    let cwd = process.cwd.as_deref().ok_or("no project directory")?;
    let state = StateFile::in_project(cwd)
        .read()
        .map_err(|e| e.to_string())?;
    let pid = process.pid as i32;
    let mut stacks = state.stacks.iter().filter(|s| s.supervisor.pgid == pid);
    let stack = stacks
        .find(|s| s.bridge_servers.iter().any(|b| b.name == server))
        .ok_or(format!(
            "{server} is not a native bridge server (mcpo runs an mcpo stack's servers)"
        ))?;
    let url = loopback(stack, crate::launch::front::UPSTREAM_PATH)?;
    let answer = reqwest::Client::new()
        .post(url)
        .header(crate::auth::ADMIN_HEADER, &stack.admin_token)
        .json(&serde_json::json!({"server": server, "action": action.word()}))
        .timeout(ACTION_WAIT)
        .send()
        .await
        .map_err(|e| format!("its front does not answer: {}", e.without_url()))?;
    let ok = answer.status().is_success();
    let body: Value = answer.json().await.unwrap_or_default();
    match ok {
        true => Ok(body),
        false => Err(body["error"]["message"]
            .as_str()
            .unwrap_or("its front refused")
            .to_string()),
    }
}
