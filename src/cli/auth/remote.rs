//! `auth status` and `auth logout`: the tokens we hold for remote servers (src/auth/client).

use serde_json::{json, Value};

use crate::auth::client::{store, Grant};
use crate::output::{self, style};

use super::super::{CliError, GlobalArgs, Outcome};
use super::login;

pub(super) async fn status(global: &GlobalArgs) -> Result<Outcome, CliError> {
    let grants = store::all().await;
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
            "{head}{}{head:#}  {state}  issuer {}  client {}  scopes {}  expires {}  in the {}",
            grant.server,
            grant.issuer,
            grant.client_id,
            grant.scope.as_deref().unwrap_or("-"),
            expiry_text(grant.expires_at),
            grant.location(),
        );
    }
    Ok(Outcome::Success)
}

/// `valid`, `expired` (a refresh will renew it), `needs login`, or `keyring unreachable`
/// (its tokens are in an OS keyring this process cannot read).
fn state_of(grant: &Grant) -> &'static str {
    if grant.lacks_secrets() {
        return "keyring unreachable";
    }
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
        "store": grant.location(),
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

pub(super) async fn logout(server: &str, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let found = store::all()
        .await
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
