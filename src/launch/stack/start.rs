//! Starting a planned stack from its preflight: which servers are served, the controller and
//! the tunnel (at once), the state record, the merged spec and the front.

use std::path::Path;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::{
    local_url, native, start_controller, start_tunnel, ControllerPlan, Inner, RunningStack,
    StackError, StackPlan,
};
use crate::auth::client::LoginContext;
use crate::catalog::{Overrides, ServerProblem, ServerReport};
use crate::config::ServerEntry;
use crate::launch::controller::mcpo::{self, McpoLaunch};
use crate::launch::controller::native::bridge::{Bridge, BridgeOutputs};
use crate::launch::controller::Controller;
use crate::launch::events::Events;
use crate::launch::front::{Front, FrontConfig};
use crate::launch::mask::Masker;
use crate::launch::state::{now_rfc3339, ProcessRecord, StackState, StateFile};
use crate::launch::tunnel::{Tunnel, TunnelKind, TunnelSpec};
use crate::mcp::Session;
use crate::process::ProcessGuard;

/// A controller that started.
enum Started {
    /// mcpo, with how to start it again.
    Mcpo(ProcessGuard, McpoLaunch),
    /// The native bridge, with the servers still to start and check against the tool index.
    Native(Bridge, Vec<native::Unverified>),
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
    let (served, disabled, failures) =
        choose_servers(&plan.entries, &reports, overrides, &login_context(&plan));
    for (server, problem) in &failures {
        events.warn(&name, format!("server {server} is left out: {problem}"));
    }
    if served.is_empty() {
        return Err(no_servers(name, &failures));
    }
    let (controller_port, upstream) = register_secrets(&plan, &masker);
    let front = new_front(&plan, &upstream)?;
    let port = plan
        .front
        .local_addr()
        .map(|a| a.port())
        .unwrap_or_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .build()
        .map_err(StackError::HttpClient)?;
    let chosen = chosen_servers(&plan.entries, &reports, sessions, &served);
    let mut record = draft_record(&plan, port, controller_port);
    let outputs = match &plan.controller {
        ControllerPlan::Native { .. } => {
            native::outputs(plan.max_output, &plan.api_key, &served, overrides)
        }
        ControllerPlan::Mcpo(_) => {
            if plan.max_output.is_some() {
                let why = "--max-output-tokens budgets the native controller's results only;                            mcpo's pass whole (--controller native)";
                events.warn(&name, why.to_string());
            }
            None
        }
    };
    let reads_outputs = outputs.is_some();
    let starting = Starting {
        name: &name,
        config: &plan.config,
        env_files: &plan.env_files,
        project_dir: &plan.project_dir,
        client: &client,
        masker: &masker,
        events: &events,
        outputs,
    };
    let (controller, tunnel) = tokio::join!(
        starting.controller(plan.controller, chosen),
        starting.tunnel(plan.tunnel.as_ref()),
    );
    let (controller, tunnel) = (controller?, tunnel?);
    let (controller, unverified, pgid) = match controller {
        Started::Mcpo(guard, launch) => {
            let pgid = guard.pgid();
            (Controller::mcpo(guard, launch), Vec::new(), pgid)
        }
        Started::Native(bridge, unverified) => {
            // In the same process: the front calls its routes directly, not over loopback.
            front.set_local_upstream(bridge.router());
            front.set_pool(bridge.pool().clone());
            (Controller::Native(bridge), unverified, None)
        }
    };
    let bridge = controller.bridge().cloned();
    let public_url = plan.public_url.as_deref();
    record_started(
        &mut record,
        public_url,
        pgid,
        tunnel.as_ref(),
        bridge.as_ref(),
    );
    let stack = RunningStack {
        inner: Arc::new(Inner {
            name,
            state: StateFile::in_project(&plan.project_dir),
            project_dir: plan.project_dir,
            controller,
            upstream,
            tunnel_spec: plan.tunnel,
            public_url_flag: plan.public_url,
            tools: StdMutex::new(served_tools(&served, &plan.entries, &reports)),
            served,
            disabled,
            reads_outputs,
            front: front.clone(),
            client,
            masker,
            events,
            record: StdMutex::new(record),
            tunnel: Mutex::new(tunnel),
            shutdown: CancellationToken::new(),
            tasks: tokio_util::task::TaskTracker::new(),
        }),
    };
    open_front(&stack, front, plan.front).await?;
    if let Some(bridge) = bridge {
        native::follow_up(&stack, bridge, unverified);
    }
    Ok(stack)
}

/// The stack's front, keyed and limited as planned, forwarding to `upstream`.
fn new_front(plan: &StackPlan, upstream: &(String, String)) -> Result<Front, StackError> {
    Ok(Front::new(FrontConfig {
        stack: plan.name.clone(),
        api_key: plan.api_key.clone(),
        upstream: upstream.0.clone(),
        upstream_key: upstream.1.clone(),
        protect_spec: plan.protect_spec,
        admin_token: plan.admin_token.clone(),
        forward: crate::launch::front::ForwardLimits::from_env(),
    })?)
}

/// What the record learns once the controller and the tunnel run: their process groups, the
/// public URL, the start time, the bridge's servers.
fn record_started(
    record: &mut StackState,
    public_url: Option<&str>,
    controller_pgid: Option<i32>,
    tunnel: Option<&Tunnel>,
    bridge: Option<&Bridge>,
) {
    record.controller_process = controller_pgid.map(ProcessRecord::of);
    record.tunnel_process = tunnel.and_then(|t| t.guard.pgid()).map(ProcessRecord::of);
    if let Some(url) = public_url.or_else(|| tunnel.and_then(|t| t.url.as_deref())) {
        record.public_url = url.to_string();
    }
    record.started_at = now_rfc3339();
    record.bridge_servers = bridge.map(native::server_states).unwrap_or_default();
}

/// What starting the controller and the tunnel share.
struct Starting<'a> {
    name: &'a str,
    /// The stack's config (named by the login command of a server that needs one).
    config: &'a Path,
    /// The env files read with it (named by that command too).
    env_files: &'a [std::path::PathBuf],
    project_dir: &'a Path,
    client: &'a reqwest::Client,
    masker: &'a Masker,
    events: &'a Events,
    /// The bridge's budgeted results, when asked.
    outputs: Option<BridgeOutputs>,
}

impl Starting<'_> {
    /// mcpo (its config written first: resolved secrets, in the git-ignored, owner-only
    /// project dir, deleted on stop) or the native bridge with the chosen servers.
    async fn controller(
        &self,
        plan: ControllerPlan,
        chosen: Vec<native::Chosen<'_>>,
    ) -> Result<Started, StackError> {
        match plan {
            ControllerPlan::Mcpo(mut launch) => {
                launch.config = mcpo::config_path(self.project_dir, self.name)?;
                let entries: Vec<&ServerEntry> = chosen.iter().map(|c| c.entry).collect();
                mcpo::write_config(&launch.config, &mcpo::config_for(&entries))?;
                let started =
                    start_controller(self.name, &launch, self.client, self.masker, self.events)
                        .await;
                if started.is_err() {
                    // Its secrets outlive no failed start.
                    let _ = std::fs::remove_file(&launch.config);
                }
                Ok(Started::Mcpo(started?, launch))
            }
            ControllerPlan::Native { listener, key } => {
                let outputs = self.outputs.clone();
                let bridge = native::BridgeStart {
                    stack: self.name,
                    config: self.config,
                    env_files: self.env_files,
                    key,
                    outputs,
                };
                let (bridge, unverified) =
                    native::start_bridge(bridge, chosen, listener, self.events)?;
                Ok(Started::Native(bridge, unverified))
            }
        }
    }

    async fn tunnel(&self, spec: Option<&TunnelSpec>) -> Result<Option<Tunnel>, StackError> {
        match spec {
            Some(spec) => Ok(Some(
                start_tunnel(self.name, spec, self.masker, self.events).await?,
            )),
            None => Ok(None),
        }
    }
}

/// Splits the stack's servers into those handed to the controller (enabled and reached by
/// the preflight), those the overrides disable, and those left out with the reason.
fn choose_servers(
    entries: &[ServerEntry],
    reports: &[ServerReport],
    overrides: &Overrides,
    login: &LoginContext,
) -> (Vec<ServerEntry>, Vec<String>, Vec<(String, String)>) {
    let mut served = Vec::new();
    let mut disabled = Vec::new();
    let mut failures = Vec::new();
    for (entry, report) in entries.iter().zip(reports) {
        if overrides.is_disabled(entry) {
            disabled.push(entry.name.clone());
        } else if let Some(problem) = &report.error {
            failures.push((entry.name.clone(), left_out_because(entry, problem, login)));
        } else {
            served.push(entry.clone());
        }
    }
    (served, disabled, failures)
}

/// What a login command of this stack names: its config and the env files read with it.
fn login_context(plan: &StackPlan) -> LoginContext {
    LoginContext::new(vec![plan.config.clone()], plan.env_files.clone())
}

/// Why a server is left out, one line; for one that needs an OAuth login, with the command a
/// person runs (the stack's config and env files named, so it finds the same server).
fn left_out_because(entry: &ServerEntry, problem: &ServerProblem, login: &LoginContext) -> String {
    if !problem.needs_login() {
        return problem.to_string();
    }
    let command = login.command(&entry.name, problem.step_up_scope());
    format!("{problem}; a person must run `{command}`, then start `up` again (the rest of the stack runs meanwhile)")
}

/// The preflight's tool definitions of each served server.
fn served_tools(
    served: &[ServerEntry],
    entries: &[ServerEntry],
    reports: &[ServerReport],
) -> super::Tools {
    entries
        .iter()
        .zip(reports)
        .filter(|(entry, _)| served.iter().any(|s| s.name == entry.name))
        .map(|(entry, report)| (entry.name.clone(), report.tools.clone()))
        .collect()
}

/// The error of a stack with nothing to serve.
fn no_servers(stack: String, failures: &[(String, String)]) -> StackError {
    let reason = if failures.is_empty() {
        "every server is disabled".to_string()
    } else {
        let each: Vec<String> = failures.iter().map(|(s, p)| format!("{s}: {p}")).collect();
        each.join("; ")
    };
    StackError::NoServers { stack, reason }
}

/// Adds the stack's secrets to the masker (its servers' env and header values, the keys, the
/// admin token); returns the controller's port and its `(base URL, key)`.
fn register_secrets(plan: &StackPlan, masker: &Masker) -> (u16, (String, String)) {
    for spec in plan.entries.iter().filter_map(|e| e.spec.as_ref().ok()) {
        crate::launch::mask::add_server_secrets(masker, spec);
    }
    register_keys(plan, masker)
}

/// Adds the stack's keys and admin token to `masker`; returns the controller's port and its
/// `(base URL, key)`.
pub fn register_keys(plan: &StackPlan, masker: &Masker) -> (u16, (String, String)) {
    masker.add(&plan.api_key);
    let (port, key) = plan.controller.endpoint();
    masker.add(&key);
    masker.add(&plan.admin_token);
    (port, (format!("http://127.0.0.1:{port}"), key))
}

/// The served servers with their preflight report and open session (the native bridge adopts
/// the sessions).
fn chosen_servers<'a>(
    entries: &'a [ServerEntry],
    reports: &'a [ServerReport],
    sessions: Vec<Option<Session>>,
    served: &[ServerEntry],
) -> Vec<native::Chosen<'a>> {
    entries
        .iter()
        .zip(reports)
        .zip(sessions)
        .filter(|((entry, _), _)| served.iter().any(|s| s.name == entry.name))
        .map(|((entry, report), session)| native::Chosen {
            entry,
            report,
            session,
        })
        .collect()
}

/// The stack's record as far as the plan knows it: the processes, the public URL (the local
/// one until a flag or a tunnel says otherwise) and the bridge's servers come once started.
fn draft_record(plan: &StackPlan, port: u16, controller_port: u16) -> StackState {
    StackState {
        name: plan.name.clone(),
        config: plan.config.clone(),
        supervisor: ProcessRecord::of(std::process::id() as i32),
        controller: plan.controller.name().into(),
        controller_process: None,
        controller_port,
        host: plan.host.to_string(),
        port,
        tunnel: tunnel_kind(plan.tunnel.as_ref()).into(),
        tunnel_process: None,
        public_url: local_url(plan.host, port),
        api_key: plan.api_key.clone(),
        admin_token: plan.admin_token.clone(),
        servers: Vec::new(),
        operations: 0,
        warnings: Vec::new(),
        started_at: now_rfc3339(),
        restarts: 0,
        bridge_servers: Vec::new(),
        mcp_auth: None,
        mcp_login_proxy: None,
    }
}

fn tunnel_kind(spec: Option<&TunnelSpec>) -> &'static str {
    match spec.map(|s| &s.kind) {
        None => "none",
        Some(TunnelKind::Quick) => "quick",
        Some(TunnelKind::Named { .. }) => "named",
    }
}

/// Publishes the merged spec, marks the controller ready, then serves the front on the
/// listener bound while planning, and saves the stack's record.
async fn open_front(
    stack: &RunningStack,
    front: Front,
    listener: std::net::TcpListener,
) -> Result<(), StackError> {
    stack.refresh_spec(None).await?;
    front.set_upstream_ready(true);
    front.set_reload_handler(stack.reload_handler());
    let listener = listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
        .map_err(|source| StackError::Listen {
            what: "front",
            source,
        })?;
    stack
        .inner
        .tasks
        .spawn(front.serve(listener, stack.inner.shutdown.clone()));
    stack.save_record()?;
    Ok(())
}
