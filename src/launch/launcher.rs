//! Launching the stacks of loaded config files: what an earlier, killed `up` left running is
//! stopped, the controller is chosen, each stack is planned (ports bound, keys made), every
//! server is resolved in parallel, and the stacks start together. The CLI's `up` and the TUI
//! both call [`launch`]; what happens on the way is told as [`StackEvent`]s
//! (`super::events`), and each stack that cannot start is reported with its error object
//! while the others go on.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::controller::mcpo::{self, McpoLaunch};
use super::events::Events;
use super::mask::Masker;
use super::plan::{generate_key, PlannedPort, PortError, PortPlanner};
use super::stack::{self, ControllerPlan, RunningStack, StackError, StackPlan};
use super::state::{State, StateError, StateFile};
use super::tunnel::{TunnelKind, TunnelSpec};
use crate::catalog::{
    resolve, resolve_keeping, OpenSessions, Overrides, OverridesError, ResolveOptions, ServerReport,
};
use crate::config::{self, ServerEntry};
use crate::error::Actionable;
use crate::outputs::Budget;

/// The first stack's front port when none is given; stack i gets +i.
pub const DEFAULT_PORT: u16 = 8000;
/// The first stack's controller port when none is given; stack i gets +i.
pub const DEFAULT_MCPO_PORT: u16 = 8800;

/// Bound on opening a tunnel: cloudflared registers within seconds when the network works.
const TUNNEL_TIMEOUT: Duration = Duration::from_secs(30);

/// Which controller serves the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerChoice {
    /// mcpo when installed, else native.
    Auto,
    /// The mcpo Python bridge.
    Mcpo,
    /// The built-in bridge.
    Native,
}

/// Everything about a launch that is not in the config files, checked already (the key's
/// form, the public URLs' count and form, the tunnel program found).
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The project directory (`.mcp-launch/` lives there; config paths are relative to it).
    pub project_dir: PathBuf,
    /// The config files as given, in order (public URLs follow this order).
    pub configs: Vec<PathBuf>,
    /// The env files read with them (`--env-file`): a login command repeats them.
    pub env_files: Vec<PathBuf>,
    /// The first stack's front port; explicit ports are never moved.
    pub port: Option<u16>,
    /// The first stack's controller port.
    pub mcpo_port: Option<u16>,
    /// The front's bind address.
    pub host: IpAddr,
    /// One key for every stack; `None`: a new key per stack.
    pub shared_key: Option<String>,
    /// The tunnel kind and the cloudflared program; `None`: no tunnel.
    pub tunnel: Option<(TunnelKind, PathBuf)>,
    /// A public URL per config file (aligned with `configs`).
    pub public_urls: Vec<Option<String>>,
    /// The controller.
    pub controller: ControllerChoice,
    /// `/openapi.json` needs the key too.
    pub protect_spec: bool,
    /// Check every server live even where the native controller could trust the tool index.
    pub refresh: bool,
    /// Budget the native bridge's results (`None`: off): the default budget; tools' own
    /// budgets in the overrides win.
    pub max_output: Option<Budget>,
    /// Servers the caller's own live check has just found failing (the TUI's preflight):
    /// reported as they were, not checked again — a hanging one would cost its whole init
    /// window a second time. Ignored with `refresh`; empty from `up`.
    pub failed_just_now: Vec<ServerReport>,
}

/// What a launch started, and what it could not.
pub struct Launched {
    /// The stacks that run.
    pub running: Vec<RunningStack>,
    /// Each stack that did not start, and why.
    pub errors: Vec<(String, StackFailure)>,
    /// Whether the preflight checked a server live (the tool index was brought up to date),
    /// rather than answering every server from the index.
    pub checked_live: bool,
}

/// Why one stack did not start (the others go on).
#[derive(Debug, thiserror::Error)]
pub enum StackFailure {
    /// An `up` that is still alive runs a stack of this name.
    #[error("stack {stack} is already running (mcp-launch up pid {pid}, {url})")]
    AlreadyRunning {
        /// The stack.
        stack: String,
        /// That `up`'s process group.
        pid: i32,
        /// Its front.
        url: String,
    },
    /// The controller asked for cannot run (the same for every stack: shared).
    #[error(transparent)]
    Controller(Arc<mcpo::ControllerError>),
    /// A port could not be planned.
    #[error(transparent)]
    Port(#[from] PortError),
    /// A port was planned but its listener was not kept (a bug, or a race with another
    /// process binding it).
    #[error("the {0} port was not kept")]
    PortNotKept(&'static str),
    /// Starting the planned stack failed.
    #[error(transparent)]
    Start(#[from] StackError),
}

impl Actionable for StackFailure {
    fn kind(&self) -> &'static str {
        match self {
            StackFailure::AlreadyRunning { .. } => "already_running",
            StackFailure::Controller(e) => e.kind(),
            StackFailure::Port(_) | StackFailure::PortNotKept(_) => "port_taken",
            StackFailure::Start(e) => e.kind(),
        }
    }

    fn help(&self) -> String {
        match self {
            StackFailure::AlreadyRunning { .. } => {
                "stop it first with `mcp-launch down`, or use another config file name".into()
            }
            StackFailure::Controller(e) => e.help(),
            StackFailure::Port(e) => e.help(),
            StackFailure::PortNotKept(_) => "retry".into(),
            StackFailure::Start(e) => e.help(),
        }
    }
}

/// Why a launch could not even begin.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The state file cannot be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The overrides file cannot be read.
    #[error(transparent)]
    Overrides(#[from] OverridesError),
}

impl Actionable for LaunchError {
    fn kind(&self) -> &'static str {
        match self {
            LaunchError::State(e) => e.kind(),
            LaunchError::Overrides(e) => e.kind(),
        }
    }

    fn help(&self) -> String {
        match self {
            LaunchError::State(e) => e.help(),
            LaunchError::Overrides(e) => e.help(),
        }
    }
}

/// Launches every stack of `loaded`. Returns `None` when `shutdown` came first (whatever had
/// started is stopped and its records dropped).
pub async fn launch(
    loaded: &config::Loaded,
    options: &LaunchOptions,
    masker: &Masker,
    events: &Events,
    shutdown: &CancellationToken,
) -> Result<Option<Launched>, LaunchError> {
    if let Some(key) = &options.shared_key {
        masker.add(key);
    }
    let state_file = StateFile::in_project(&options.project_dir);
    let running_before = state_file.read()?;
    let project = options.project_dir.as_path();
    clean_up_stale(&state_file, &running_before, loaded, project, events).await?;
    warn_of_tracked_secrets(&options.project_dir, events);
    let mcpo_program =
        choose_controller(options.controller, events).map(|found| found.map_err(Arc::new));
    let planning = Planning {
        options,
        running_before: &running_before,
        mcpo_program: &mcpo_program,
        events,
    };
    let (plans, mut errors) = planning.plan_stacks(loaded);
    for plan in &plans {
        // Before the preflight: a server's stderr tail must never show a stack's key.
        stack::register_keys(plan, crate::process::own_secrets());
    }
    let overrides = Overrides::load(&options.project_dir)?;
    let reused = match options.refresh {
        true => &[][..],
        false => &options.failed_just_now[..],
    };
    let (reports, sessions) = preflight(
        &plans,
        &overrides,
        mcpo_program.is_some(),
        (options.refresh, reused),
        events,
    )
    .await;
    let checked_live = reports
        .iter()
        .any(|r| r.status == crate::catalog::Status::Connected);
    let Some(started) = start_stacks(
        plans, reports, sessions, &overrides, masker, events, shutdown,
    )
    .await
    else {
        // Dropping the starts killed their process groups; drop their records too.
        let me = std::process::id() as i32;
        state_file.update(|s| s.stacks.retain(|r| r.supervisor.pgid != me))?;
        return Ok(None);
    };
    let mut running = Vec::new();
    for (name, result) in started {
        match result {
            Ok(stack) => running.push(stack),
            Err(e) => errors.push((name, StackFailure::Start(e))),
        }
    }
    Ok(Some(Launched {
        running,
        errors,
        checked_live,
    }))
}

/// Every server of the planned stacks checked (the overrides' disabled ones skipped), in plan
/// order, with the sessions of those checked live. mcpo must only get servers that answer now
/// (one hanging server blocks its whole start), so it needs a live check; the native bridge
/// adopts the live checks' sessions and may trust the tool index, starting those servers in
/// the background.
async fn preflight(
    plans: &[StackPlan],
    overrides: &Overrides,
    for_mcpo: bool,
    (refresh, failed_just_now): (bool, &[ServerReport]),
    events: &Events,
) -> (Vec<ServerReport>, OpenSessions) {
    let mut all_entries: Vec<ServerEntry> = plans
        .iter()
        .flat_map(|p| p.entries.iter().cloned())
        .collect();
    for entry in &mut all_entries {
        // The project's choice wins over the config's, and a disabled server is not started.
        entry.disabled = overrides.is_disabled(entry);
    }
    for plan in plans {
        let step = format!("preflight of {} servers", plan.entries.len());
        events.progress(&plan.name, &step, 0);
    }
    let reused: Vec<Option<ServerReport>> = all_entries
        .iter()
        .map(|entry| failed_before(failed_just_now, entry))
        .collect();
    let to_check: Vec<ServerEntry> = all_entries
        .iter()
        .zip(&reused)
        .filter(|(_, r)| r.is_none())
        .map(|(entry, _)| entry.clone())
        .collect();
    let (checked, sessions) = if for_mcpo {
        let opts = ResolveOptions::from_env(true).without_tokens();
        (resolve(&to_check, &opts).await, OpenSessions::default())
    } else {
        let opts = ResolveOptions::from_env(refresh).without_tokens();
        resolve_keeping(&to_check, &opts).await
    };
    let mut checked = checked.into_iter();
    // In the entries' order: a reused report where there is one, else the next checked.
    let reports = reused
        .into_iter()
        .filter_map(|r| r.or_else(|| checked.next()))
        .collect();
    (reports, sessions)
}

/// The report of `entry` among `failed_just_now`, when it failed there and is still enabled.
fn failed_before(failed_just_now: &[ServerReport], entry: &ServerEntry) -> Option<ServerReport> {
    if entry.disabled {
        return None;
    }
    failed_just_now
        .iter()
        .find(|r| {
            r.stack == entry.stack
                && r.config_name == entry.name
                && r.status == crate::catalog::Status::Error
        })
        .cloned()
}

/// Starts the planned stacks together; `None` when `shutdown` came first (the starts are
/// dropped, which kills their process groups).
async fn start_stacks(
    plans: Vec<StackPlan>,
    reports: Vec<ServerReport>,
    mut sessions: OpenSessions,
    overrides: &Overrides,
    masker: &Masker,
    events: &Events,
    shutdown: &CancellationToken,
) -> Option<Vec<(String, Result<RunningStack, StackError>)>> {
    let mut reports = reports.into_iter();
    let mut starts = Vec::new();
    for plan in plans {
        let stack_reports: Vec<_> = reports.by_ref().take(plan.entries.len()).collect();
        let stack_sessions = plan
            .entries
            .iter()
            .map(|entry| sessions.take(&entry.qualified))
            .collect();
        let (masker, events, overrides) = (masker.clone(), events.clone(), &overrides);
        starts.push(async move {
            let name = plan.name.clone();
            let started = stack::start(
                plan,
                stack_reports,
                stack_sessions,
                overrides,
                masker,
                events,
            );
            (name, started.await)
        });
    }
    // Nothing else is left to adopt them.
    drop(sessions);
    tokio::select! {
        results = futures_util::future::join_all(starts) => Some(results),
        () = shutdown.cancelled() => None,
    }
}

/// Whether mcpo is installed (for the TUI's launch options): its path or why not.
pub fn mcpo_available() -> Result<PathBuf, mcpo::ControllerError> {
    mcpo::find_mcpo()
}

/// mcpo's program for `choice` (`Some(Err)`: asked for and missing), `None` for native. `auto`
/// without mcpo says once that the native controller serves.
fn choose_controller(
    choice: ControllerChoice,
    events: &Events,
) -> Option<Result<PathBuf, mcpo::ControllerError>> {
    // mcpo takes its internal key only on its command line, which every local user can read:
    // on a shared host they could call mcpo directly, past the front's deny rules.
    let shared = crate::process::shared_host();
    match choice {
        ControllerChoice::Native => None,
        ControllerChoice::Mcpo => {
            if shared {
                events.note(SHARED_HOST_WARNING);
            }
            Some(mcpo::find_mcpo())
        }
        ControllerChoice::Auto if shared => {
            events.note("controller: native (other users run processes here, and mcpo's key would be on its command line for them to read; --controller mcpo insists on it)");
            None
        }
        ControllerChoice::Auto => {
            match mcpo::find_mcpo() {
                Ok(program) => Some(Ok(program)),
                Err(_) => {
                    events.note("controller: native (mcpo is not installed; --controller mcpo insists on it)");
                    None
                }
            }
        }
    }
}

/// Said when mcpo is chosen on a shared host.
const SHARED_HOST_WARNING: &str = "warning: other users run processes on this machine and can read mcpo's internal key on its command line (/proc/PID/cmdline), then call mcpo on 127.0.0.1 past the deny rules; --controller native keeps its key inside up";

/// What planning each stack needs to know.
struct Planning<'a> {
    options: &'a LaunchOptions,
    running_before: &'a State,
    /// `None` for the native controller.
    mcpo_program: &'a Option<Result<PathBuf, Arc<mcpo::ControllerError>>>,
    events: &'a Events,
}

impl Planning<'_> {
    /// The plan of every stack, and the error of each that cannot start.
    fn plan_stacks(
        &self,
        loaded: &config::Loaded,
    ) -> (Vec<StackPlan>, Vec<(String, StackFailure)>) {
        let mut front_ports = PortPlanner::new(self.options.host);
        let mut controller_ports = PortPlanner::new(IpAddr::from([127, 0, 0, 1]));
        let mut plans = Vec::new();
        let mut errors = Vec::new();
        for (i, stack) in loaded.stacks.iter().enumerate() {
            match self.plan(i, stack, &mut front_ports, &mut controller_ports) {
                Ok(plan) => plans.push(plan),
                Err(error) => errors.push((stack.name.clone(), error)),
            }
        }
        (plans, errors)
    }

    /// The plan of stack `i`: ports (the front's listener bound), keys, controller, tunnel,
    /// public URL — or why it cannot start.
    fn plan(
        &self,
        i: usize,
        stack: &config::Stack,
        front_ports: &mut PortPlanner,
        controller_ports: &mut PortPlanner,
    ) -> Result<StackPlan, StackFailure> {
        let options = self.options;
        self.refuse_if_running(stack)?;
        let program = match self.mcpo_program {
            Some(Ok(program)) => Some(program.clone()),
            Some(Err(e)) => return Err(StackFailure::Controller(e.clone())),
            None => None,
        };
        // Public URLs follow the order of the config files, failed files included.
        let index =
            public_url_index(&options.configs, &options.project_dir, &stack.path).unwrap_or(i);
        let offset = u16::try_from(i).unwrap_or(u16::MAX);
        let (front, controller_port) = self.take_ports(
            &stack.name,
            offset,
            program.is_none(),
            front_ports,
            controller_ports,
        )?;
        let Some(listener) = front.listener else {
            return Err(StackFailure::PortNotKept("front"));
        };
        let tunnel = options.tunnel.as_ref().map(|(kind, program)| TunnelSpec {
            program: program.clone(),
            kind: kind.clone(),
            local_port: front.port,
            metrics_port: free_port().unwrap_or(0),
            ready_timeout: TUNNEL_TIMEOUT,
            env: Vec::new(),
        });
        let controller = match (program, controller_port.listener) {
            (Some(program), _) => ControllerPlan::Mcpo(McpoLaunch {
                program,
                port: controller_port.port,
                key: generate_key(),
                config: PathBuf::new(),
                ready_timeout: mcpo::ready_timeout_from_env(),
            }),
            (None, Some(listener)) => ControllerPlan::Native {
                listener,
                key: generate_key(),
            },
            (None, None) => return Err(StackFailure::PortNotKept("controller")),
        };
        Ok(StackPlan {
            name: stack.name.clone(),
            config: stack.path.clone(),
            env_files: options.env_files.clone(),
            entries: stack.servers.clone(),
            project_dir: options.project_dir.clone(),
            host: options.host,
            front: listener,
            api_key: options.shared_key.clone().unwrap_or_else(generate_key),
            admin_token: generate_key(),
            controller,
            tunnel,
            public_url: options.public_urls.get(index).cloned().flatten(),
            protect_spec: options.protect_spec,
            max_output: options.max_output,
        })
    }

    /// `already_running` when an `up` that is still alive runs a stack of this name.
    fn refuse_if_running(&self, stack: &config::Stack) -> Result<(), StackFailure> {
        let alive = self
            .running_before
            .stacks
            .iter()
            .find(|s| s.name == stack.name && s.supervisor.process_alive());
        match alive {
            Some(running) => Err(StackFailure::AlreadyRunning {
                stack: stack.name.clone(),
                pid: running.supervisor.pgid,
                url: running.local_url(),
            }),
            None => Ok(()),
        }
    }

    /// The stack's front port (its listener bound) and controller port (bound too when the
    /// native bridge serves on it: mcpo binds its own), each `base + offset` or the next free
    /// one; a moved port is said.
    fn take_ports(
        &self,
        stack: &str,
        offset: u16,
        native: bool,
        front_ports: &mut PortPlanner,
        controller_ports: &mut PortPlanner,
    ) -> Result<(PlannedPort, PlannedPort), StackFailure> {
        let options = self.options;
        let front = front_ports.take(
            options.port.unwrap_or(DEFAULT_PORT).saturating_add(offset),
            options.port.is_some(),
            true,
            &format!("front port of stack {stack}"),
        )?;
        let controller = controller_ports.take(
            options
                .mcpo_port
                .unwrap_or(DEFAULT_MCPO_PORT)
                .saturating_add(offset),
            options.mcpo_port.is_some(),
            native,
            &format!("controller port of stack {stack}"),
        )?;
        for (planned, what) in [(&front, "front"), (&controller, "controller")] {
            if let Some(from) = planned.moved_from {
                let message = format!("{what} port {from} is taken; using {}", planned.port);
                self.events.warn(stack, message);
            }
        }
        Ok((front, controller))
    }
}

/// The position of `path` among the config files as given.
fn public_url_index(configs: &[PathBuf], project_dir: &Path, path: &Path) -> Option<usize> {
    configs.iter().position(|c| project_dir.join(c) == path)
}

/// Stacks of this launch whose record is stale (their `up` was killed): end what they left
/// running (it would hold ports, and its record is about to be replaced) and drop the record.
async fn clean_up_stale(
    state_file: &StateFile,
    state: &State,
    loaded: &config::Loaded,
    project_dir: &Path,
    events: &Events,
) -> Result<(), StateError> {
    let stale: Vec<_> = state
        .stacks
        .iter()
        .filter(|s| !s.supervisor.process_alive() && loaded.stacks.iter().any(|l| l.name == s.name))
        .cloned()
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    let reports = super::control::stop(&stale, project_dir).await;
    for (record, report) in stale.iter().zip(&reports) {
        if !report.stopped.is_empty() {
            let message = format!(
                "stopped what an earlier, killed `up` left running: {}",
                report.stopped.join(", ")
            );
            events.warn(&record.name, message);
        }
    }
    let names: Vec<&str> = stale.iter().map(|s| s.name.as_str()).collect();
    state_file.update(|s| s.stacks.retain(|r| !names.contains(&r.name.as_str())))?;
    Ok(())
}

/// Files of `.mcp-launch/` that hold keys or resolved secrets but are tracked by git (committed
/// before the directory had its `.gitignore`): the next commit would publish them.
fn warn_of_tracked_secrets(project_dir: &Path, events: &Events) {
    for path in crate::project::tracked_secrets(project_dir) {
        events.warn(
            crate::project::DIR_NAME,
            format!("{path} is tracked by git and may hold secrets: run `git rm --cached {path}` (the directory's .gitignore keeps it out from then on)"),
        );
    }
}

fn free_port() -> Option<u16> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .ok()?
        .local_addr()
        .ok()
        .map(|a| a.port())
}
