//! `mcp-launch status [--show-keys]`.

use clap::Args;
use serde_json::json;
use std::io::Write as _;

use crate::launch::control::{self, Health, ServerHealth};
use crate::launch::mask::displayed_key;
use crate::launch::state::{ServerCount, StackState, StateFile};
use crate::output::{self, style, Table};

use super::{CliError, GlobalArgs, Outcome};

/// Show each running stack (processes alive, /healthz, tunnel URL answering, ports, URLs,
/// masked keys and counts) and each running gateway (`serve`) with its upstreams.
///
/// Reads ./.mcp-launch/state.json and checks every recorded process live. A stack whose
/// `mcp-launch up` is gone is reported as stale (`mcp-launch down` cleans it up). Exit 1 when a
/// stack is unhealthy or stale.
///
/// Example: mcp-launch status --json
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show the API keys in full.
    #[arg(long)]
    pub show_keys: bool,
}

/// Runs `status`.
pub async fn run(args: StatusArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::Output)?;
    let state = StateFile::in_project(&cwd).read()?;
    let client = reqwest::Client::new();
    let checks =
        futures_util::future::join_all(state.stacks.iter().map(|s| control::check(s, &client)))
            .await;
    let all_healthy = checks.iter().all(Health::is_healthy);
    let gateways = super::daemon::gateways().await;
    if global.json {
        let stacks: Vec<_> = state
            .stacks
            .iter()
            .zip(&checks)
            .map(|(s, h)| stack_json(s, h, args.show_keys))
            .collect();
        output::print_answer(
            all_healthy,
            json!({ "stacks": stacks, "gateways": gateways }),
        )?;
    } else {
        if state.stacks.is_empty() {
            anstream::println!("no stacks running here (start one with `mcp-launch up`)");
        } else {
            print_table(&state.stacks, &checks, args.show_keys);
        }
        if !gateways.is_empty() {
            anstream::println!();
            super::daemon::print_gateways(&gateways);
        }
    }
    Ok(if all_healthy {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

fn status_word(health: &Health) -> &'static str {
    if health.is_stale() {
        "stale"
    } else if health.is_healthy() {
        "running"
    } else {
        "degraded"
    }
}

fn stack_json(s: &StackState, h: &Health, show_keys: bool) -> serde_json::Value {
    json!({
        "stack": s.name,
        "status": status_word(h),
        "config": s.config,
        "openapi_url": format!("{}/openapi.json", s.public_url),
        "public_url": s.public_url,
        "local_url": s.local_url(),
        "port": s.port,
        "controller": s.controller,
        "controller_port": s.controller_port,
        "tunnel": s.tunnel,
        "api_key": displayed_key(&s.api_key, show_keys),
        "operations": s.operations,
        "servers": s.servers.iter().map(|c| server_json(c, h)).collect::<Vec<_>>(),
        "warnings": s.warnings,
        "started_at": s.started_at,
        "restarts": s.restarts,
        "checks": {
            "supervisor": h.supervisor,
            "controller": h.controller,
            "tunnel": h.tunnel,
            "healthz": h.front,
            "public_url": h.public,
        },
    })
}

/// A server's operations, and with the native bridge its state.
fn server_json(count: &ServerCount, h: &Health) -> serde_json::Value {
    let mut server = json!({"name": count.name, "operations": count.operations});
    if let Some(bridge) = h.servers.iter().find(|s| s.name == count.name) {
        server["state"] = json!(bridge.state);
        server["restarts"] = json!(bridge.restarts);
        server["last_error"] = json!(bridge.last_error);
    }
    server
}

fn print_table(stacks: &[StackState], checks: &[Health], show_keys: bool) {
    let mut table = Table::new(
        vec![
            "STACK",
            "STATUS",
            "FRONT",
            "CONTROLLER",
            "TUNNEL",
            "OPS",
            "KEY",
        ],
        &[5],
    );
    for (s, h) in stacks.iter().zip(checks) {
        let status_style = match status_word(h) {
            "running" => style::GOOD,
            "stale" => style::BAD,
            _ => style::WARN,
        };
        let alive = |v: Option<bool>| match v {
            Some(true) => "up",
            Some(false) => "down",
            None => "-",
        };
        let tunnel = match (s.tunnel.as_str(), h.public) {
            ("none", _) => "none".to_string(),
            (kind, Some(true)) => format!("{kind} ({}, answers)", alive(h.tunnel)),
            (kind, _) => format!("{kind} ({}, not answering)", alive(h.tunnel)),
        };
        table.styled_row(vec![
            (s.name.clone(), style::HEAD),
            (status_word(h).to_string(), status_style),
            (
                format!(":{} healthz {}", s.port, h.front),
                Default::default(),
            ),
            (
                match h.controller {
                    Some(_) => format!(
                        "{} :{} {}",
                        s.controller,
                        s.controller_port,
                        alive(h.controller)
                    ),
                    // The native bridge runs inside `up`: it lives while the supervisor does.
                    None => format!("{} :{}", s.controller, s.controller_port),
                },
                Default::default(),
            ),
            (tunnel, Default::default()),
            (s.operations.to_string(), Default::default()),
            (displayed_key(&s.api_key, show_keys), Default::default()),
        ]);
    }
    let _ = write!(crate::output::stdout(), "{}", table.render());
    for (s, h) in stacks.iter().zip(checks) {
        let _ = writeln!(
            crate::output::stdout(),
            "{}: {}/openapi.json",
            s.name,
            s.public_url
        );
        let width = h.servers.iter().map(|s| s.name.chars().count()).max();
        for server in &h.servers {
            print_server(server, width.unwrap_or_default());
        }
        if h.is_stale() {
            let _ = output::warn(&format!(
                "{}: its `mcp-launch up` (pid {}) is gone; run `mcp-launch down` to stop what is left and tidy the state",
                s.name, s.supervisor.pgid
            ));
        }
    }
}

/// `  everything  up  (2 restarts; last error: …)` under its stack.
fn print_server(server: &ServerHealth, width: usize) {
    let state_style = match server.state {
        "up" => style::GOOD,
        "down" => style::BAD,
        _ => style::WARN,
    };
    let mut notes = Vec::new();
    if server.restarts > 0 {
        notes.push(format!("{} restarts", server.restarts));
    }
    if server.state == "exited" {
        notes.push("restarted by its next call".to_string());
    }
    if let Some(error) = &server.last_error {
        let first = error.lines().next().unwrap_or_default();
        notes.push(format!("last error: {first}"));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("  ({})", notes.join("; "))
    };
    let _ = writeln!(
        crate::output::stdout(),
        "  {:width$}  {state_style}{}{state_style:#}{notes}",
        server.name,
        server.state
    );
}
