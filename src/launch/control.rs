//! Acting on recorded stacks from another process: `status` checks them, `openapi` asks their
//! fronts to rebuild the spec, `down` stops them. Everything here starts from the state file.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::mcp::limits::read_capped;
use crate::process::{vouch, Expect};

use super::front::RELOAD_PATH;
use super::state::{BridgeServerState, ProcessRecord, StackState};

/// How long `down` gives a supervising `up` to stop its own stack before ending the process
/// groups itself (its children get a TERM grace each).
const SUPERVISOR_GRACE: Duration = Duration::from_secs(10);

/// How long each recorded process group gets between TERM and KILL when `down` ends it.
const GROUP_GRACE: Duration = Duration::from_secs(3);

/// The largest answer taken from a front's reload route (a summary of the stack's servers).
const MAX_RELOAD_ANSWER: usize = 16 * 1024 * 1024;

/// What a live check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// The supervising `up` still runs.
    pub supervisor: bool,
    /// The controller's group still runs (None: none recorded).
    pub controller: Option<bool>,
    /// The tunnel's group still runs (None: no tunnel).
    pub tunnel: Option<bool>,
    /// What the front's `/healthz` said: `ok`, `unavailable` (controller down) or
    /// `unreachable`.
    pub front: &'static str,
    /// The public URL answers `/healthz` (None: not checked — no tunnel).
    pub public: Option<bool>,
    /// The native bridge's servers (empty with mcpo).
    pub servers: Vec<ServerHealth>,
}

/// One server behind the native bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHealth {
    /// Its name.
    pub name: String,
    /// `up`, `restarting`, `down`, or `exited` (recorded up, but its process is gone: the
    /// bridge restarts it on the next call).
    pub state: &'static str,
    /// Restarts so far.
    pub restarts: u32,
    /// The last thing that went wrong.
    pub last_error: Option<String>,
}

impl ServerHealth {
    fn of(server: &BridgeServerState) -> ServerHealth {
        let state = match server.state.as_str() {
            "up" if server.process.is_some_and(|p| !p.group_alive()) => "exited",
            "up" => "up",
            "restarting" => "restarting",
            _ => "down",
        };
        ServerHealth {
            name: server.name.clone(),
            state,
            restarts: server.restarts,
            last_error: server.last_error.clone(),
        }
    }
}

impl Health {
    /// Everything recorded runs and answers.
    pub fn is_healthy(&self) -> bool {
        self.supervisor
            && self.controller != Some(false)
            && self.tunnel != Some(false)
            && self.front == "ok"
            && self.public != Some(false)
            && self.servers.iter().all(|s| s.state != "down")
    }

    /// The supervisor is gone: the record is stale (its processes may linger).
    pub fn is_stale(&self) -> bool {
        !self.supervisor
    }
}

/// Checks a recorded stack: its processes, its front's `/healthz`, and (with a tunnel) the
/// public URL.
///
/// The state file may be planted (it lives in the project): only a loopback front and a
/// public URL of a shape a tunnel gives are fetched ([`front_probe`], [`public_probe`]), so a
/// record cannot make `status` request an address of someone else's choosing.
pub async fn check(stack: &StackState, client: &reqwest::Client) -> Health {
    let front = match front_probe(stack) {
        None => "unreachable",
        Some(url) => match client.get(url).timeout(Duration::from_secs(2)).send().await {
            Ok(r) if r.status().is_success() => "ok",
            Ok(_) => "unavailable",
            Err(_) => "unreachable",
        },
    };
    let public = match stack.tunnel.as_str() {
        "none" => None,
        _ => Some(match public_probe(stack) {
            Some(url) => super::tunnel::probe_public(url, Duration::from_secs(3)).await,
            None => false,
        }),
    };
    Health {
        supervisor: stack.supervisor.process_alive(),
        controller: stack.controller_process.map(|p| p.group_alive()),
        tunnel: stack.tunnel_process.map(|p| p.group_alive()),
        front,
        public,
        servers: stack.bridge_servers.iter().map(ServerHealth::of).collect(),
    }
}

/// The front's `/healthz`, when the record names a loopback front (`up` binds loopback, or
/// every address, which loopback reaches); `None` for any other host.
fn front_probe(stack: &StackState) -> Option<String> {
    let host: std::net::IpAddr = match stack.host.as_str() {
        "localhost" => return Some(format!("http://127.0.0.1:{}/healthz", stack.port)),
        host => host.parse().ok()?,
    };
    (host.is_loopback() || host.is_unspecified()).then(|| format!("{}/healthz", stack.local_url()))
}

/// The public URL to probe, when it has a shape a tunnel gives: a quick tunnel's
/// `https://NAME.trycloudflare.com`, or for a named tunnel an `https` URL on a DNS name (not an
/// address, not a local name). `None` for anything else.
fn public_probe(stack: &StackState) -> Option<&str> {
    let url = reqwest::Url::parse(&stack.public_url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let is_address = host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok();
    if is_address {
        return None;
    }
    let plain = url.scheme() == "https"
        && url.port().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && matches!(url.path(), "" | "/");
    let fits = match stack.tunnel.as_str() {
        "quick" => host
            .strip_suffix(".trycloudflare.com")
            .is_some_and(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            }),
        _ => host.contains('.') && !host.ends_with(".localhost") && !host.ends_with(".local"),
    };
    (plain && fits).then_some(stack.public_url.as_str())
}

/// Why a stack's spec could not be rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The front did not answer.
    #[error("the front of stack {stack} does not answer: {source}")]
    Unreachable {
        /// The stack.
        stack: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The front's answer could not be read.
    #[error("stack {stack}: the front's answer is unreadable: {reason}")]
    BadAnswer {
        /// The stack.
        stack: String,
        /// Why.
        reason: String,
    },
    /// The front refused or failed the reload.
    #[error("stack {stack}: {message}")]
    Failed {
        /// The stack.
        stack: String,
        /// The front's message.
        message: String,
        /// The front's help.
        help: String,
    },
}

impl crate::error::Actionable for ReloadError {
    fn kind(&self) -> &'static str {
        match self {
            ReloadError::Unreachable { .. } => "front_unreachable",
            ReloadError::BadAnswer { .. } | ReloadError::Failed { .. } => "reload_failed",
        }
    }

    fn help(&self) -> String {
        match self {
            ReloadError::Unreachable { .. } => {
                "is its `up` still running? `mcp-launch status` says; `mcp-launch up` starts it"
                    .into()
            }
            ReloadError::BadAnswer { .. } => "see `mcp-launch status` and the stack's log".into(),
            ReloadError::Failed { help, .. } => help.clone(),
        }
    }
}

/// Asks a running stack's front to rebuild and republish its spec.
pub async fn reload(
    stack: &StackState,
    client: &reqwest::Client,
    public_url: Option<&str>,
) -> Result<Value, ReloadError> {
    let body = match public_url {
        Some(url) => serde_json::json!({ "public_url": url }),
        None => serde_json::json!({}),
    };
    let response = client
        .post(format!("{}{RELOAD_PATH}", stack.local_url()))
        .header("X-MCP-Launch-Admin", &stack.admin_token)
        .json(&body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| ReloadError::Unreachable {
            stack: stack.name.clone(),
            // The front's local URL holds nothing secret, but errors never carry URLs.
            source: e.without_url(),
        })?;
    let status = response.status();
    let bad_answer = |reason: String| ReloadError::BadAnswer {
        stack: stack.name.clone(),
        reason,
    };
    let body = read_capped(response, RELOAD_PATH, MAX_RELOAD_ANSWER)
        .await
        .map_err(|e| bad_answer(e.to_string()))?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| bad_answer(e.to_string()))?;
    if status.is_success() {
        return Ok(value);
    }
    let error = &value["error"];
    let text = |field: &str| error[field].as_str().map(str::to_string);
    Err(ReloadError::Failed {
        stack: stack.name.clone(),
        message: text("message").unwrap_or_else(|| format!("HTTP {status}")),
        help: text("help").unwrap_or_else(|| "see `mcp-launch status` and the stack's log".into()),
    })
}

/// What `down` did to one stack.
#[derive(Debug, Clone, Default)]
pub struct StopReport {
    /// Processes that were running and are gone now.
    pub stopped: Vec<String>,
    /// Processes still running afterwards (should be empty).
    pub survivors: Vec<String>,
    /// Recorded processes left alone because nothing proves we started them (a planted or
    /// outdated record), each with why.
    pub refused: Vec<String>,
}

/// Stops recorded stacks: asks each distinct supervising `up` once to stop (SIGTERM, by pid
/// only — it shares a process group with the user's shell; a second signal would make it give
/// up its graceful stop), waits for it, then ends whatever recorded group remains. Reports
/// come back in the order of `stacks`.
///
/// The state file is not trusted (a project may be someone else's checkout): a supervisor is
/// signalled only when it is an `mcp-launch up` working in `project` (the directory whose state
/// file recorded it), a group only when it was started by that very supervisor — each with its
/// recorded start time, as the current user (`process::vouch`).
pub async fn stop(stacks: &[StackState], project: &Path) -> Vec<StopReport> {
    let mut supervisors: Vec<ProcessRecord> = Vec::new();
    for s in stacks {
        if !supervisors.contains(&s.supervisor) {
            supervisors.push(s.supervisor);
        }
    }
    let mut outcomes: Vec<Option<Outcome>> =
        futures_util::future::join_all(supervisors.iter().map(|s| stop_supervisor(s, project)))
            .await;
    let mut reports = Vec::with_capacity(stacks.len());
    for s in stacks {
        let mut report = StopReport::default();
        // The supervisor's outcome goes to the first stack it ran.
        let i = supervisors.iter().position(|p| *p == s.supervisor);
        if let Some(outcome) = i.and_then(|i| outcomes[i].take()) {
            report.add(outcome);
        }
        for (what, process) in s.groups() {
            if let Some(outcome) = stop_recorded(&what, process, s.supervisor).await {
                report.add(outcome);
            }
        }
        reports.push(report);
    }
    reports
}

/// What happened to one recorded process.
enum Outcome {
    Stopped(String),
    Survived(String),
    Refused(String),
}

impl StopReport {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Stopped(line) => self.stopped.push(line),
            Outcome::Survived(line) => self.survivors.push(line),
            Outcome::Refused(line) => self.refused.push(line),
        }
    }
}

/// Ends one recorded group started by `supervisor`; `None` when it no longer runs.
async fn stop_recorded(
    what: &str,
    process: ProcessRecord,
    supervisor: ProcessRecord,
) -> Option<Outcome> {
    if !process.group_alive() {
        return None;
    }
    let line = format!("{what} (process group {})", process.pgid);
    let Some(started) = supervisor.started else {
        return Some(Outcome::Refused(format!(
            "{line}: its supervisor was recorded without a start time"
        )));
    };
    let expect = Expect::ChildOf {
        pid: supervisor.pgid,
        started,
    };
    Some(
        match crate::process::stop_recorded_group(
            process.pgid,
            process.started,
            &expect,
            GROUP_GRACE,
        )
        .await
        {
            Ok(true) => Outcome::Stopped(line),
            Ok(false) => Outcome::Survived(line),
            Err(why) => Outcome::Refused(format!("{line}: {why}")),
        },
    )
}

/// Stops one supervising `up`: `None` when it was not running.
async fn stop_supervisor(supervisor: &ProcessRecord, project: &Path) -> Option<Outcome> {
    let supervisor = *supervisor;
    if !supervisor.process_alive() {
        return None;
    }
    let line = format!("mcp-launch up (pid {})", supervisor.pgid);
    let ours = Expect::Supervisor {
        programs: vec![crate::process::own_program(), "mcp-launch".into()],
        dir: project.to_path_buf(),
    };
    let vouched = || vouch(supervisor.pgid, supervisor.started, &ours);
    if let Err(why) = vouched() {
        return Some(Outcome::Refused(format!("{line}: {why}")));
    }
    let pid = nix::unistd::Pid::from_raw(supervisor.pgid);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    if wait_until(|| !supervisor.process_alive(), SUPERVISOR_GRACE).await {
        return Some(Outcome::Stopped(line));
    }
    if vouched().is_ok() {
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let gone = wait_until(|| !supervisor.process_alive(), Duration::from_secs(2)).await;
    Some(if gone {
        Outcome::Stopped(format!("{line}, killed"))
    } else {
        Outcome::Survived(line)
    })
}

async fn wait_until(done: impl Fn() -> bool, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(host: &str, tunnel: &str, public_url: &str) -> StackState {
        serde_json::from_value(serde_json::json!({
            "name": "s", "config": "/p/s.json", "supervisor": {"pgid": 2, "started": null},
            "controller": "native", "controller_process": null, "controller_port": 1,
            "host": host, "port": 8000, "tunnel": tunnel, "tunnel_process": null,
            "public_url": public_url, "api_key": "k", "admin_token": "t",
            "operations": 0, "started_at": "2026-01-01T00:00:00Z",
        }))
        .unwrap()
    }

    #[test]
    fn status_probes_loopback_fronts_and_tunnel_shaped_urls_only() {
        let url = "https://a-b-c.trycloudflare.com";
        for host in ["127.0.0.1", "0.0.0.0", "::1", "localhost"] {
            assert!(front_probe(&stack(host, "none", url)).is_some(), "{host}");
        }
        for host in ["10.0.0.7", "0177.0.0.1", "evil.example", "169.254.169.254"] {
            assert!(front_probe(&stack(host, "none", url)).is_none(), "{host}");
        }
        assert!(public_probe(&stack("127.0.0.1", "quick", url)).is_some());
        assert!(public_probe(&stack("127.0.0.1", "named", "https://mcp.example.com")).is_some());
        for (tunnel, bad) in [
            ("quick", "http://127.0.0.1:9/steal"),
            ("quick", "https://evil.example"),
            ("quick", "https://x.trycloudflare.com:8443"),
            ("named", "https://169.254.169.254"),
            ("named", "https://[::1]"),
            ("named", "http://mcp.example.com"),
            ("named", "https://intranet"),
            ("named", "https://mcp.example.com/admin?x=1"),
        ] {
            assert!(
                public_probe(&stack("127.0.0.1", tunnel, bad)).is_none(),
                "{bad}"
            );
        }
    }
}
