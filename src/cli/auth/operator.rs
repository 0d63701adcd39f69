//! `auth approve|clients|revoke`: the operator's side of the built-in authorization server of
//! `serve --http --auth oauth` (its state file in the state directory, or with `--state` the
//! state its replicas share in Redis).

use std::io::Write;

use serde_json::{json, Value};

use crate::auth::server::{admin, State};
use crate::output;

use super::super::{CliError, GlobalArgs, Outcome};

/// The operator's actions.
pub(super) enum Operator {
    Approve { request: String },
    Clients,
    Revoke { client: String },
}

/// Runs one of the operator's actions, on the state in `state` (a Redis URL) or the file.
pub(super) async fn run(
    action: Operator,
    global: &GlobalArgs,
    state: Option<String>,
) -> Result<Outcome, CliError> {
    super::super::serve::read_shared_state(state.as_deref()).await?;
    let store = crate::auth::server::default_store();
    let store = store.as_ref();
    match action {
        Operator::Approve { request } => {
            let found = admin::approve(store, &request)?;
            done(
                found,
                global,
                "approved",
                &request,
                "mcp-launch auth clients lists the pending requests",
            )
        }
        Operator::Revoke { client } => {
            let found = admin::revoke(store, &client)?;
            done(
                found,
                global,
                "revoked",
                &client,
                "mcp-launch auth clients lists the client ids",
            )
        }
        Operator::Clients => clients(&admin::load(store)?, global),
    }
}

/// The answer of `approve` / `revoke`: unknown ids are a usage error naming where to look.
fn done(
    found: bool,
    global: &GlobalArgs,
    verb: &str,
    id: &str,
    help: &str,
) -> Result<Outcome, CliError> {
    if !found {
        return Err(CliError::Usage {
            message: format!("no client or pending request `{id}` (it may have expired)"),
            help: help.into(),
        });
    }
    if global.json {
        output::print_answer(true, json!({ verb: id }))?;
    } else {
        writeln!(output::stdout(), "{verb} {id}")?;
    }
    Ok(Outcome::Success)
}

/// `auth clients`.
fn clients(state: &State, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let rows: Vec<Value> = state
        .clients
        .iter()
        .map(|(id, c)| {
            json!({"client_id": id, "name": c.name, "redirect_uris": c.redirect_uris,
                "scope": c.granted_scope, "registered_at": c.registered_at, "last_used": c.last_used})
        })
        .collect();
    let pending: Vec<Value> = state
        .pending
        .iter()
        .map(|(id, p)| json!({"request": id, "client_id": p.client_id, "scope": p.scope, "approved": p.approved}))
        .collect();
    if global.json {
        output::print_answer(true, json!({"clients": rows, "pending": pending}))?;
        return Ok(Outcome::Success);
    }
    let mut out = output::stdout();
    if rows.is_empty() {
        writeln!(out, "no clients")?;
    }
    for (id, c) in &state.clients {
        let last = c.last_used.map_or("never".to_string(), ago);
        writeln!(
            out,
            "{id}  {}  {}  scope {}  last use {last}",
            c.name.as_deref().unwrap_or("(no name)"),
            c.redirect_uris.join(" "),
            c.granted_scope.as_deref().unwrap_or("(none yet)"),
        )?;
    }
    for (id, p) in &state.pending {
        writeln!(
            out,
            "pending {id}: client {} asks for {} (mcp-launch auth approve {id})",
            p.client_id, p.scope
        )?;
    }
    Ok(Outcome::Success)
}

/// "N s/min/h/d ago" for a time in seconds since the epoch.
fn ago(at: u64) -> String {
    let secs = crate::auth::server::now().saturating_sub(at);
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86400),
    }
}
