//! One running stack: preflight, controller, merged spec, front, tunnel — started in that
//! order, supervised until shutdown, stopped in reverse.
//!
//! Invariants: every process group the stack starts is owned by a guard inside
//! [`RunningStack`] and recorded in the state file while it runs; [`RunningStack::stop`] ends
//! them all and removes the record. The spec the front publishes and the gate it enforces are
//! always built together from the controller's documents and the current overrides.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::events::Events;
use super::front::{Front, FrontConfig};
use super::mask::Masker;
use super::mcpo::{self, ControllerError, McpoLaunch};
use super::native::bridge::Bridge;
use super::state::{now_rfc3339, ProcessRecord, StackState, StateFile};
use super::tunnel::{self, Tunnel, TunnelError, TunnelSpec};
use crate::catalog::{Overrides, ServerReport};
use crate::config::ServerEntry;
use crate::mcp::Session;
use crate::process::{LineSink, ProcessGuard};

mod error;
mod native;
mod spec;
mod supervise;

pub use error::StackError;
pub use spec::summary_json;

/// How long mcpo and cloudflared get between SIGTERM and SIGKILL when a stack stops: mcpo
/// closes its servers' sessions on TERM, which takes a moment per server.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// Which controller serves a stack's tools, with what it needs.
pub enum ControllerPlan {
    /// mcpo, a Python process of its own (its config path is filled in at start).
    Mcpo(McpoLaunch),
    /// The native bridge, inside this process, on a listener bound to 127.0.0.1.
    Native {
        /// The bridge's listener, bound during planning.
        listener: std::net::TcpListener,
        /// The key the bridge checks (`Authorization: Bearer`); only the front knows it.
        key: String,
    },
}

impl ControllerPlan {
    /// `mcpo` or `native`.
    pub fn name(&self) -> &'static str {
        match self {
            ControllerPlan::Mcpo(_) => "mcpo",
            ControllerPlan::Native { .. } => "native",
        }
    }

    /// The controller's port and key.
    fn endpoint(&self) -> (u16, String) {
        match self {
            ControllerPlan::Mcpo(launch) => (launch.port, launch.key.clone()),
            ControllerPlan::Native { listener, key } => (
                listener.local_addr().map(|a| a.port()).unwrap_or_default(),
                key.clone(),
            ),
        }
    }
}

/// A running controller.
enum Controller {
    Mcpo(ProcessGuard),
    /// With the servers still to start and check against the tool index.
    Native((Bridge, Vec<native::Unverified>)),
}

/// Everything decided about a stack before it starts.
pub struct StackPlan {
    /// The stack's name.
    pub name: String,
    /// Its config file.
    pub config: PathBuf,
    /// Its servers.
    pub entries: Vec<ServerEntry>,
    /// The project directory (where `.mcp-launch/` lives).
    pub project_dir: PathBuf,
    /// The front's bind address.
    pub host: IpAddr,
    /// The front's listener, bound during planning so nobody takes the port meanwhile.
    pub front: std::net::TcpListener,
    /// The key clients send.
    pub api_key: String,
    /// The token of the front's admin route.
    pub admin_token: String,
    /// Which controller serves the tools.
    pub controller: ControllerPlan,
    /// The tunnel to open, if any.
    pub tunnel: Option<TunnelSpec>,
    /// `--public-url` for this stack.
    pub public_url: Option<String>,
    /// Whether `/openapi.json` needs the key.
    pub protect_spec: bool,
}

/// A stack that runs. Cheap to clone.
#[derive(Clone)]
pub struct RunningStack {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    project_dir: PathBuf,
    /// How to (re)start mcpo; `None` for the native controller.
    mcpo: Option<McpoLaunch>,
    /// The controller's base URL and key (the front and spec refreshes use them).
    upstream: (String, String),
    /// The native bridge, when it is the controller.
    bridge: Option<Bridge>,
    tunnel_spec: Option<TunnelSpec>,
    public_url_flag: Option<String>,
    /// Servers handed to the controller, in config order.
    served: Vec<ServerEntry>,
    /// Servers the overrides disable (the front answers 404 "disabled" for them).
    disabled: Vec<String>,
    front: Front,
    client: reqwest::Client,
    masker: Masker,
    events: Events,
    state: StateFile,
    record: StdMutex<StackState>,
    controller: Mutex<Option<ProcessGuard>>,
    tunnel: Mutex<Option<Tunnel>>,
    shutdown: CancellationToken,
}

/// Starts a stack from its preflight: the controller and the tunnel, then the merged spec and
/// the front. `sessions` (parallel to the plan's entries) are the preflight's open sessions,
/// which the native bridge adopts; mcpo starts its servers itself. On error everything started
/// so far is stopped again (the guards are dropped, which kills their groups).
pub async fn start(
    plan: StackPlan,
    reports: Vec<ServerReport>,
    sessions: Vec<Option<Session>>,
    overrides: &Overrides,
    masker: Masker,
    events: Events,
) -> Result<RunningStack, StackError> {
    let name = plan.name.clone();
    let (served, disabled, failures) = choose_servers(&plan.entries, &reports, overrides);
    for (server, problem) in &failures {
        events.warn(&name, format!("server {server} is left out: {problem}"));
    }
    if served.is_empty() {
        let reason = if failures.is_empty() {
            "every server is disabled".to_string()
        } else {
            failures
                .iter()
                .map(|(s, p)| format!("{s}: {p}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Err(StackError::NoServers {
            stack: name,
            reason,
        });
    }
    for spec in plan.entries.iter().filter_map(|e| e.spec.as_ref().ok()) {
        super::mask::add_server_secrets(&masker, spec);
    }
    masker.add(&plan.api_key);
    let (controller_port, controller_key) = plan.controller.endpoint();
    masker.add(&controller_key);
    masker.add(&plan.admin_token);
    let upstream = (
        format!("http://127.0.0.1:{controller_port}"),
        controller_key,
    );

    let front = Front::new(FrontConfig {
        stack: name.clone(),
        api_key: plan.api_key.clone(),
        upstream: upstream.0.clone(),
        upstream_key: upstream.1.clone(),
        protect_spec: plan.protect_spec,
        admin_token: plan.admin_token.clone(),
        forward: super::front::ForwardLimits::from_env(),
    })
    .map_err(|e| StackError::Front(e.to_string()))?;
    let port = plan
        .front
        .local_addr()
        .map(|a| a.port())
        .unwrap_or_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| StackError::Front(e.to_string()))?;

    let controller_name = plan.controller.name();
    let mut sessions = sessions.into_iter();
    let chosen: Vec<native::Chosen<'_>> = plan
        .entries
        .iter()
        .zip(&reports)
        .map(|(entry, report)| native::Chosen {
            entry,
            report,
            session: sessions.next().flatten(),
        })
        .filter(|c| served.iter().any(|s| s.name == c.entry.name))
        .collect();
    let mut mcpo_launch = None;
    // The controller and the tunnel do not depend on each other: start both at once.
    let controller = async {
        match plan.controller {
            ControllerPlan::Mcpo(mut launch) => {
                launch.config = plan
                    .project_dir
                    .join(".mcp-launch")
                    .join("stacks")
                    .join(&name)
                    .join("mcpo.json");
                let entries: Vec<&ServerEntry> = chosen.iter().map(|c| c.entry).collect();
                // Resolved secrets: in the git-ignored, owner-only project dir, and deleted on
                // stop.
                let _ = crate::project::ensure(&plan.project_dir);
                mcpo::write_config(&launch.config, &mcpo::config_for(&entries))?;
                let guard = start_controller(&name, &launch, &client, &masker, &events).await?;
                mcpo_launch = Some(launch);
                Ok::<_, StackError>(Controller::Mcpo(guard))
            }
            ControllerPlan::Native { listener, key } => {
                native::start_bridge(&name, chosen, listener, key, &events).map(Controller::Native)
            }
        }
    };
    let tunnel = async {
        match &plan.tunnel {
            Some(spec) => start_tunnel(&name, spec, &masker, &events).await.map(Some),
            None => Ok(None),
        }
    };
    let (controller, tunnel) = tokio::join!(controller, tunnel);
    let (controller, tunnel) = (controller?, tunnel?);
    let (guard, bridge, unverified) = match controller {
        Controller::Mcpo(guard) => (Some(guard), None, Vec::new()),
        Controller::Native((bridge, unverified)) => {
            // In the same process: the front calls its routes directly, not over loopback.
            front.set_local_upstream(bridge.router());
            (None, Some(bridge), unverified)
        }
    };

    let public_url = plan
        .public_url
        .clone()
        .or_else(|| tunnel.as_ref().and_then(|t| t.url.clone()))
        .unwrap_or_else(|| local_url(plan.host, port));
    let record = StackState {
        name: name.clone(),
        config: plan.config,
        supervisor: ProcessRecord::of(std::process::id() as i32),
        controller: controller_name.into(),
        controller_process: guard
            .as_ref()
            .and_then(ProcessGuard::pgid)
            .map(ProcessRecord::of),
        controller_port,
        host: plan.host.to_string(),
        port,
        tunnel: match &plan.tunnel {
            None => "none".into(),
            Some(spec) => match spec.kind {
                tunnel::TunnelKind::Quick => "quick".into(),
                tunnel::TunnelKind::Named { .. } => "named".into(),
            },
        },
        tunnel_process: tunnel
            .as_ref()
            .and_then(|t| t.guard.pgid())
            .map(ProcessRecord::of),
        public_url,
        api_key: plan.api_key.clone(),
        admin_token: plan.admin_token.clone(),
        servers: Vec::new(),
        operations: 0,
        warnings: Vec::new(),
        started_at: now_rfc3339(),
        restarts: 0,
        bridge_servers: bridge
            .as_ref()
            .map(native::server_states)
            .unwrap_or_default(),
    };
    let stack = RunningStack {
        inner: Arc::new(Inner {
            name: name.clone(),
            state: StateFile::in_project(&plan.project_dir),
            project_dir: plan.project_dir,
            mcpo: mcpo_launch,
            upstream,
            bridge: bridge.clone(),
            tunnel_spec: plan.tunnel,
            public_url_flag: plan.public_url,
            served,
            disabled,
            front: front.clone(),
            client,
            masker,
            events,
            record: StdMutex::new(record),
            controller: Mutex::new(guard),
            tunnel: Mutex::new(tunnel),
            shutdown: CancellationToken::new(),
        }),
    };
    stack.refresh_spec(None).await?;
    front.set_upstream_ready(true);
    front.set_reload_handler(stack.reload_handler());
    plan.front
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(plan.front))
        .map(|listener| {
            let token = stack.inner.shutdown.clone();
            tokio::spawn(front.serve(listener, token));
        })
        .map_err(|e| StackError::Front(e.to_string()))?;
    stack.save_record()?;
    if let Some(bridge) = bridge {
        native::follow_up(&stack, bridge, unverified);
    }
    Ok(stack)
}

/// Splits the stack's servers into those handed to the controller (enabled and reached by
/// the preflight), those the overrides disable, and those left out with the reason.
fn choose_servers(
    entries: &[ServerEntry],
    reports: &[ServerReport],
    overrides: &Overrides,
) -> (Vec<ServerEntry>, Vec<String>, Vec<(String, String)>) {
    let mut served = Vec::new();
    let mut disabled = Vec::new();
    let mut failures = Vec::new();
    for (entry, report) in entries.iter().zip(reports) {
        if overrides.is_disabled(entry) {
            disabled.push(entry.name.clone());
        } else if let Some(problem) = &report.error {
            failures.push((entry.name.clone(), problem.to_string()));
        } else {
            served.push(entry.clone());
        }
    }
    (served, disabled, failures)
}

fn local_url(host: IpAddr, port: u16) -> String {
    let host = if host.is_unspecified() {
        "127.0.0.1".to_string()
    } else if host.is_ipv6() {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    format!("http://{host}:{port}")
}

/// A sink that masks each line and logs it tagged `[process#stack]` (shown with -v or
/// --stream, always in --log-file).
fn tagged_sink(process: &'static str, stack: &str, masker: &Masker) -> LineSink {
    let tag = format!("[{process}#{stack}]");
    let masker = masker.clone();
    Arc::new(move |line: &str| {
        if !line.trim().is_empty() {
            tracing::info!(target: "mcp_launch::child", "{tag} {}", masker.mask(line));
        }
    })
}

async fn start_controller(
    stack: &str,
    launch: &McpoLaunch,
    client: &reqwest::Client,
    masker: &Masker,
    events: &Events,
) -> Result<ProcessGuard, ControllerError> {
    events.progress(stack, "starting mcpo", 0);
    let progress = |secs: u64| events.progress(stack, "waiting for mcpo", secs);
    let sink = tagged_sink("mcpo", stack, masker);
    mcpo::start(launch, client, masker, sink, &progress).await
}

async fn start_tunnel(
    stack: &str,
    spec: &TunnelSpec,
    masker: &Masker,
    events: &Events,
) -> Result<Tunnel, TunnelError> {
    events.progress(stack, "opening the tunnel", 0);
    tunnel::start(spec, tagged_sink("cloudflared", stack, masker)).await
}

impl RunningStack {
    /// The stack's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the state file records for it (key included).
    pub fn record(&self) -> StackState {
        lock(&self.inner.record).clone()
    }

    /// Writes this stack's record into the state file (replacing an older one of its name);
    /// once the stack is stopping, nothing (its record is being removed).
    fn save_record(&self) -> Result<(), StackError> {
        let record = self.record();
        let stopping = &self.inner.shutdown;
        self.inner.state.update(|state| {
            // Checked under the file's lock: `stop` cancels before it removes the record.
            if stopping.is_cancelled() {
                return;
            }
            state.stacks.retain(|s| s.name != record.name);
            state.stacks.push(record);
        })?;
        Ok(())
    }

    /// Stops the stack: the tunnel, the front, the controller (each group TERM → KILL), and
    /// removes its record from the state file. Returns the processes that were still running
    /// after it (empty when all went).
    pub async fn stop(&self) -> Vec<String> {
        let inner = &self.inner;
        inner.shutdown.cancel();
        let mut survivors = Vec::new();
        let tunnel = inner.tunnel.lock().await.take();
        let controller = inner.controller.lock().await.take();
        for (what, guard) in [
            ("cloudflared", tunnel.map(|t| t.guard)),
            ("mcpo", controller),
        ] {
            // stop_group also ends what left the group: mcpo runs each server in a session of
            // its own. The guard, dropped afterwards, finds nothing left to kill.
            if let Some(pgid) = guard.as_ref().and_then(ProcessGuard::pgid) {
                if !crate::process::stop_group(pgid, STOP_GRACE).await {
                    survivors.push(format!("{what} (process group {pgid})"));
                }
            }
        }
        if let Some(bridge) = &inner.bridge {
            bridge.shutdown().await;
        }
        // mcpo's config holds the servers' resolved secrets: it lives only while mcpo does.
        if let Some(mcpo) = &inner.mcpo {
            let _ = std::fs::remove_file(&mcpo.config);
        }
        let name = inner.name.clone();
        let me = std::process::id() as i32;
        if let Err(e) = inner.state.update(|state| {
            state
                .stacks
                .retain(|s| !(s.name == name && s.supervisor.pgid == me));
        }) {
            tracing::warn!(stack = %name, error = %e, "could not update the state file");
        }
        survivors
    }
}

fn lock<T>(mutex: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these plain-data locks leaves valid data behind.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_urls() {
        assert_eq!(
            local_url("127.0.0.1".parse().unwrap(), 8000),
            "http://127.0.0.1:8000"
        );
        assert_eq!(
            local_url("0.0.0.0".parse().unwrap(), 8000),
            "http://127.0.0.1:8000"
        );
        assert_eq!(local_url("::1".parse().unwrap(), 8000), "http://[::1]:8000");
    }
}
