//! The OS keyring (the `keyring` crate: the Secret Service over D-Bus on Linux and the BSDs,
//! the Keychain on macOS, the Credential Manager on Windows) as the home of a grant's secrets:
//! its access and refresh tokens and a dynamically registered client's secret. One item per
//! MCP endpoint: service [`SERVICE`], account the endpoint's URL (the token store's key).
//!
//! `MCP_LAUNCH_TOKEN_STORE` chooses ([`Choice`]): `auto` (the default) uses the keyring when
//! one answers and the 0600 file otherwise, `keyring` insists on it, `file` never contacts it.
//! Every call is bounded ([`WAIT`]): a locked collection may raise a prompt nobody answers.
//! A keyring that failed once is not asked again by this process. The calls block (D-Bus on
//! Linux): they run on tokio's blocking threads, and the async callers await them there, so
//! a slow keyring never holds a runtime thread (the gateway serves other calls meanwhile).
//!
//! The secrets read are kept in this process's memory (as the file's were), by the stamp the
//! token store's record names: a record whose stamp changed (another process refreshed) is
//! read anew.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::{AuthError, Step};

/// The keyring's service name of every item we store.
pub const SERVICE: &str = "mcp-launch";

/// The variable that chooses where tokens live.
pub const CHOICE_VAR: &str = "MCP_LAUNCH_TOKEN_STORE";

/// How long one keyring call may take. A Secret Service answers in milliseconds; a locked
/// collection asks for a prompt, which on a headless machine nobody answers.
const WAIT: Duration = Duration::from_secs(5);

/// Set once the keyring failed in this process: later calls go to the file at once.
static UNREACHABLE: AtomicBool = AtomicBool::new(false);

/// The secrets read or written by this process, by account, with their stamp.
static KNOWN: Mutex<Option<HashMap<String, Secrets>>> = Mutex::new(None);

/// Where tokens are stored (`MCP_LAUNCH_TOKEN_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The keyring when one answers, else the file.
    Auto,
    /// The keyring, or an error.
    Keyring,
    /// The file; the keyring is never contacted.
    File,
}

/// The choice `MCP_LAUNCH_TOKEN_STORE` makes (unset or empty: `auto`).
pub fn choice() -> Result<Choice, AuthError> {
    parse(&std::env::var(CHOICE_VAR).unwrap_or_default())
}

fn parse(value: &str) -> Result<Choice, AuthError> {
    match value.trim() {
        "" | "auto" => Ok(Choice::Auto),
        "keyring" => Ok(Choice::Keyring),
        "file" => Ok(Choice::File),
        other => Err(AuthError::Failed {
            resource: CHOICE_VAR.into(),
            step: Step::Keyring,
            reason: format!("{other:?} is not a token store: use auto, keyring or file"),
        }),
    }
}

/// The secret part of a grant, as one keyring item holds it (JSON).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Secrets {
    /// Names this version: the token store's record carries the same stamp.
    pub stamp: String,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// Stores `secrets` under `account`.
pub(crate) async fn put(account: &str, secrets: &Secrets) -> Result<(), String> {
    let text = serde_json::to_string(secrets).map_err(|e| e.to_string())?;
    let owned = account.to_string();
    bounded(move || entry(&owned)?.set_password(&text)).await?;
    remember(account, Some(secrets.clone()));
    Ok(())
}

/// The secrets stored under `account` with `stamp` (from this process's memory when it wrote
/// or read that version); `Ok(None)` when the keyring holds none.
pub(crate) async fn get(account: &str, stamp: &str) -> Result<Option<Secrets>, String> {
    if let Some(secrets) = known(account).filter(|secrets| secrets.stamp == stamp) {
        return Ok(Some(secrets));
    }
    let owned = account.to_string();
    let text = match bounded(move || entry(&owned)?.get_password()).await {
        Err(reason) if reason == NO_ENTRY => return Ok(None),
        other => other?,
    };
    let secrets: Secrets = serde_json::from_str(&text)
        .map_err(|e| format!("its item for {account} is not ours ({e})"))?;
    remember(account, Some(secrets.clone()));
    Ok(Some(secrets))
}

/// Deletes the item of `account`; true when there was one.
pub(crate) async fn delete(account: &str) -> Result<bool, String> {
    remember(account, None);
    let owned = account.to_string();
    match bounded(move || entry(&owned)?.delete_credential()).await {
        Ok(()) => Ok(true),
        Err(reason) if reason == NO_ENTRY => Ok(false),
        Err(reason) => Err(reason),
    }
}

/// The secrets this process last wrote or read under `account`.
fn known(account: &str) -> Option<Secrets> {
    let known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    known.as_ref()?.get(account).cloned()
}

fn remember(account: &str, secrets: Option<Secrets>) {
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    let known = known.get_or_insert_with(HashMap::new);
    match secrets {
        Some(secrets) => known.insert(account.to_string(), secrets),
        None => known.remove(account),
    };
}

/// What [`bounded`] says when the item does not exist.
const NO_ENTRY: &str = "no such item";

fn entry(account: &str) -> ::keyring::Result<::keyring::Entry> {
    ::keyring::Entry::new(SERVICE, account)
}

/// Runs one keyring call on a blocking thread, waiting at most [`WAIT`] without holding the
/// caller's runtime thread. A failure to reach the keyring (or a call that does not return)
/// marks it unreachable for this process; a missing item is [`NO_ENTRY`].
async fn bounded<T: Send + 'static>(
    call: impl FnOnce() -> ::keyring::Result<T> + Send + 'static,
) -> Result<T, String> {
    if UNREACHABLE.load(Ordering::Relaxed) {
        return Err("it did not answer earlier in this process".into());
    }
    let reason = match tokio::time::timeout(WAIT, tokio::task::spawn_blocking(call)).await {
        Ok(Ok(Ok(value))) => return Ok(value),
        Ok(Ok(Err(::keyring::Error::NoEntry))) => return Err(NO_ENTRY.into()),
        Ok(Ok(Err(e))) => e.to_string(),
        Ok(Err(joined)) => format!("its call failed: {joined}"),
        Err(_) => format!(
            "it did not answer within {} s (a locked collection waiting for a prompt?)",
            WAIT.as_secs()
        ),
    };
    UNREACHABLE.store(true, Ordering::Relaxed);
    Err(reason)
}

/// The error of a keyring that `MCP_LAUNCH_TOKEN_STORE=keyring` insists on.
pub(crate) fn insisted(url: &str, reason: String) -> AuthError {
    AuthError::Failed {
        resource: url.to_string(),
        step: Step::Keyring,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_auto_keyring_or_file_and_nothing_else() {
        assert_eq!(parse("").unwrap(), Choice::Auto);
        assert_eq!(parse("auto").unwrap(), Choice::Auto);
        assert_eq!(parse("keyring").unwrap(), Choice::Keyring);
        assert_eq!(parse(" file ").unwrap(), Choice::File);
        let wrong = parse("files").unwrap_err();
        assert_eq!(wrong.kind(), "auth_failed");
        assert!(
            wrong.to_string().contains("MCP_LAUNCH_TOKEN_STORE"),
            "{wrong}"
        );
        assert!(
            wrong.help().contains("MCP_LAUNCH_TOKEN_STORE=file"),
            "{}",
            wrong.help()
        );
    }

    /// The call blocks until another task of this runtime's only thread speaks: it returns
    /// only if waiting for it left that thread free.
    #[tokio::test(flavor = "current_thread")]
    async fn a_slow_keyring_call_leaves_the_runtime_thread_free() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let call = bounded(move || {
            rx.recv_timeout(Duration::from_secs(3))
                .map_err(|_| ::keyring::Error::NoEntry)?;
            Ok(7)
        });
        let other = async move {
            tokio::task::yield_now().await;
            let _ = tx.send(());
        };
        let (got, ()) = tokio::join!(call, other);
        assert_eq!(got, Ok(7), "the call held the runtime thread");
    }
}
