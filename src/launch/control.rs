//! Acting on recorded stacks from another process: `status` checks them, `openapi` asks their
//! fronts to rebuild the spec, `down` stops them. Everything here starts from the state file.

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
pub async fn check(stack: &StackState, client: &reqwest::Client) -> Health {
    let front = match client
        .get(format!("{}/healthz", stack.local_url()))
        .timeout(Duration::from_secs(2))
        .send()
        .await
    {
        Ok(r) if r.status().is_success() => "ok",
        Ok(_) => "unavailable",
        Err(_) => "unreachable",
    };
    let public = if stack.tunnel == "none" {
        None
    } else {
        Some(super::tunnel::probe_public(&stack.public_url, Duration::from_secs(3)).await)
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
/// signalled only when it runs mcp-launch, a group only when it was started by that very
/// supervisor — each with its recorded start time, as the current user (`process::vouch`).
pub async fn stop(stacks: &[StackState]) -> Vec<StopReport> {
    let mut supervisors: Vec<ProcessRecord> = Vec::new();
    for s in stacks {
        if !supervisors.contains(&s.supervisor) {
            supervisors.push(s.supervisor);
        }
    }
    let mut outcomes: Vec<Option<Outcome>> =
        futures_util::future::join_all(supervisors.iter().map(stop_supervisor)).await;
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
async fn stop_supervisor(supervisor: &ProcessRecord) -> Option<Outcome> {
    let supervisor = *supervisor;
    if !supervisor.process_alive() {
        return None;
    }
    let line = format!("mcp-launch up (pid {})", supervisor.pgid);
    let ours = Expect::Program(vec![crate::process::own_program(), "mcp-launch".into()]);
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
