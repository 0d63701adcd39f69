//! What the authorization server remembers — clients, pending consents, tokens — and where:
//! behind [`Store`]. [`FileStore`] keeps one
//! owner-only (0600) JSON file changed atomically under a lock (`crate::files`), so `auth
//! revoke` in another process and the server never lose each other's changes. Tokens and
//! client secrets are kept only as SHA-256 hashes: the file alone lets no one in.
//! [`RedisStore`] keeps the same state, hashed the same way, in the shared state store of
//! `serve --http --state redis://…`, so every replica knows every client and token.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Everything the authorization server keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Registered clients by `client_id`.
    #[serde(default)]
    pub clients: BTreeMap<String, Client>,
    /// Authorization requests waiting for the operator's consent, by request id.
    #[serde(default)]
    pub pending: BTreeMap<String, Pending>,
    /// Access tokens by [`hash`].
    #[serde(default)]
    pub access: BTreeMap<String, Grant>,
    /// Refresh tokens by [`hash`].
    #[serde(default)]
    pub refresh: BTreeMap<String, Refresh>,
}

/// A registered client (RFC 7591).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    /// The name it gave, shown to the operator.
    #[serde(default)]
    pub name: Option<String>,
    /// Its redirect URIs, matched exactly.
    pub redirect_uris: Vec<String>,
    /// The [`hash`] of its secret (confidential clients only).
    #[serde(default)]
    pub secret_hash: Option<String>,
    /// When it registered (seconds since the epoch).
    pub registered_at: u64,
    /// The scopes the operator granted it (space-separated); none until consent.
    #[serde(default)]
    pub granted_scope: Option<String>,
    /// When it last got a token (seconds since the epoch).
    #[serde(default)]
    pub last_used: Option<u64>,
}

/// An authorization request waiting for consent: by one-time code on the page, or by `auth
/// approve` (which sets `approved`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The client asking.
    pub client_id: String,
    /// The scope asked for.
    pub scope: String,
    /// The redirect URI (already matched against the client's).
    pub redirect_uri: String,
    /// When the request stops being answerable (seconds since the epoch).
    pub expires_at: u64,
    /// Set by the operator's `auth approve`.
    #[serde(default)]
    pub approved: bool,
}

/// What an access token grants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// The client holding it.
    pub client_id: String,
    /// The person it was issued to (an OpenID provider's `sub`; none from the built-in server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Space-separated scopes.
    pub scope: String,
    /// The resource (audience, RFC 8707) it was issued for.
    pub resource: String,
    /// When it expires (seconds since the epoch).
    pub expires_at: u64,
    /// The refresh family it came from (revoked together).
    pub family: String,
}

/// A refresh token: rotated on use; a used one presented again revokes its whole family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refresh {
    /// What the access tokens it yields grant (`expires_at` is the refresh token's own).
    pub grant: Grant,
    /// Set when it was exchanged.
    #[serde(default)]
    pub used: bool,
}

impl State {
    /// Drops what has expired (pending requests, access and refresh tokens) as of `now`.
    pub fn prune(&mut self, now: u64) {
        self.pending.retain(|_, p| p.expires_at > now);
        self.access.retain(|_, g| g.expires_at > now);
        self.refresh.retain(|_, r| r.grant.expires_at > now);
    }

    /// Ends every token of `family`.
    pub fn revoke_family(&mut self, family: &str) {
        self.access.retain(|_, g| g.family != family);
        self.refresh.retain(|_, r| r.grant.family != family);
    }

    /// Ends a client: its registration, its pending requests and every token it holds.
    pub fn revoke_client(&mut self, client_id: &str) -> bool {
        let known = self.clients.remove(client_id).is_some();
        self.pending.retain(|_, p| p.client_id != client_id);
        self.access.retain(|_, g| g.client_id != client_id);
        self.refresh.retain(|_, r| r.grant.client_id != client_id);
        known
    }
}

/// The SHA-256 of a token or secret, in hex: what is kept instead of it.
pub fn hash(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the authorization server keeps its [`State`].
pub trait Store: Send + Sync {
    /// The state as it is now.
    fn load(&self) -> io::Result<State>;
    /// Changes the state with `change` atomically (no other change in between) and returns
    /// what `change` returned.
    fn update(&self, change: &mut dyn FnMut(&mut State)) -> io::Result<State>;
    /// A stamp that changes whenever the state does (cheap: checked on every request, so a
    /// revocation by another process is seen at once).
    fn stamp(&self) -> io::Result<u128>;
    /// Keeps an authorization code (`record`, under the code's hash) for `ttl` where every
    /// replica's `/token` finds it; false when this store keeps none (the server then keeps
    /// its codes in its own memory: one process).
    fn put_code(&self, _hash: &str, _record: &[u8], _ttl: std::time::Duration) -> io::Result<bool> {
        Ok(false)
    }
    /// Takes the code kept under `hash` by [`Store::put_code`]: once, whichever replica asks.
    fn take_code(&self, _hash: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(None)
    }
}

/// The state in memory only (tests, and one-shot servers).
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<(u128, State)>,
}

impl Store for MemoryStore {
    fn load(&self) -> io::Result<State> {
        Ok(self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone())
    }

    fn update(&self, change: &mut dyn FnMut(&mut State)) -> io::Result<State> {
        let mut held = self.state.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut held.1);
        held.0 += 1;
        Ok(held.1.clone())
    }

    fn stamp(&self) -> io::Result<u128> {
        Ok(self.state.lock().unwrap_or_else(|e| e.into_inner()).0)
    }
}

/// The state in one owner-only JSON file, changed under its lock.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// The store at `path` (created on the first change).
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The default file: `oauth-server.json` in the state directory.
    pub fn default_path() -> PathBuf {
        crate::files::state_dir().join("oauth-server.json")
    }

    fn parse(&self, bytes: &[u8]) -> io::Result<State> {
        serde_json::from_slice(bytes).map_err(|e| {
            io::Error::other(format!(
                "{} is not a state file of ours ({e}): remove it (every client then registers again)",
                self.path.display()
            ))
        })
    }
}

impl Store for FileStore {
    fn load(&self) -> io::Result<State> {
        match std::fs::read(&self.path) {
            Ok(bytes) => self.parse(&bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => Err(e),
        }
    }

    fn update(&self, change: &mut dyn FnMut(&mut State)) -> io::Result<State> {
        let mut outcome: io::Result<State> = Ok(State::default());
        crate::files::update_locked(&self.path, |current| {
            let mut state = match current.map(|bytes| self.parse(&bytes)).transpose() {
                Ok(state) => state.unwrap_or_default(),
                Err(e) => {
                    outcome = Err(e);
                    return None;
                }
            };
            change(&mut state);
            let bytes = serde_json::to_vec(&state).ok();
            outcome = Ok(state);
            bytes
        })?;
        outcome
    }

    fn stamp(&self) -> io::Result<u128> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(&self.path) {
            // The rename of every write gives a new inode; mtime and size catch the rest.
            Ok(meta) => Ok((meta.ino() as u128) << 64
                ^ (meta.mtime_nsec() as u128)
                ^ ((meta.mtime() as u128) << 32)
                ^ meta.len() as u128),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// The state in the shared state store: one JSON record at `mcp-launch:oauth:state`, changed
/// by compare-and-set on its stamp (`mcp-launch:oauth:stamp`), so no replica's change is lost
/// and each sees another's revocation on its next request (the stamp is read on each).
#[derive(Debug, Clone)]
pub struct RedisStore {
    shared: Arc<crate::state::Redis>,
}

impl RedisStore {
    /// The state kept in `shared`.
    pub fn new(shared: Arc<crate::state::Redis>) -> Self {
        Self { shared }
    }

    fn keys() -> (String, String) {
        use crate::state::Redis;
        (Redis::key("oauth", "state"), Redis::key("oauth", "stamp"))
    }

    fn parse(&self, key: &str, bytes: Option<Vec<u8>>) -> Result<State, crate::state::StateError> {
        let Some(bytes) = bytes else {
            return Ok(State::default());
        };
        serde_json::from_slice(&bytes).map_err(|e| crate::state::StateError::Foreign {
            url: self.shared.url().to_string(),
            key: key.to_string(),
            reason: e.to_string(),
        })
    }
}

impl Store for RedisStore {
    fn put_code(&self, hash: &str, record: &[u8], ttl: std::time::Duration) -> io::Result<bool> {
        let (shared, key) = (&self.shared, crate::state::Redis::key("oauth-code", hash));
        shared
            .blocking(shared.put(&key, record, Some(ttl), true))
            .map_err(io::Error::other)?;
        Ok(true)
    }

    fn take_code(&self, hash: &str) -> io::Result<Option<Vec<u8>>> {
        let (shared, key) = (&self.shared, crate::state::Redis::key("oauth-code", hash));
        shared.blocking(shared.take(&key)).map_err(io::Error::other)
    }

    fn load(&self) -> io::Result<State> {
        let (key, _) = Self::keys();
        let shared = &self.shared;
        let bytes = shared
            .blocking(shared.get(&key))
            .map_err(io::Error::other)?;
        self.parse(&key, bytes).map_err(io::Error::other)
    }

    fn update(&self, change: &mut dyn FnMut(&mut State)) -> io::Result<State> {
        let (key, stamp) = Self::keys();
        let mut outcome = State::default();
        let mut apply = |bytes: Option<Vec<u8>>| {
            let mut state = self.parse(&key, bytes)?;
            change(&mut state);
            let bytes = serde_json::to_vec(&state).unwrap_or_default();
            outcome = state;
            Ok(bytes)
        };
        let shared = &self.shared;
        shared
            .blocking(shared.update(&key, &stamp, &mut apply))
            .map_err(io::Error::other)?;
        Ok(outcome)
    }

    fn stamp(&self) -> io::Result<u128> {
        let (_, stamp) = Self::keys();
        let shared = &self.shared;
        let stamp = shared.blocking(shared.stamp(&stamp));
        stamp.map(u128::from).map_err(io::Error::other)
    }
}

/// The store `serve --auth oauth` uses: the shared state store when `--state` named one, else
/// the default file.
pub fn default_store() -> Arc<dyn Store> {
    match crate::state::shared() {
        Some(shared) => Arc::new(RedisStore::new(shared)),
        None => Arc::new(FileStore::new(FileStore::default_path())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file store keeps what it was given, owner-only, and its stamp moves with each change.
    #[test]
    fn the_file_store_keeps_changes_owner_only_and_stamps_them() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path().join("oauth.json"));
        assert_eq!(store.load().unwrap(), State::default());
        let before = store.stamp().unwrap();
        store
            .update(&mut |state| {
                state.clients.insert(
                    "c1".into(),
                    Client {
                        name: Some("x".into()),
                        redirect_uris: vec!["http://127.0.0.1:1/cb".into()],
                        secret_hash: None,
                        registered_at: 1,
                        granted_scope: None,
                        last_used: None,
                    },
                );
            })
            .unwrap();
        assert_ne!(store.stamp().unwrap(), before);
        assert!(store.load().unwrap().clients.contains_key("c1"));
        let mode = std::fs::metadata(dir.path().join("oauth.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(store.load().unwrap().revoke_client("c1"));
    }

    /// Two replicas' stores over one Redis: a client registered through one is known to the
    /// other, each change moves the stamp both read, and nothing is kept in clear.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_share_the_state_through_redis_hashed() {
        let Some(server) = crate::state::tests::RedisServer::start() else {
            return;
        };
        let one = RedisStore::new(crate::state::Redis::connect(&server.url).await.unwrap());
        let two = RedisStore::new(crate::state::Redis::connect(&server.url).await.unwrap());
        assert_eq!(two.load().unwrap(), State::default());
        let before = two.stamp().unwrap();
        let token = "at_secret_token";
        one.update(&mut |state| {
            state.access.insert(
                hash(token),
                Grant {
                    client_id: "c1".into(),
                    scope: "tools:all".into(),
                    resource: "http://x/mcp".into(),
                    expires_at: u64::MAX,
                    family: "f".into(),
                    subject: None,
                },
            );
        })
        .unwrap();
        assert_ne!(two.stamp().unwrap(), before);
        assert!(two.load().unwrap().access.contains_key(&hash(token)));
        two.update(&mut |state| state.revoke_family("f")).unwrap();
        assert!(one.load().unwrap().access.is_empty());
        let raw = one
            .shared
            .get("mcp-launch:oauth:state")
            .await
            .unwrap()
            .unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains(token));
    }

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
