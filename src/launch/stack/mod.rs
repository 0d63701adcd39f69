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

use super::controller::mcpo::{self, ControllerError, McpoLaunch};
use super::controller::Controller;
use super::events::Events;
use super::front::{Front, McpMount};
use super::mask::Masker;
use super::state::{LoginProxyState, StackState, StateFile};
use super::tunnel::{self, Tunnel, TunnelError, TunnelSpec};
use crate::config::ServerEntry;
use crate::outputs::Budget;
use crate::process::{LineSink, ProcessGuard};

mod error;
mod native;
mod spec;
mod start;
mod supervise;

pub use error::StackError;

/// Tool definitions by served server (config key).
type Tools = std::collections::BTreeMap<String, Vec<serde_json::Value>>;
pub use start::{register_keys, start};

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

/// Everything decided about a stack before it starts.
pub struct StackPlan {
    /// The stack's name.
    pub name: String,
    /// Its config file.
    pub config: PathBuf,
    /// The env files read with it (a login command repeats them).
    pub env_files: Vec<PathBuf>,
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
    /// The native bridge's default output budget when its results are budgeted (`None`: off).
    pub max_output: Option<Budget>,
}

/// A stack that runs. Cheap to clone.
#[derive(Clone)]
pub struct RunningStack {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    project_dir: PathBuf,
    controller: Controller,
    /// The controller's base URL and key (the front and spec refreshes use them).
    upstream: (String, String),
    tunnel_spec: Option<TunnelSpec>,
    public_url_flag: Option<String>,
    /// Servers handed to the controller, in config order.
    served: Vec<ServerEntry>,
    /// Servers the overrides disable (the front answers 404 "disabled" for them).
    disabled: Vec<String>,
    /// The served servers' tool definitions as last seen (the preflight's, then the live ones
    /// the bridge found): what the spec checks against the approvals.
    tools: StdMutex<Tools>,
    /// The native bridge budgets results (`POST /read_output` published and let through).
    reads_outputs: bool,
    front: Front,
    client: reqwest::Client,
    masker: Masker,
    events: Events,
    state: StateFile,
    record: StdMutex<StackState>,
    tunnel: Mutex<Option<Tunnel>>,
    shutdown: CancellationToken,
    /// The stack's own tasks (front, health, checks), joined a bounded time on stop.
    tasks: tokio_util::task::TaskTracker,
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

    /// The servers the stack serves (enabled and reached), in config order.
    pub fn served(&self) -> &[ServerEntry] {
        &self.inner.served
    }

    /// Serves `/mcp` on the stack's front as `mount` builds it for the stack's public URL
    /// (built again whenever that URL changes), MCP clients proving who they are by `auth`
    /// (`oauth`, `key`, `oidc`, `none`) and logging in through `login_proxy` when there is
    /// one (both recorded for `share` and `status`).
    pub fn serve_mcp(
        &self,
        mount: McpMount,
        auth: &str,
        login_proxy: Option<LoginProxyState>,
    ) -> Result<(), StackError> {
        let base = {
            let mut record = lock(&self.inner.record);
            record.mcp_auth = Some(auth.to_string());
            record.mcp_login_proxy = login_proxy;
            record.public_url.clone()
        };
        self.inner.front.mount_mcp(mount, &base);
        self.save_record()
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
        if let Some(pgid) = tunnel.as_ref().and_then(|t| t.guard.pgid()) {
            if !crate::process::stop_group(pgid, STOP_GRACE).await {
                survivors.push(format!("cloudflared (process group {pgid})"));
            }
        }
        survivors.extend(inner.controller.stop(STOP_GRACE).await);
        inner.tasks.close();
        if tokio::time::timeout(STOP_GRACE, inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::debug!(stack = %inner.name, "tasks still running after stop");
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
