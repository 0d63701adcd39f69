//! The token store: one owner-only (0600) JSON file under the user's state dir, keyed by the
//! MCP endpoint's URL, changed only under its lock. A refresh happens under that lock too, so
//! two processes that find the same token expired make one refresh: the second reads what
//! the first wrote.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nix::fcntl::Flock;

use super::error::{AuthError, Step};
use super::Grant;
use crate::files;

/// A token this close to its expiry is refreshed before use.
const EXPIRY_MARGIN_SECS: u64 = 30;

type Grants = BTreeMap<String, Grant>;

/// `$XDG_STATE_HOME/mcp-launch/oauth/tokens.json`.
pub fn path() -> PathBuf {
    files::state_dir().join("oauth").join("tokens.json")
}

fn lock_path() -> PathBuf {
    path().with_file_name("tokens.json.lock")
}

fn store_error(reason: String) -> AuthError {
    AuthError::Failed {
        resource: path().display().to_string(),
        step: Step::Store,
        reason,
    }
}

/// Every stored grant.
pub fn all() -> Vec<Grant> {
    read().into_values().collect()
}

/// The grant for the MCP endpoint `url`, as stored.
pub fn load(url: &str) -> Option<Grant> {
    read().remove(url)
}

fn read() -> Grants {
    std::fs::read(path())
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn write(grants: &Grants) -> Result<(), AuthError> {
    let bytes = serde_json::to_vec_pretty(grants).map_err(|e| store_error(e.to_string()))?;
    files::write_private(&path(), &bytes).map_err(|e| store_error(e.to_string()))
}

/// Holds the store's lock (taken off the async threads: the wait may be long).
async fn hold() -> Result<Flock<std::fs::File>, AuthError> {
    let lock = lock_path();
    tokio::task::spawn_blocking(move || {
        if let Some(dir) = lock.parent() {
            std::fs::create_dir_all(dir)?;
        }
        files::lock(&lock)
    })
    .await
    .map_err(|e| store_error(e.to_string()))?
    .map_err(|e| store_error(format!("cannot lock it: {e}")))
}

/// Stores `grant` (replacing the one of its URL).
pub async fn save(grant: Grant) -> Result<(), AuthError> {
    let _held = hold().await?;
    let mut grants = read();
    grants.insert(grant.url.clone(), grant);
    write(&grants)
}

/// Forgets the grant of `url`; the grant that was there, if any.
pub async fn remove(url: &str) -> Result<Option<Grant>, AuthError> {
    let _held = hold().await?;
    let mut grants = read();
    let gone = grants.remove(url);
    if gone.is_some() {
        write(&grants)?;
    }
    Ok(gone)
}

/// The access token to send to `url`: the stored one while it is fresh, else refreshed
/// first. `None` when nothing is stored (the server may need no login at all).
pub async fn token_for(url: &str) -> Result<Option<String>, AuthError> {
    let Some(grant) = load(url) else {
        return Ok(None);
    };
    if !grant.expires_soon() {
        return Ok(Some(grant.access_token));
    }
    refresh(url, &grant.access_token).await.map(Some)
}

/// Replaces the access token `rejected` (expired, or answered 401) with a new one. Under the
/// store's lock: when another process already replaced it, its token is taken and no request
/// is made; else one refresh request, whose rotated refresh token is stored at once.
pub async fn refresh(url: &str, rejected: &str) -> Result<String, AuthError> {
    let _held = hold().await?;
    let mut grants = read();
    let needs_login = |reason: &str| AuthError::NeedsLogin {
        resource: url.to_string(),
        reason: reason.to_string(),
    };
    let grant = grants
        .get_mut(url)
        .ok_or_else(|| needs_login("no token is stored"))?;
    if grant.access_token != rejected && !grant.expires_soon() {
        return Ok(grant.access_token.clone());
    }
    let refresh_token = grant
        .refresh_token
        .clone()
        .ok_or_else(|| needs_login("the token expired and came without a refresh token"))?;
    if grant.secret_from_config && grant.secret().is_none() {
        return Err(AuthError::Failed {
            resource: url.to_string(),
            step: Step::Refresh,
            reason: format!(
                "the client secret of {} comes from its config's `oauth.clientSecret`, which this process has not read (it is never stored)",
                grant.server
            ),
        });
    }
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
    ];
    let client = super::http_client();
    let answer = grant
        .token_client(&client)
        .request(Step::Refresh, &pairs)
        .await;
    match answer {
        Ok(token) => {
            grant.take(token);
            let access = grant.access_token.clone();
            write(&grants)?;
            Ok(access)
        }
        Err(AuthError::Failed { reason, .. }) if reason.contains("invalid_grant") => Err(
            needs_login("the authorization server refused the refresh token (revoked or expired)"),
        ),
        Err(other) => Err(other),
    }
}

impl Grant {
    /// Whether the access token is expired or about to be.
    pub fn expires_soon(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at <= super::now() + EXPIRY_MARGIN_SECS)
    }
}
