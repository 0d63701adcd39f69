//! The token store: one owner-only (0600) JSON file under the user's state dir, keyed by the
//! MCP endpoint's URL, changed only under its lock. A refresh happens under that lock too, so
//! two processes that find the same token expired make one refresh: the second reads what
//! the first wrote. A request's token is taken from what this process last read while the
//! file is the same one (`seen`: its stamp is checked per request, the file read again only
//! when it changed), so logins, refreshes and logouts by other processes are still seen.
//!
//! A grant's secrets (its tokens, a registered client's secret) go to the OS keyring when one
//! answers (`keyring`, `MCP_LAUNCH_TOKEN_STORE`): the file's record then holds them empty and
//! names the keyring item's stamp. Else they stay in the record, as before keyrings.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nix::fcntl::Flock;

use super::error::{AuthError, Step};
use super::keyring::{self, Choice, Secrets};
use super::Grant;
use crate::files;

mod seen;

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

/// Every stored grant, with its secrets.
pub async fn all() -> Vec<Grant> {
    let mut grants = Vec::new();
    for grant in read().into_values() {
        grants.push(with_secrets(grant).await);
    }
    grants
}

/// The grant for the MCP endpoint `url`, as stored, with its secrets.
pub async fn load(url: &str) -> Option<Grant> {
    let grant = read().remove(url)?;
    Some(with_secrets(grant).await)
}

/// A record with the secrets the keyring holds for it; left without them (an empty access
/// token: see [`Grant::lacks_secrets`]) when the keyring cannot give them.
async fn with_secrets(mut grant: Grant) -> Grant {
    let Some(stamp) = grant.keyring.clone() else {
        return grant;
    };
    let found = match keyring::choice() {
        Ok(Choice::File) => Err(format!("{}=file", keyring::CHOICE_VAR)),
        Ok(_) => keyring::get(&grant.url, &stamp).await,
        Err(e) => Err(e.to_string()),
    };
    match found {
        Ok(Some(secrets)) => {
            grant.access_token = secrets.access_token;
            grant.refresh_token = secrets.refresh_token;
            grant.client_secret = secrets.client_secret;
        }
        Ok(None) => {
            tracing::debug!(server = %grant.server, "the OS keyring holds no tokens for it")
        }
        Err(reason) => {
            tracing::debug!(server = %grant.server, %reason, "the OS keyring cannot give its tokens")
        }
    }
    grant
}

/// Puts `grant`'s secrets where they go: the keyring when the choice allows and it answers
/// (the grant then names the item's stamp), else the record itself. Only
/// `MCP_LAUNCH_TOKEN_STORE=keyring` makes a silent keyring an error.
async fn place(grant: &mut Grant) -> Result<(), AuthError> {
    grant.keyring = None;
    let choice = keyring::choice()?;
    if choice == Choice::File {
        return Ok(());
    }
    let secrets = Secrets {
        stamp: crate::auth::keys::random_string(16),
        access_token: grant.access_token.clone(),
        refresh_token: grant.refresh_token.clone(),
        client_secret: grant.client_secret.clone(),
    };
    match keyring::put(&grant.url, &secrets).await {
        Ok(()) => grant.keyring = Some(secrets.stamp),
        Err(reason) if choice == Choice::Keyring => {
            return Err(keyring::insisted(&grant.url, reason))
        }
        Err(reason) => {
            tracing::debug!(server = %grant.server, %reason, "the OS keyring does not answer: the tokens go to the 0600 file")
        }
    }
    Ok(())
}

/// The record as the file holds it: without the secrets the keyring holds.
fn on_disk(grant: &Grant) -> Grant {
    let mut record = grant.clone();
    if record.keyring.is_some() {
        record.access_token = String::new();
        record.refresh_token = None;
        record.client_secret = None;
    }
    record
}

fn read() -> Grants {
    read_at(&path())
}

fn read_at(path: &std::path::Path) -> Grants {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn write(grants: &Grants) -> Result<(), AuthError> {
    let records: Grants = grants
        .iter()
        .map(|(url, grant)| (url.clone(), on_disk(grant)))
        .collect();
    let bytes = serde_json::to_vec_pretty(&records).map_err(|e| store_error(e.to_string()))?;
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

/// Stores `grant` (replacing the one of its URL), its secrets in the keyring when one answers.
pub async fn save(mut grant: Grant) -> Result<(), AuthError> {
    let _held = hold().await?;
    place(&mut grant).await?;
    let mut grants = read();
    grants.insert(grant.url.clone(), grant);
    write(&grants)
}

/// Forgets the grant of `url`, in the file and in the keyring (unless
/// `MCP_LAUNCH_TOKEN_STORE=file`); the record that was there, if any.
pub async fn remove(url: &str) -> Result<Option<Grant>, AuthError> {
    let _held = hold().await?;
    let mut grants = read();
    let gone = grants.remove(url);
    if gone.is_some() {
        write(&grants)?;
    }
    if keyring::choice()? != Choice::File {
        if let Err(reason) = keyring::delete(url).await {
            tracing::debug!(%reason, "the OS keyring did not delete the tokens");
        }
    }
    Ok(gone)
}

/// The access token to send to `url`: the stored one while it is fresh, else refreshed
/// first. `None` when nothing is stored (the server may need no login at all). Asked before
/// every request to a remote server: the store is read again only when its file changed
/// since this process last read it ([`seen::held`]).
pub async fn token_for(url: &str) -> Result<Option<String>, AuthError> {
    let Some(held) = seen::held(&path(), url).await else {
        return Ok(None);
    };
    if held.lacks_secrets {
        return Err(keyring_silent(url));
    }
    if !held.expires_soon() {
        return Ok(Some(held.access_token));
    }
    refresh(url, &held.access_token).await.map(Some)
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
    *grant = with_secrets(grant.clone()).await;
    if grant.lacks_secrets() {
        return Err(keyring_silent(url));
    }
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
            // The old refresh token is spent: the new one is kept, in the file if it must.
            if let Err(e) = place(grant).await {
                tracing::warn!(error = %e, "the rotated tokens go to the 0600 file");
            }
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

/// The grant's tokens are in a keyring this process cannot reach.
fn keyring_silent(url: &str) -> AuthError {
    AuthError::NeedsLogin {
        resource: url.to_string(),
        reason: format!(
            "its tokens are in the OS keyring, which does not answer in this process (a daemon or service without the desktop's D-Bus session?): give it DBUS_SESSION_BUS_ADDRESS, or log in again with {}=file",
            keyring::CHOICE_VAR
        ),
    }
}

impl Grant {
    /// Its secrets live in the keyring and could not be read from it.
    pub fn lacks_secrets(&self) -> bool {
        self.keyring.is_some() && self.access_token.is_empty()
    }

    /// Whether the access token is expired or about to be.
    pub fn expires_soon(&self) -> bool {
        expires_soon(self.expires_at)
    }
}

/// Whether a token expiring at `at` is expired or about to be.
fn expires_soon(at: Option<u64>) -> bool {
    at.is_some_and(|at| at <= super::now() + EXPIRY_MARGIN_SECS)
}
