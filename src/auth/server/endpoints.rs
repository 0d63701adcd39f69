//! The authorization server's routes: metadata (RFC 8414, RFC 9728), `/register` (RFC 7591),
//! `/token` (authorization code with PKCE, refresh tokens rotated on use), `/revoke` (RFC 7009).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Deserialize;

use super::store::{hash, Client, Grant, Refresh};
use super::{consent, now, proxy, OAuthServer, ACCESS_TTL, REFRESH_TTL, SCOPES};
use crate::auth::metadata::{
    AuthorizationServer, ClientInformation, ClientMetadata, ErrorResponse, TokenResponse,
    AUTHORIZATION_SERVER_SUFFIX, PROTECTED_RESOURCE_SUFFIX,
};

/// Auth methods at the token endpoint we take.
const AUTH_METHODS: &[&str] = &["none", "client_secret_post", "client_secret_basic"];
/// Registered clients at most (registration is open: a flood must not fill the disk).
const MAX_CLIENTS: usize = 256;

/// The routes, with `server` as their state.
pub fn router(server: Arc<OAuthServer>) -> Router {
    let resource_path = server.resource.strip_prefix(&server.base).unwrap_or("");
    let metadata = Router::new()
        .route(PROTECTED_RESOURCE_SUFFIX, get(resource_metadata))
        .route(
            &format!("{PROTECTED_RESOURCE_SUFFIX}{resource_path}"),
            get(resource_metadata),
        );
    if server.login.is_some() {
        // Delegated to a provider without registration: we register and proxy its login.
        return metadata
            .route(AUTHORIZATION_SERVER_SUFFIX, get(authorization_metadata))
            .route("/authorize", get(proxy::authorize))
            .route(proxy::CALLBACK_PATH, get(proxy::callback))
            .route("/register", post(register))
            .route("/token", post(token))
            .with_state(server);
    }
    if server.delegate.is_some() {
        // Delegated: the provider is the authorization server; we only say so.
        return metadata.with_state(server);
    }
    metadata
        .route(AUTHORIZATION_SERVER_SUFFIX, get(authorization_metadata))
        .route("/authorize", get(consent::authorize).post(consent::consent))
        .route("/register", post(register))
        .route("/token", post(token))
        .route("/revoke", post(revoke))
        .with_state(server)
}

async fn authorization_metadata(State(server): State<Arc<OAuthServer>>) -> Response {
    let issuer = &server.issuer;
    // The login proxy revokes nothing and fetches no client documents.
    let is_built_in = server.login.is_none();
    let strings = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
    let document = AuthorizationServer {
        issuer: issuer.clone(),
        authorization_endpoint: Some(format!("{issuer}/authorize")),
        token_endpoint: Some(format!("{issuer}/token")),
        registration_endpoint: Some(format!("{issuer}/register")),
        revocation_endpoint: is_built_in.then(|| format!("{issuer}/revoke")),
        device_authorization_endpoint: None,
        jwks_uri: None,
        scopes_supported: strings(SCOPES),
        response_types_supported: strings(&["code"]),
        grant_types_supported: strings(&["authorization_code", "refresh_token"]),
        code_challenge_methods_supported: strings(&[crate::auth::pkce::METHOD]),
        token_endpoint_auth_methods_supported: strings(AUTH_METHODS),
        client_id_metadata_document_supported: is_built_in,
        authorization_response_iss_parameter_supported: true,
        extra: Default::default(),
    };
    Json(document).into_response()
}

async fn resource_metadata(State(server): State<Arc<OAuthServer>>) -> Response {
    Json(server.resource_metadata()).into_response()
}

/// An OAuth error answer (no-store, like every token answer).
pub(super) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = ErrorResponse {
        error: error.into(),
        error_description: Some(description.into()),
        error_uri: None,
    };
    (status, [(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

/// A redirect URI we register: https, or http on a loopback host; no fragment.
pub(super) fn acceptable_redirect(uri: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(uri) else {
        return false;
    };
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    url.fragment().is_none() && (url.scheme() == "https" || (url.scheme() == "http" && loopback))
}

pub(super) async fn register(
    State(server): State<Arc<OAuthServer>>,
    Json(metadata): Json<ClientMetadata>,
) -> Response {
    let bad = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata", why);
    if metadata.redirect_uris.is_empty()
        || !metadata
            .redirect_uris
            .iter()
            .all(|u| acceptable_redirect(u))
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect_uris must be https URLs, or http on 127.0.0.1/localhost, without fragments",
        );
    }
    let method = metadata
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| "client_secret_basic".into());
    if !AUTH_METHODS.contains(&method.as_str()) {
        return bad(
            "token_endpoint_auth_method must be none, client_secret_post or client_secret_basic",
        );
    }
    let client_id = crate::auth::random_string(24);
    let secret = (method != "none").then(crate::auth::generate_key);
    let client = Client {
        name: metadata.client_name.clone(),
        redirect_uris: metadata.redirect_uris.clone(),
        secret_hash: secret.as_deref().map(hash),
        registered_at: now(),
        granted_scope: None,
        last_used: None,
    };
    let mut full = false;
    let written = server.update(|state| {
        full = state.clients.len() >= MAX_CLIENTS;
        if !full {
            state.clients.insert(client_id.clone(), client.clone());
        }
    });
    if full {
        return bad("too many clients are registered: remove some with `mcp-launch auth revoke`");
    }
    if written.is_err() {
        return oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the state could not be written",
        );
    }
    let info = ClientInformation {
        client_id,
        client_secret: secret,
        client_id_issued_at: Some(client.registered_at),
        client_secret_expires_at: Some(0),
        metadata: ClientMetadata {
            token_endpoint_auth_method: Some(method),
            ..metadata
        },
    };
    (
        StatusCode::CREATED,
        [(header::CACHE_CONTROL, "no-store")],
        Json(info),
    )
        .into_response()
}

/// The form of `/token` and `/revoke`.
#[derive(Debug, Default, Deserialize)]
pub struct TokenForm {
    pub(super) grant_type: Option<String>,
    pub(super) code: Option<String>,
    pub(super) redirect_uri: Option<String>,
    pub(super) code_verifier: Option<String>,
    pub(super) refresh_token: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    pub(super) resource: Option<String>,
    token: Option<String>,
}

/// The client the request authenticates as (its id, from the form or HTTP Basic), checked
/// against its registration; the error answer otherwise.
fn authenticate(
    server: &OAuthServer,
    headers: &HeaderMap,
    form: &TokenForm,
) -> Result<String, Box<Response>> {
    let basic = basic_credentials(headers);
    let (id, secret) = match basic {
        Some((id, secret)) => (Some(id), Some(secret)),
        None => (form.client_id.clone(), form.client_secret.clone()),
    };
    let refused = || {
        oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "unknown client or wrong secret",
        )
    };
    let id = id.ok_or_else(refused)?;
    let state = server.current().map_err(|_| refused())?;
    let client = state.clients.get(&id).ok_or_else(refused)?;
    let ok = match (&client.secret_hash, secret) {
        (None, _) => true,
        (Some(expected), Some(given)) => {
            subtle::ConstantTimeEq::ct_eq(hash(&given).as_bytes(), expected.as_bytes()).into()
        }
        (Some(_), None) => false,
    };
    ok.then_some(id).ok_or_else(|| Box::new(refused()))
}

/// `client_id:client_secret` of an `Authorization: Basic` header.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    use base64::Engine;
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    let unescape = |s: &str| {
        reqwest::Url::parse(&format!("x:?v={s}"))
            .ok()
            .and_then(|u| u.query_pairs().next().map(|(_, v)| v.into_owned()))
            .unwrap_or_else(|| s.to_string())
    };
    Some((unescape(id), unescape(secret)))
}

async fn token(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Response {
    let client_id = match authenticate(&server, &headers, &form) {
        Ok(id) => id,
        Err(refused) => return *refused,
    };
    if form
        .resource
        .as_deref()
        .is_some_and(|r| r != server.resource)
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "tokens are issued for this server's MCP endpoint only",
        );
    }
    let is_proxied = server.login.is_some();
    match (form.grant_type.as_deref(), is_proxied) {
        (Some("authorization_code"), false) => exchange_code(&server, &client_id, &form),
        (Some("refresh_token"), false) => rotate_refresh(&server, &client_id, &form),
        (Some("authorization_code"), true) => proxy::redeem(&server, &client_id, &form).await,
        (Some("refresh_token"), true) => proxy::renew(&server, &client_id, &form).await,
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "grant_type must be authorization_code or refresh_token",
        ),
    }
}

pub(super) fn invalid_grant(why: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why)
}

/// An authorization code for tokens: single use, same client and redirect URI, PKCE checked.
fn exchange_code(server: &OAuthServer, client_id: &str, form: &TokenForm) -> Response {
    let code_hash = hash(form.code.as_deref().unwrap_or(""));
    // Taken out before any check: a code is tried once, whatever the outcome.
    let code = match server.take_code(&code_hash) {
        Ok(code) => code,
        Err(e) => {
            tracing::warn!(error = %e, "an authorization code could not be looked up");
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization state could not be read: try again",
            );
        }
    };
    let Some(code) = code.filter(|c| c.expires_at > now()) else {
        return invalid_grant("the authorization code is unknown, expired or already used");
    };
    if code.client_id != client_id || form.redirect_uri.as_deref() != Some(&code.redirect_uri) {
        return invalid_grant("the code was issued to another client or redirect_uri");
    }
    if !crate::auth::pkce::verifies(form.code_verifier.as_deref().unwrap_or(""), &code.challenge) {
        return invalid_grant("the code_verifier does not match the code_challenge (PKCE)");
    }
    let grant = Grant {
        client_id: client_id.to_string(),
        subject: None,
        scope: code.scope,
        resource: server.resource.clone(),
        expires_at: 0,
        family: crate::auth::random_string(16),
    };
    issue(server, grant, None)
}

/// A refresh token for a new pair; a used one presented again revokes its family (it leaked).
fn rotate_refresh(server: &OAuthServer, client_id: &str, form: &TokenForm) -> Response {
    let presented = hash(form.refresh_token.as_deref().unwrap_or(""));
    let mut outcome: Result<Grant, &str> = Err("the refresh token is unknown, expired or revoked");
    let written = server.update(|state| {
        outcome = Err("the refresh token is unknown, expired or revoked");
        let Some(refresh) = state.refresh.get_mut(&presented) else {
            return;
        };
        if refresh.grant.family.starts_with(proxy::FAMILY) {
            // A provider's refresh token, recorded by the login proxy: renewed only there.
        } else if refresh.grant.client_id != client_id {
            outcome = Err("the refresh token was issued to another client");
        } else if refresh.grant.resource != server.resource {
            // Issued while we answered at another address (loopback, before a tunnel): its
            // grant is for that audience, and renewing it here would mint nothing usable.
            // Left unused: it still works where it belongs.
            outcome = Err("the refresh token was issued for another resource: log in again");
        } else if refresh.used {
            let family = refresh.grant.family.clone();
            state.revoke_family(&family);
            outcome =
                Err("the refresh token was already used: every token of its login is revoked");
        } else {
            refresh.used = true;
            outcome = Ok(refresh.grant.clone());
        }
    });
    match (written, outcome) {
        (Err(_), _) => oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the state could not be written",
        ),
        (Ok(_), Err(why)) => invalid_grant(why),
        (Ok(_), Ok(grant)) => issue(server, grant, Some(presented)),
    }
}

/// Stores and answers a new access and refresh token pair for `grant` (its `expires_at` is
/// set here); `used` is the refresh token exchanged for it.
fn issue(server: &OAuthServer, grant: Grant, used: Option<String>) -> Response {
    let access = crate::auth::generate_key();
    let refresh = crate::auth::generate_key();
    let issued = now();
    let access_grant = Grant {
        expires_at: issued + ACCESS_TTL.as_secs(),
        ..grant.clone()
    };
    let refresh_grant = Grant {
        expires_at: issued + REFRESH_TTL.as_secs(),
        ..grant.clone()
    };
    let mut family_alive = true;
    let written = server.update(|state| {
        // A family revoked meanwhile (a replay, `auth revoke`) gets nothing new.
        family_alive = used.as_ref().is_none_or(|u| state.refresh.contains_key(u))
            && state.clients.contains_key(&grant.client_id);
        if !family_alive {
            return;
        }
        state.access.insert(hash(&access), access_grant.clone());
        let record = Refresh {
            grant: refresh_grant.clone(),
            used: false,
        };
        state.refresh.insert(hash(&refresh), record);
        if let Some(client) = state.clients.get_mut(&grant.client_id) {
            client.last_used = Some(issued);
        }
    });
    if written.is_err() {
        return oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the state could not be written",
        );
    }
    if !family_alive {
        return invalid_grant("this login was revoked");
    }
    let body = TokenResponse {
        access_token: access,
        token_type: "Bearer".into(),
        expires_in: Some(ACCESS_TTL.as_secs()),
        refresh_token: Some(refresh),
        scope: Some(grant.scope),
        extra: Default::default(),
    };
    (
        StatusCode::OK,
        [(header::CACHE_CONTROL, "no-store")],
        Json(body),
    )
        .into_response()
}

/// RFC 7009: ends an access token, or a refresh token and its whole family. Always 200 for a
/// known client (an unknown token tells nothing).
async fn revoke(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Response {
    let client_id = match authenticate(&server, &headers, &form) {
        Ok(id) => id,
        Err(refused) => return *refused,
    };
    let presented = hash(form.token.as_deref().unwrap_or(""));
    let written = server.update(|state| {
        if state
            .access
            .get(&presented)
            .is_some_and(|g| g.client_id == client_id)
        {
            state.access.remove(&presented);
        }
        let family = state
            .refresh
            .get(&presented)
            .filter(|r| r.grant.client_id == client_id)
            .map(|r| r.grant.family.clone());
        if let Some(family) = family {
            state.revoke_family(&family);
        }
    });
    match written {
        Ok(_) => StatusCode::OK.into_response(),
        Err(_) => oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the state could not be written",
        ),
    }
}
