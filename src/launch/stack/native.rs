//! The native controller's part of a stack.
//!
//! The bridge serves as soon as it is built: a server the preflight checked live hands its
//! open session over (it is not started twice); a server answered from the tool index is
//! started in the background and its live tool list compared with the index — when they
//! differ, the bridge, the index and the published spec follow the server. A call that
//! arrives before its server is up waits for the connect. Every change of a server's health
//! is written to the stack's record, so `status` shows it and `down` can end the server's
//! process group after an `up` that was killed.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{lock, RunningStack, StackError};
use crate::catalog::{self, Overrides, ServerReport, Status};
use crate::config::ServerEntry;
use crate::launch::controller::native::{
    self,
    bridge::{Bridge, BridgeConfig, BridgeOutputs, BridgeServer},
};
use crate::launch::events::Events;
use crate::launch::state::{BridgeServerState, ProcessRecord};
use crate::mcp::{ConnectOptions, Session};
use crate::outputs::{Budget, ClientScope, Outputs};

/// One server handed to the bridge: its entry, what the preflight saw, and the preflight's
/// open session when it kept one.
pub(super) struct Chosen<'a> {
    pub(super) entry: &'a ServerEntry,
    pub(super) report: &'a ServerReport,
    pub(super) session: Option<Session>,
}

/// A server whose tools came from the tool index, to start and check after the launch.
pub(super) struct Unverified {
    entry: ServerEntry,
    tools: Vec<Value>,
}

/// What the bridge of one stack is made with.
pub(super) struct BridgeStart<'a> {
    pub(super) stack: &'a str,
    /// The stack's config file (named by the login command of a server that needs one).
    pub(super) config: &'a std::path::Path,
    /// The env files read with it (named by that command too).
    pub(super) env_files: &'a [std::path::PathBuf],
    /// The front's key to the bridge.
    pub(super) key: String,
    /// Budgeted results, when asked.
    pub(super) outputs: Option<BridgeOutputs>,
}

/// Builds the bridge over the chosen servers and serves it on `listener` at once. Returns it
/// with the servers still to start and check (see [`follow_up`]).
pub(super) fn start_bridge(
    start: BridgeStart<'_>,
    chosen: Vec<Chosen<'_>>,
    listener: std::net::TcpListener,
    events: &Events,
) -> Result<(Bridge, Vec<Unverified>), StackError> {
    let stack = start.stack;
    events.progress(stack, "starting the native bridge", 0);
    let mut unverified = Vec::new();
    let servers: Vec<BridgeServer> = chosen
        .into_iter()
        .map(|chosen| {
            let generated =
                native::openapi::server_document(&chosen.entry.name, &chosen.report.tools);
            for warning in &generated.warnings {
                events.warn(stack, warning.to_string());
            }
            if chosen.report.status == Status::Cached {
                unverified.push(Unverified {
                    entry: chosen.entry.clone(),
                    tools: chosen.report.tools.clone(),
                });
            }
            BridgeServer {
                name: chosen.entry.name.clone(),
                entry: chosen.entry.clone(),
                tools: chosen.report.tools.clone(),
                document: generated.document,
                session: chosen.session,
            }
        })
        .collect();
    let config = BridgeConfig {
        outputs: start.outputs,
        login: crate::auth::client::LoginContext::new(
            vec![start.config.to_path_buf()],
            start.env_files.to_vec(),
        ),
        ..BridgeConfig::from_env(start.key)
    };
    let bridge = Bridge::new(servers, config);
    let listener = listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
        .map_err(|source| StackError::Listen {
            what: "native bridge",
            source,
        })?;
    tokio::spawn(bridge.clone().serve(listener, CancellationToken::new()));
    Ok((bridge, unverified))
}

/// How the bridge budgets results when `up` asked for it (`max_output`): the default budget,
/// the project's per-tool budgets for `served`, handles scoped to the front's `api_key`.
pub(super) fn outputs(
    max_output: Option<Budget>,
    api_key: &str,
    served: &[ServerEntry],
    overrides: &Overrides,
) -> Option<BridgeOutputs> {
    let budget = max_output?;
    let budgets = served
        .iter()
        .filter_map(|e| {
            Some((
                e.name.clone(),
                overrides.for_server(&e.stack, &e.name)?.clone(),
            ))
        })
        .collect();
    Some(BridgeOutputs {
        outputs: Arc::new(Outputs::new(budget)),
        scope: ClientScope::new(api_key),
        budgets,
    })
}

/// The bridge's servers as the state file records them.
pub(super) fn server_states(bridge: &Bridge) -> Vec<BridgeServerState> {
    bridge
        .server_status()
        .into_iter()
        .map(|status| BridgeServerState {
            name: status.name,
            state: status.state.as_str().to_string(),
            restarts: status.restarts,
            last_error: status.last_error,
            process: status.pgid.map(ProcessRecord::of),
        })
        .collect()
}

/// Runs in the background once the stack is up: keeps the record's server states current
/// until the stack stops, and starts and checks the servers answered from the tool index.
pub(super) fn follow_up(stack: &RunningStack, bridge: Bridge, unverified: Vec<Unverified>) {
    let tasks = &stack.inner.tasks;
    tasks.spawn(record_health(stack.clone(), bridge.clone()));
    for server in unverified {
        tasks.spawn(verify(stack.clone(), bridge.clone(), server));
    }
}

/// Writes the servers' states into the record whenever the bridge reports a change.
async fn record_health(stack: RunningStack, bridge: Bridge) {
    let mut changes = bridge.changes();
    let shutdown = stack.inner.shutdown.clone();
    let mut all_up_once = false;
    loop {
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            () = shutdown.cancelled() => return,
        }
        let states = server_states(&bridge);
        if !all_up_once && states.iter().all(|s| s.state == "up") {
            // Every server started: what started them need not stay resident either.
            all_up_once = true;
            tokio::task::spawn_blocking(crate::memory::page_out_own_code);
        }
        let changed = {
            let mut record = lock(&stack.inner.record);
            let changed = record.bridge_servers != states;
            record.bridge_servers = states;
            changed
        };
        if changed {
            if let Err(e) = stack.save_record() {
                tracing::warn!(stack = %stack.name(), error = %e, "could not record the servers' state");
            }
        }
    }
}

/// Starts a server answered from the tool index and compares its live tools with the index's.
async fn verify(stack: RunningStack, bridge: Bridge, server: Unverified) {
    let name = server.entry.name.clone();
    let events = &stack.inner.events;
    let timeout = ConnectOptions::from_env().list_timeout;
    let (info, list) = match bridge.list_live_tools(&name, timeout).await {
        Ok(listed) => listed,
        Err(e) => {
            if !stack.inner.shutdown.is_cancelled() {
                events.warn(
                    stack.name(),
                    format!(
                        "server {name} did not start: {e}\n  its calls answer 502 until it does \
                         (each call after the backoff tries again); `mcp-launch inspect {name}` \
                         shows why"
                    ),
                );
            }
            return;
        }
    };
    if list.tools == server.tools {
        return;
    }
    let change = describe_change(&server.tools, &list.tools);
    let report = catalog::record_live(&server.entry, &info, list).await;
    lock(&stack.inner.tools).insert(name.clone(), report.tools.clone());
    let generated = native::openapi::server_document(&name, &report.tools);
    bridge.replace_tools(&name, report.tools, &generated.document);
    events.warn(
        stack.name(),
        format!("server {name} offers other tools than the tool index said ({change}); the spec now follows the server"),
    );
    let refreshed = stack.refresh_spec(None).await;
    if let Err(e) = refreshed.and_then(|_| stack.save_record()) {
        events.warn(stack.name(), format!("could not republish the spec: {e}"));
    }
}

/// `added x, y; removed z; 2 changed` for two tool lists.
fn describe_change(before: &[Value], after: &[Value]) -> String {
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .map(|t| catalog::tool::name(t).to_string())
            .collect()
    };
    let (old, new) = (names(before), names(after));
    let added: Vec<&str> = new
        .iter()
        .filter(|n| !old.contains(n))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = old
        .iter()
        .filter(|n| !new.contains(n))
        .map(String::as_str)
        .collect();
    let changed = after
        .iter()
        .filter(|tool| {
            before
                .iter()
                .any(|old| catalog::tool::name(old) == catalog::tool::name(tool) && old != *tool)
        })
        .count();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("removed {}", removed.join(", ")));
    }
    if changed > 0 {
        parts.push(format!("{changed} changed"));
    }
    if parts.is_empty() {
        parts.push("the order changed".to_string());
    }
    parts.join("; ")
}

impl RunningStack {
    /// The native bridge, when it is the controller.
    pub fn bridge(&self) -> Option<&Bridge> {
        self.inner.controller.bridge()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::describe_change;

    #[test]
    fn changes_are_named() {
        let a = json!({"name": "a", "description": "x"});
        let a2 = json!({"name": "a", "description": "y"});
        let b = json!({"name": "b"});
        let c = json!({"name": "c"});
        assert_eq!(
            describe_change(&[a.clone(), b.clone()], &[a2, c]),
            "added c; removed b; 1 changed"
        );
        assert_eq!(
            describe_change(&[a.clone(), b.clone()], &[b, a]),
            "the order changed"
        );
    }
}
