//! `mcp-launch auth login|status|logout`: OAuth to remote servers (src/auth/client).

mod login;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::auth::client::{store, Grant};
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Log in to remote servers that ask for OAuth, and see or forget their tokens.
///
/// Tokens are kept owner-only under the state dir ($XDG_STATE_HOME/mcp-launch/oauth) and
/// refreshed without you; they are never printed, logged or handed to a child process.
///
/// Example: mcp-launch auth login github
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: AuthAction,
}

/// The `auth` actions.
#[derive(Debug, Subcommand)]
pub enum AuthAction {
    /// Log in to SERVER: a browser on a loopback redirect, or `--no-browser` to paste it.
    Login(login::LoginArgs),
    /// Every server logged in to: issuer, client, scopes, expiry.
    Status,
    /// Forget SERVER's tokens (revoking them where its authorization server offers it).
    Logout {
        /// The server's name in the config (or its URL).
        server: String,
    },
}

/// Runs `auth`.
pub async fn run(args: AuthArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    match args.action {
        AuthAction::Login(login) => login::run(login, global).await,
        AuthAction::Status => status(global),
        AuthAction::Logout { server } => logout(&server, global).await,
    }
}

fn status(global: &GlobalArgs) -> Result<Outcome, CliError> {
    let grants = store::all();
    if global.json {
        let servers: Vec<Value> = grants.iter().map(grant_json).collect();
        output::print_json(&json!({"success": true, "servers": servers}))?;
        return Ok(Outcome::Success);
    }
    if grants.is_empty() {
        anstream::println!("no OAuth logins (mcp-launch auth login SERVER)");
    }
    let (head, good, bad) = (style::HEAD, style::GOOD, style::BAD);
    for grant in &grants {
        let state = match state_of(grant) {
            "valid" => format!("{good}valid{good:#}"),
            other => format!("{bad}{other}{bad:#}"),
        };
        anstream::println!(
            "{head}{}{head:#}  {state}  issuer {}  client {}  scopes {}  expires {}",
            grant.server,
            grant.issuer,
            grant.client_id,
            grant.scope.as_deref().unwrap_or("-"),
            expiry_text(grant.expires_at),
        );
    }
    Ok(Outcome::Success)
}

/// `valid`, `expired` (a refresh will renew it) or `needs login`.
fn state_of(grant: &Grant) -> &'static str {
    match (grant.expires_soon(), grant.refresh_token.is_some()) {
        (false, _) => "valid",
        (true, true) => "expired",
        (true, false) => "needs login",
    }
}

/// A grant as `auth status --json` shows it: never a token or a secret.
fn grant_json(grant: &Grant) -> Value {
    json!({
        "server": grant.server,
        "url": crate::mcp::redact::url(&grant.url),
        "issuer": grant.issuer,
        "clientId": grant.client_id,
        "scopes": grant.scope,
        "expiresAt": grant.expires_at,
        "refreshable": grant.refresh_token.is_some(),
        "state": state_of(grant),
    })
}

fn expiry_text(at: Option<u64>) -> String {
    match at {
        None => "never".into(),
        Some(at) => humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(at),
        )
        .to_string(),
    }
}

async fn logout(server: &str, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let found = store::all()
        .into_iter()
        .find(|g| g.server == server || g.url == server);
    let Some(grant) = found else {
        return Err(CliError::Usage {
            message: format!("no OAuth login for {server:?}"),
            help: "`mcp-launch auth status` lists the servers logged in to".into(),
        });
    };
    let revoked = login::revoke(&grant).await;
    store::remove(&grant.url).await?;
    if global.json {
        output::print_json(&json!({"success": true, "server": grant.server, "revoked": revoked}))?;
    } else {
        let how = if revoked {
            " (revoked at its authorization server)"
        } else {
            ""
        };
        anstream::println!("logged out of {}{how}", grant.server);
    }
    Ok(Outcome::Success)
}
