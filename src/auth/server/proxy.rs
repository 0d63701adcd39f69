//! Delegated mode's login proxy, for a provider MCP clients cannot register with (no
//! `registration_endpoint`): the operator registered one client at the provider
//! (`--oidc-client-id`, its secret from the environment) and we stand in front of it as the
//! authorization server MCP clients see (agentgateway's pattern):
//!
//! - `/register` registers the MCP client with us (its redirect URIs; the provider's secret is
//!   never handed out);
//! - `/authorize` checks the client, its exact redirect URI and its PKCE S256 challenge, keeps
//!   them under a random `state` (ten minutes, once) and sends the browser to the provider's
//!   authorization endpoint with our callback and a PKCE pair of our own;
//! - the callback ([`CALLBACK_PATH`]) takes that state back (once) and gives the MCP client a
//!   one-time code of ours at its redirect URI — or the provider's error, with the client's
//!   own `state`;
//! - `/token` checks our code, the client and its PKCE verifier, then exchanges the provider's
//!   code at the provider with the secret and our verifier, and hands the provider's tokens
//!   over. A refresh token is renewed at the provider the same way, for the client it was
//!   handed to only.
//!
//! Why the provider's tokens, not ours: the access token the MCP client presents is then the
//! provider's JWT for our audience, checked at `/mcp` exactly as any delegated token (`iss`,
//! `aud`, `exp`, scope: `oidc.rs`), and every refresh asks the provider, so a person the
//! provider disables loses access at the next refresh. The provider's code is exchanged at
//! `/token`, not at the callback, so no token of the provider is ever kept here (in memory
//! nor in Redis): what waits between the steps is a code useless without our secret and our
//! verifier. Refresh tokens are remembered only as their hash, bound to the MCP client they
//! were handed to; a rotated one presented again ends its whole login (and `auth revoke`
//! ends a client's refreshes at once; its access token lives until it expires).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use reqwest::Url;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::consent::{error_page, redirect_to, AuthorizeRequest};
use super::endpoints::{invalid_grant, oauth_error, TokenForm};
use super::oidc::{Delegate, OidcError};
use super::store::{hash, Grant, Refresh, Store};
use super::{now, OAuthServer, REFRESH_TTL};
use crate::auth::client::{PreRegistered, Step, TokenClient};
use crate::auth::metadata::TokenResponse;
use crate::auth::pkce::Pkce;

/// Where the provider sends the browser back to us: the redirect URI registered at the
/// provider is `<our base URL>/oauth/callback`.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// How long a person has to log in at the provider.
pub const LOGIN_TTL: Duration = Duration::from_secs(10 * 60);
/// How long our code waits for its exchange (the provider's code inside lives about as long).
const CODE_TTL: Duration = super::CODE_TTL;
/// Logins and codes held in this process at once (a flood of `/authorize` must not grow
/// memory); past it new logins are refused until some expire.
const MAX_HELD: usize = 256;
/// The family of every refresh token the proxy records begins so: the built-in server's
/// `/token` never renews one (nor the proxy one of the built-in server's).
pub const FAMILY: &str = "proxied-";

/// The client registered at the provider for us, and the provider's endpoints (cloned for
/// each listener proxying the login: `up`'s stacks, a side built again for a new URL).
#[derive(Clone)]
pub struct Login {
    client: PreRegistered,
    auth_method: &'static str,
    authorization_endpoint: Url,
    token_endpoint: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("client_id", &self.client.client_id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

impl Login {
    /// The provider `delegate` discovered, logged in to as `client_id` (with `secret`, when
    /// the operator's client is confidential). Refused when the provider names no
    /// authorization or token endpoint.
    pub fn new(
        delegate: &Delegate,
        client_id: String,
        secret: Option<String>,
    ) -> Result<Login, OidcError> {
        let provider = delegate.provider();
        let issuer = delegate.issuer();
        let endpoint = |named: &Option<String>, field: &str| {
            let reason = |why: String| OidcError::Unusable {
                issuer: issuer.to_string(),
                reason: format!("{field}: {why}"),
            };
            let named = named.as_deref().ok_or_else(|| reason("missing".into()))?;
            crate::auth::client::parse_url(issuer, named, Step::ServerMetadata)
                .map_err(|e| reason(e.to_string()))
        };
        let authorization_endpoint =
            endpoint(&provider.authorization_endpoint, "authorization_endpoint")?;
        let token_endpoint = endpoint(&provider.token_endpoint, "token_endpoint")?.to_string();
        let client = PreRegistered {
            client_id,
            client_secret: secret,
            scopes: None,
            origin: "--oidc-client-id".into(),
        };
        Ok(Login {
            auth_method: client.auth_method(provider),
            client,
            authorization_endpoint,
            token_endpoint,
            http: crate::auth::client::http_client(),
        })
    }

    /// The provider's client id.
    pub fn client_id(&self) -> &str {
        &self.client.client_id
    }

    /// The provider's token endpoint asked for `grant`, with our client's credentials and
    /// `audience` as the resource indicator (the provider names it in `aud`).
    async fn exchange(
        &self,
        issuer: &str,
        audience: &str,
        step: Step,
        grant: &[(&str, &str)],
    ) -> Result<TokenResponse, String> {
        let client = TokenClient {
            client: &self.http,
            url: issuer,
            token_endpoint: &self.token_endpoint,
            client_id: &self.client.client_id,
            client_secret: self.client.client_secret.clone(),
            auth_method: Some(self.auth_method),
            resource: audience,
        };
        client.request(step, grant).await.map_err(|e| e.to_string())
    }
}

/// A login at the provider in progress, kept under the state we sent it.
#[derive(Serialize, Deserialize)]
struct Flight {
    client_id: String,
    redirect_uri: String,
    /// The MCP client's own `state`, given back to it.
    client_state: Option<String>,
    challenge: String,
    scope: String,
    /// Our PKCE verifier for the provider.
    verifier: String,
    expires_at: u64,
}

/// Our one-time code: what its exchange needs.
#[derive(Serialize, Deserialize)]
struct Pass {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    /// The provider's code and our verifier for it (useless without our secret).
    provider_code: String,
    verifier: String,
    expires_at: u64,
}

impl OAuthServer {
    /// Delegated mode with the login proxied through `login`: the metadata names us as the
    /// authorization server, clients registered with us kept in `store`.
    pub fn with_login(mut self, login: Login, store: Arc<dyn Store>) -> Self {
        self.issuer.clone_from(&self.base);
        self.login = Some(login);
        self.store = store;
        self
    }

    /// The login proxy, or the answer of a server without one.
    fn proxy(&self) -> Result<(&Login, &Delegate), Box<Response>> {
        match (&self.login, &self.delegate) {
            (Some(login), Some(delegate)) => Ok((login, delegate)),
            _ => Err(Box::new(error_page(
                StatusCode::NOT_FOUND,
                "no login proxy",
            ))),
        }
    }

    /// Keeps `record` under `key` for `ttl`, to be taken once: in the shared store when
    /// there is one (any replica takes it), else in memory (at most [`MAX_HELD`]).
    fn hold(&self, key: &str, record: &impl Serialize, ttl: Duration) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(record)?;
        if self.store.put_code(key, &bytes, ttl)? {
            return Ok(());
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|_, (expires_at, _)| *expires_at > now());
        if held.len() >= MAX_HELD {
            return Err(std::io::Error::other("too many logins are in progress"));
        }
        held.insert(key.to_string(), (now() + ttl.as_secs(), bytes));
        Ok(())
    }

    /// Takes what [`OAuthServer::hold`] kept under `key`: once.
    fn take<T: DeserializeOwned>(&self, key: &str) -> std::io::Result<Option<T>> {
        let held = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        let bytes = match held {
            Some((_, bytes)) => Some(bytes),
            None => self.store.take_code(key)?,
        };
        Ok(bytes.and_then(|b| serde_json::from_slice(&b).ok()))
    }
}

/// The key a login's `state` or a code of ours is held under (hashed: never the value).
fn key(kind: &str, value: &str) -> String {
    hash(&format!("proxy-{kind}:{value}"))
}

/// `GET /authorize`: the request checked as the built-in server checks it, then the browser
/// sent to the provider.
pub async fn authorize(
    State(server): State<Arc<OAuthServer>>,
    Query(request): Query<AuthorizeRequest>,
) -> Response {
    send_to_provider(&server, request).unwrap_or_else(|refused| *refused)
}

fn send_to_provider(
    server: &OAuthServer,
    request: AuthorizeRequest,
) -> Result<Response, Box<Response>> {
    let (login, delegate) = server.proxy()?;
    let (_, scope) = server.check_request(&request, None)?;
    let ours = Pkce::new();
    let state = crate::auth::random_string(32);
    let flight = Flight {
        client_id: request.client_id.unwrap_or_default(),
        redirect_uri: request.redirect_uri.unwrap_or_default(),
        client_state: request.state,
        challenge: request.code_challenge.unwrap_or_default(),
        scope: scope.clone(),
        verifier: ours.verifier,
        expires_at: now() + LOGIN_TTL.as_secs(),
    };
    server
        .hold(&key("state", &state), &flight, LOGIN_TTL)
        .map_err(|e| {
            tracing::warn!(error = %e, "a login could not be kept");
            Box::new(error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many logins are in progress: try again in a few minutes",
            ))
        })?;
    let callback = format!("{}{CALLBACK_PATH}", server.base);
    let params = [
        ("response_type", "code"),
        ("client_id", login.client_id()),
        ("redirect_uri", &callback),
        ("scope", &scope),
        ("state", &state),
        ("code_challenge", &ours.challenge),
        ("code_challenge_method", crate::auth::pkce::METHOD),
        ("resource", delegate.audience()),
    ];
    Ok(redirect_to(login.authorization_endpoint.as_str(), &params))
}

/// The provider's answer at our callback.
#[derive(Debug, Default, Deserialize)]
pub struct Answer {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
    iss: Option<String>,
}

/// `GET /oauth/callback`: the provider's answer, passed on to the MCP client's redirect URI
/// as a code of ours, or as the provider's error.
pub async fn callback(
    State(server): State<Arc<OAuthServer>>,
    Query(answer): Query<Answer>,
) -> Response {
    pass_back(&server, answer).unwrap_or_else(|refused| *refused)
}

fn pass_back(server: &OAuthServer, answer: Answer) -> Result<Response, Box<Response>> {
    let (_, delegate) = server.proxy()?;
    let state = answer.state.as_deref().unwrap_or_default();
    let flight: Option<Flight> = server.take(&key("state", state)).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "a login could not be looked up");
        None
    });
    // Unknown state: we cannot tell whose login this is, so no redirect (an error page).
    let flight = flight.filter(|f| f.expires_at > now()).ok_or_else(|| {
        Box::new(error_page(
            StatusCode::BAD_REQUEST,
            "this login is unknown or expired (its state is not one we sent, or was used): \
             start the login again from your MCP client",
        ))
    })?;
    let back = |error: &str, description: Option<&str>| {
        let mut params = vec![("error", error)];
        params.extend(description.map(|d| ("error_description", d)));
        params.extend(flight.client_state.as_deref().map(|s| ("state", s)));
        params.push(("iss", &server.issuer));
        Box::new(redirect_to(&flight.redirect_uri, &params))
    };
    if answer
        .iss
        .as_deref()
        .is_some_and(|iss| iss != delegate.issuer())
    {
        // RFC 9207: an answer naming another issuer is not our provider's.
        return Err(back(
            "server_error",
            Some("the answer came from another issuer"),
        ));
    }
    if let Some(error) = answer.error.as_deref() {
        let description = answer.error_description.as_deref().map(printable);
        return Err(back(error_code(error), description.as_deref()));
    }
    let provider_code = answer
        .code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| back("server_error", Some("the provider answered with no code")))?;
    let code = crate::auth::random_string(40);
    let pass = Pass {
        client_id: flight.client_id.clone(),
        redirect_uri: flight.redirect_uri.clone(),
        challenge: flight.challenge.clone(),
        provider_code,
        verifier: flight.verifier.clone(),
        expires_at: now() + CODE_TTL.as_secs(),
    };
    if server.hold(&key("code", &code), &pass, CODE_TTL).is_err() {
        return Err(back("temporarily_unavailable", None));
    }
    let mut params = vec![("code", code.as_str())];
    params.extend(flight.client_state.as_deref().map(|s| ("state", s)));
    params.push(("iss", &server.issuer));
    Ok(redirect_to(&flight.redirect_uri, &params))
}

/// A provider's error code as passed on: OAuth codes are short snake_case words; anything
/// else becomes `server_error`.
pub(super) fn error_code(code: &str) -> &str {
    let is_word = !code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if is_word {
        code
    } else {
        "server_error"
    }
}

/// A provider's description as passed on: the characters RFC 6749 §4.1.2.1 allows, at most
/// 200 of them.
pub(super) fn printable(text: &str) -> String {
    let allowed = |c: &char| c.is_ascii() && (' '..='~').contains(c) && !matches!(c, '"' | '\\');
    text.chars().filter(allowed).take(200).collect()
}

/// Our code, checked (once, same client and redirect URI, PKCE), for the provider's tokens.
pub(super) async fn redeem(server: &OAuthServer, client_id: &str, form: &TokenForm) -> Response {
    let Ok((login, delegate)) = server.proxy() else {
        return invalid_grant("no login proxy");
    };
    let code = form.code.as_deref().unwrap_or_default();
    // Taken before any check: a code is tried once, whatever the outcome.
    let pass: Option<Pass> = server.take(&key("code", code)).unwrap_or_default();
    let Some(pass) = pass.filter(|p| p.expires_at > now()) else {
        return invalid_grant("the authorization code is unknown, expired or already used");
    };
    if pass.client_id != client_id || form.redirect_uri.as_deref() != Some(&pass.redirect_uri) {
        return invalid_grant("the code was issued to another client or redirect_uri");
    }
    if !crate::auth::pkce::verifies(form.code_verifier.as_deref().unwrap_or(""), &pass.challenge) {
        return invalid_grant("the code_verifier does not match the code_challenge (PKCE)");
    }
    let callback = format!("{}{CALLBACK_PATH}", server.base);
    let grant = [
        ("grant_type", "authorization_code"),
        ("code", pass.provider_code.as_str()),
        ("redirect_uri", &callback),
        ("code_verifier", &pass.verifier),
    ];
    let issuer = delegate.issuer();
    match login
        .exchange(issuer, delegate.audience(), Step::Token, &grant)
        .await
    {
        Ok(token) => hand_over(server, client_id, token, None).await,
        Err(reason) => provider_refused(issuer, &reason),
    }
}

/// A refresh token we handed to this client, renewed at the provider.
pub(super) async fn renew(server: &OAuthServer, client_id: &str, form: &TokenForm) -> Response {
    let Ok((login, delegate)) = server.proxy() else {
        return invalid_grant("no login proxy");
    };
    let presented = form.refresh_token.as_deref().unwrap_or_default();
    let hashed = hash(presented);
    let Ok(state) = server.current() else {
        return unavailable();
    };
    let record = state.refresh.get(&hashed);
    let Some(record) = record.filter(|r| r.grant.family.starts_with(FAMILY)) else {
        return invalid_grant("the refresh token is unknown, expired or revoked");
    };
    if record.grant.client_id != client_id {
        return invalid_grant("the refresh token was issued to another client");
    }
    let family = record.grant.family.clone();
    if record.used {
        let revoked = server.update(|state| state.revoke_family(&family));
        if revoked.is_err() {
            return unavailable();
        }
        return invalid_grant(
            "the refresh token was already used: every token of its login is revoked",
        );
    }
    let grant = [
        ("grant_type", "refresh_token"),
        ("refresh_token", presented),
    ];
    let issuer = delegate.issuer();
    match login
        .exchange(issuer, delegate.audience(), Step::Refresh, &grant)
        .await
    {
        Ok(token) => hand_over(server, client_id, token, Some((hashed, family))).await,
        Err(reason) => provider_refused(issuer, &reason),
    }
}

/// The provider's tokens handed to the MCP client, once its access token passes our own
/// check (a provider that ignored our resource would otherwise log clients in to nothing);
/// its refresh token recorded for this client (`renewed`: the hash and family of the one it
/// replaces, marked used when the provider rotated it).
async fn hand_over(
    server: &OAuthServer,
    client_id: &str,
    token: TokenResponse,
    renewed: Option<(String, String)>,
) -> Response {
    let Ok((_, delegate)) = server.proxy() else {
        return invalid_grant("no login proxy");
    };
    let granted = match delegate.verify(&token.access_token).await {
        Ok(granted) => granted,
        Err(reason) => {
            tracing::warn!(issuer = %delegate.issuer(), %reason,
                "the provider's token for a proxied login would be refused here: check its audience (--oidc-audience) and scopes");
            return oauth_error(
                StatusCode::BAD_GATEWAY,
                "server_error",
                &format!("the provider's token would be refused by this server: {reason}"),
            );
        }
    };
    let family = renewed.as_ref().map_or_else(
        || format!("{FAMILY}{}", crate::auth::random_string(16)),
        |r| r.1.clone(),
    );
    let record = Refresh {
        grant: Grant {
            client_id: client_id.to_string(),
            subject: granted.subject,
            scope: granted.scope.clone(),
            resource: server.resource.clone(),
            expires_at: now() + REFRESH_TTL.as_secs(),
            family,
        },
        used: false,
    };
    let fresh = token.refresh_token.as_deref().map(hash);
    let mut is_alive = true;
    let written = server.update(|state| {
        is_alive = state.clients.contains_key(client_id)
            && renewed
                .as_ref()
                .is_none_or(|(old, _)| state.refresh.contains_key(old));
        if !is_alive {
            return;
        }
        // Rotated: a new refresh token came back (none, or the same: the old one stays).
        let rotated = renewed
            .as_ref()
            .filter(|(old, _)| fresh.as_ref().is_some_and(|f| f != old));
        if let Some(old) = rotated.and_then(|(old, _)| state.refresh.get_mut(old)) {
            old.used = true;
        }
        if let Some(fresh) = &fresh {
            state.refresh.insert(fresh.clone(), record.clone());
        }
        if let Some(client) = state.clients.get_mut(client_id) {
            client.last_used = Some(now());
            client.granted_scope = Some(granted.scope.clone());
        }
    });
    if written.is_err() {
        return unavailable();
    }
    if !is_alive {
        return invalid_grant("this login was revoked");
    }
    let body = TokenResponse {
        access_token: token.access_token,
        token_type: "Bearer".into(),
        expires_in: token.expires_in,
        refresh_token: token.refresh_token,
        scope: Some(token.scope.unwrap_or(granted.scope)),
        extra: Default::default(),
    };
    (
        StatusCode::OK,
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        axum::Json(body),
    )
        .into_response()
}

/// The provider refused an exchange: said to the client as `invalid_grant`, and logged.
fn provider_refused(issuer: &str, reason: &str) -> Response {
    tracing::info!(%issuer, %reason, "the provider refused a proxied exchange");
    invalid_grant(&format!("the provider refused: {reason}"))
}

fn unavailable() -> Response {
    oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the authorization state could not be read or written: try again",
    )
}

/// Hooks for `proxy_tests`.
#[cfg(test)]
pub(super) mod tests {
    pub(in crate::auth::server) use super::{error_code, printable};

    /// Makes every login and code held in memory expired.
    pub(crate) fn expire_held(server: &super::OAuthServer) {
        let mut held = server.held.lock().unwrap();
        for (_, bytes) in held.values_mut() {
            let mut record: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            record["expires_at"] = 1.into();
            *bytes = serde_json::to_vec(&record).unwrap();
        }
    }
}
