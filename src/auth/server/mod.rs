//! OAuth 2.1 for the clients that connect to us: our MCP endpoint as a protected resource
//! (RFC 9728, RFC 8707 audiences) and the built-in authorization server for one operator
//! (RFC 8414 metadata, RFC 7591 registration, PKCE S256 only, RFC 9207 `iss`, consent by a
//! one-time code the terminal shows or by `mcp-launch auth approve`).
//!
//! - `store`: what is remembered (clients, pending consents, hashed tokens) behind a trait.
//! - `resource`: the check every request to the endpoint passes, and its refusals.
//! - `endpoints`: metadata, `/register`, `/token`, `/revoke`.
//! - `consent`: `/authorize` — the page, its one-time code, its CSRF token.
//! - `cimd`: clients named by an https URL (Client ID Metadata Documents), fetched with bounds.
//! - `oidc`: delegated mode — a provider's JWTs verified; `proxy`: its login proxied for
//!   providers MCP clients cannot register with.
//!
//! Access tokens are opaque random strings kept only as their SHA-256 hash (not signed JWTs):
//! one operator's server is the only reader of its tokens, so there is no key to manage, and
//! `auth revoke` ends a token at once (a JWT lives until it expires). Verifying one is a hash
//! and a map lookup (see docs/PERFORMANCE.md).

pub mod cimd;
mod consent;
mod endpoints;
pub mod oidc;
pub mod proxy;
mod resource;
pub mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use resource::{protect, Refusal};
pub use store::{default_store, FileStore, MemoryStore, RedisStore, State, Store};

/// The scope of read-only tools (annotated `readOnlyHint`).
pub const SCOPE_READ: &str = "tools:read";
/// The scope of every tool.
pub const SCOPE_ALL: &str = "tools:all";
/// The scopes we know, in the order metadata lists them.
pub const SCOPES: &[&str] = &[SCOPE_READ, SCOPE_ALL];

/// How long an access token lives: short, since a refresh token renews it.
pub const ACCESS_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a refresh token lives unused.
pub const REFRESH_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long an authorization code may wait for its exchange.
pub const CODE_TTL: Duration = Duration::from_secs(60);
/// How long the operator has to consent.
pub const CONSENT_TTL: Duration = Duration::from_secs(5 * 60);

/// What the operator is told when a client asks for access (shown on the terminal, never
/// logged: the code is a secret).
#[derive(Clone)]
pub struct ConsentNotice {
    /// The pending request's id (`mcp-launch auth approve ID`).
    pub request_id: String,
    /// The client's id.
    pub client_id: String,
    /// The client's name, as it gave it.
    pub client_name: Option<String>,
    /// The scope asked for.
    pub scope: String,
    /// The one-time code the consent page asks for.
    pub code: String,
    /// Where the client is sent back (one of the URIs it registered).
    pub redirect_uri: String,
    /// When the request expires (seconds since the epoch).
    pub expires_at: u64,
}

/// What the operator is told about consent requests.
#[derive(Debug, Clone)]
pub enum ConsentEvent {
    /// A client asks for access.
    Asked(ConsentNotice),
    /// Request `request_id` is answered (allowed, denied, or closed after too many wrong
    /// codes): it need not be shown any more.
    Settled {
        /// The request's id.
        request_id: String,
    },
}

impl std::fmt::Debug for ConsentNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsentNotice")
            .field("request_id", &self.request_id)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .field("redirect_uri", &self.redirect_uri)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Called with each new consent request, and when one is answered.
pub type Notify = Arc<dyn Fn(&ConsentEvent) + Send + Sync>;

/// The protected resource and its authorization server, in one.
pub struct OAuthServer {
    /// Our issuer identifier: the base URL clients reach us at (no trailing slash); in
    /// delegated mode the provider's.
    issuer: String,
    /// The base URL clients reach us at (no trailing slash).
    base: String,
    /// Delegated mode (`--auth oidc:ISSUER`): the provider whose JWTs we verify, instead of
    /// issuing tokens ourselves.
    delegate: Option<oidc::Delegate>,
    /// The resource identifier tokens are bound to: the MCP endpoint's URL.
    resource: String,
    store: Arc<dyn Store>,
    notify: Notify,
    /// The state as last read, and the store's stamp then: verification reads memory and
    /// re-reads the store only when its stamp moved (a revocation elsewhere).
    cache: Mutex<(Option<u128>, Arc<State>)>,
    /// Authorization codes by hash, kept in memory when the store keeps none (they live a
    /// minute; with `--state` they are in Redis, `mcp-launch:oauth-code:<hash>`, so any
    /// replica's `/token` redeems them).
    codes: Mutex<HashMap<String, consent::Code>>,
    /// Consent pages open now, by request id.
    consents: Mutex<HashMap<String, consent::Session>>,
    /// Client ID Metadata Documents fetched, until they expire.
    documents: cimd::Documents,
    /// Delegated mode's login proxy (`--oidc-client-id`): the provider's client we log in as.
    login: Option<proxy::Login>,
    /// The login proxy's logins in progress and codes, by hashed key, with their expiry, when
    /// the store keeps none (one process; with `--state` they are in Redis).
    held: Mutex<HashMap<String, (u64, Vec<u8>)>>,
}

impl std::fmt::Debug for OAuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthServer")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl OAuthServer {
    /// The server reached at `base_url` (e.g. `http://127.0.0.1:8080`), protecting the MCP
    /// endpoint at `<base_url><mcp_path>`, keeping its state in `store`, telling the operator
    /// of consent requests through `notify`.
    pub fn new(base_url: &str, mcp_path: &str, store: Arc<dyn Store>, notify: Notify) -> Self {
        let issuer = base_url.trim_end_matches('/').to_string();
        Self {
            resource: format!("{issuer}{mcp_path}"),
            base: issuer.clone(),
            issuer,
            delegate: None,
            store,
            notify,
            cache: Mutex::new((None, Arc::new(State::default()))),
            codes: Mutex::new(HashMap::new()),
            consents: Mutex::new(HashMap::new()),
            documents: cimd::Documents::default(),
            login: None,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Delegated mode: the endpoint at `<base_url><mcp_path>` takes the JWT access tokens
    /// `delegate` verifies, and its metadata names the provider as authorization server.
    pub fn delegated(base_url: &str, mcp_path: &str, delegate: oidc::Delegate) -> Self {
        let base = base_url.trim_end_matches('/').to_string();
        let mut server = Self::new(
            &base,
            mcp_path,
            Arc::new(MemoryStore::default()),
            Arc::new(|_: &ConsentEvent| {}),
        );
        server.issuer = delegate.issuer().to_string();
        server.delegate = Some(delegate);
        server
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The resource identifier (audience) of our tokens.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The routes of the authorization server and the resource metadata, to merge beside the
    /// protected endpoint.
    pub fn router(self: &Arc<Self>) -> axum::Router {
        endpoints::router(Arc::clone(self))
    }

    /// The state now, read again only when the store changed.
    fn current(&self) -> std::io::Result<Arc<State>> {
        let stamp = self.store.stamp()?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.0 != Some(stamp) {
            *cache = (Some(stamp), Arc::new(self.store.load()?));
        }
        Ok(Arc::clone(&cache.1))
    }

    /// Changes the stored state (expired entries pruned on the way).
    fn update(&self, mut change: impl FnMut(&mut State)) -> std::io::Result<State> {
        let now = now();
        self.store.update(&mut |state| {
            state.prune(now);
            change(state);
        })
    }
}

pub use super::now;

/// Whether `scope` (space-separated) allows every tool; otherwise read-only tools only.
pub fn allows_all_tools(scope: &str) -> bool {
    scope.split_whitespace().any(|s| s == SCOPE_ALL)
}

/// Admin operations of `mcp-launch auth clients|approve|revoke` on a store.
pub mod admin {
    use super::store::{State, Store};

    /// The state to list.
    pub fn load(store: &dyn Store) -> std::io::Result<State> {
        let mut state = store.load()?;
        state.prune(super::now());
        Ok(state)
    }

    /// Approves the pending request `id` (the consent page then continues without a code);
    /// false when there is no such request.
    pub fn approve(store: &dyn Store, id: &str) -> std::io::Result<bool> {
        let mut found = false;
        store.update(&mut |state| {
            if let Some(pending) = state.pending.get_mut(id) {
                pending.approved = true;
                found = true;
            }
        })?;
        Ok(found)
    }

    /// Ends client `id` and every token it holds; false when there is no such client.
    pub fn revoke(store: &dyn Store, id: &str) -> std::io::Result<bool> {
        let mut found = false;
        store.update(&mut |state| found = state.revoke_client(id))?;
        Ok(found)
    }
}

#[cfg(test)]
mod oidc_tests;
#[cfg(test)]
mod proxy_tests;
#[cfg(test)]
mod tests;
