//! Where what must outlive a process is kept when several replicas of `serve --http` share
//! the work: output handles, the usage record, the authorization server's clients and
//! tokens, and the 2025 era's HTTP sessions (their handshake, so any replica can take a
//! session over). By default nothing here is used and each room keeps its local files;
//! `serve --http --state redis://…` (or `MCP_LAUNCH_STATE`) puts those records in Redis.
//!
//! This room knows the store and nothing of the records: each room keeps its own shape (a
//! handle's header and body, a usage line, the authorization server's state, a session's
//! `initialize`) and names its keys `mcp-launch:<kind>:<id>` through [`Redis::key`].
//! Identities are never keys: a session id is hashed first, tokens and secrets are hashed by
//! the authorization server before they reach any store.
//!
//! One store per process ([`install`], then [`shared`]), chosen once at start, like the
//! metrics registry. Every command is bounded ([`RESPONSE_TIMEOUT`]); a store that stops
//! answering fails the requests that need it and turns `/readyz` to 503
//! ([`Redis::is_reachable`]), and the replica carries on when it answers again.

mod error;
mod redis;

use std::sync::{Arc, OnceLock};

pub use self::redis::{Redis, CONNECT_TIMEOUT, PREFIX, RESPONSE_TIMEOUT};
pub use error::StateError;

/// The environment variable `--state` reads.
pub const ENV: &str = "MCP_LAUNCH_STATE";

/// The process's shared store, once installed.
static SHARED: OnceLock<Arc<Redis>> = OnceLock::new();

/// Makes `store` the process's shared store (false when one was installed already: the first
/// stays).
pub fn install(store: Arc<Redis>) -> bool {
    SHARED.set(store).is_ok()
}

/// The process's shared store, if `--state` named one.
pub fn shared() -> Option<Arc<Redis>> {
    SHARED.get().cloned()
}

/// Whether the state can be used now: always with local files, with Redis while it answers.
pub fn is_reachable() -> bool {
    SHARED.get().is_none_or(|store| store.is_reachable())
}

/// `url` with its password (and a `pass=` query) replaced by `***`, for errors and logs.
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_string(),
    };
    let tail = match tail.find("pass=") {
        Some(at) => {
            let after = &tail[at + 5..];
            let rest = after.find('&').map_or("", |i| &after[i..]);
            format!("{}pass=***{rest}", &tail[..at])
        }
        None => tail.to_string(),
    };
    match scheme {
        "" => format!("{authority}{tail}"),
        scheme => format!("{scheme}://{authority}{tail}"),
    }
}

#[cfg(test)]
pub(crate) mod tests;
