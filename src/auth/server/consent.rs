//! `/authorize`: the operator's consent. The request is checked (client known, redirect URI
//! registered exactly — else an error page, never a redirect —, PKCE S256, our resource, known
//! scopes); the page asks for a one-time code the terminal shows (five tries, five minutes,
//! single use) or continues once the operator ran `mcp-launch auth approve`. The page cannot
//! be framed, and its form carries a CSRF token that must also come back as a same-site
//! cookie. Success redirects with `code`, `state` and `iss` (RFC 9207).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use reqwest::Url;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::store::{hash, Client, Pending};
use super::{
    cimd, now, ConsentEvent, ConsentNotice, OAuthServer, CODE_TTL, CONSENT_TTL, SCOPES, SCOPE_ALL,
};

/// Wrong codes a consent page takes before the request is dropped.
pub const MAX_TRIES: u32 = 5;
/// Consent pages open at once (past it, new requests are refused until some expire).
const MAX_OPEN: usize = 32;
/// The cookie that carries the CSRF token back.
const CSRF_COOKIE: &str = "mcp_launch_csrf";

/// An authorization code waiting for its exchange.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Code {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub scope: String,
    pub expires_at: u64,
}

/// A consent page open now.
#[derive(Debug, Clone)]
pub struct Session {
    request: AuthorizeRequest,
    scope: String,
    one_time_code: String,
    csrf: String,
    tries: u32,
    expires_at: u64,
    /// The client as its metadata document describes it (a URL `client_id`): recorded when
    /// consent is given.
    document: Option<Client>,
}

/// The query of `GET /authorize`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuthorizeRequest {
    pub(super) response_type: Option<String>,
    pub(super) client_id: Option<String>,
    pub(super) redirect_uri: Option<String>,
    pub(super) code_challenge: Option<String>,
    pub(super) code_challenge_method: Option<String>,
    pub(super) state: Option<String>,
    pub(super) scope: Option<String>,
    pub(super) resource: Option<String>,
}

/// The consent form.
#[derive(Debug, Deserialize)]
pub struct ConsentForm {
    request: String,
    csrf: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    action: String,
}

/// `GET /authorize`.
pub async fn authorize(
    State(server): State<Arc<OAuthServer>>,
    Query(request): Query<AuthorizeRequest>,
) -> Response {
    let document = match server.document_client(&request).await {
        Ok(document) => document,
        Err(refused) => return *refused,
    };
    match server.open_consent(request, document) {
        Ok((id, session)) => page(&id, &session, None),
        Err(refused) => *refused,
    }
}

/// `POST /authorize`: the consent form.
pub async fn consent(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    Form(form): Form<ConsentForm>,
) -> Response {
    server.answer_consent(&headers, form)
}

impl OAuthServer {
    /// The client a URL `client_id` names, from its metadata document (`None` for any other
    /// id); an error page when it cannot be had.
    async fn document_client(
        &self,
        request: &AuthorizeRequest,
    ) -> Result<Option<Client>, Box<Response>> {
        let Some(url) = (request.client_id.as_deref()).filter(|id| cimd::is_document_url(id))
        else {
            return Ok(None);
        };
        match self.documents.client(url).await {
            Ok(client) => Ok(Some(client)),
            Err(e) => {
                use crate::error::Actionable;
                tracing::info!(kind = e.kind(), error = %e, "a client metadata document was refused");
                let told = format!("{e} ({})", e.help());
                Err(Box::new(error_page(StatusCode::BAD_REQUEST, &told)))
            }
        }
    }

    /// The checks of an authorization request, before any consent (ours or a provider's):
    /// the client known (`document`: the one its URL `client_id` describes) and the redirect
    /// URI one it registered, exactly — else an error page, never a redirect —; then, answered
    /// at that redirect URI, `response_type=code`, a PKCE S256 challenge, our resource and
    /// known scopes. The client and the scope asked for (all of ours when none is named).
    pub(super) fn check_request(
        &self,
        request: &AuthorizeRequest,
        document: Option<&Client>,
    ) -> Result<(Client, String), Box<Response>> {
        let client_id = request.client_id.clone().unwrap_or_default();
        let state = self.current().map_err(|_| {
            error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "the authorization state could not be read",
            )
        })?;
        let Some(client) = document.or_else(|| state.clients.get(&client_id)) else {
            return Err(Box::new(error_page(
                StatusCode::BAD_REQUEST,
                "unknown client_id: register the client first",
            )));
        };
        let redirect = request.redirect_uri.clone().unwrap_or_default();
        if !client.redirect_uris.contains(&redirect) {
            return Err(Box::new(error_page(
                StatusCode::BAD_REQUEST,
                "redirect_uri is not one the client registered (matched exactly)",
            )));
        }
        let back =
            |error: &str| redirect_error(&redirect, error, request.state.as_deref(), &self.issuer);
        if request.response_type.as_deref() != Some("code") {
            return Err(Box::new(back("unsupported_response_type")));
        }
        if request.code_challenge.as_deref().is_none_or(str::is_empty)
            || request.code_challenge_method.as_deref() != Some(crate::auth::pkce::METHOD)
        {
            return Err(Box::new(back("invalid_request")));
        }
        if request
            .resource
            .as_deref()
            .is_some_and(|r| r != self.resource)
        {
            return Err(Box::new(back("invalid_target")));
        }
        let scope = request
            .scope
            .clone()
            .unwrap_or_else(|| SCOPE_ALL.to_string());
        if scope.split_whitespace().any(|s| !SCOPES.contains(&s)) {
            return Err(Box::new(back("invalid_scope")));
        }
        Ok((client.clone(), scope))
    }

    /// Checks an authorization request and opens its consent page (`document`: the client
    /// its URL `client_id` describes).
    fn open_consent(
        &self,
        request: AuthorizeRequest,
        document: Option<Client>,
    ) -> Result<(String, Session), Box<Response>> {
        let client_id = request.client_id.clone().unwrap_or_default();
        let (client, scope) = self.check_request(&request, document.as_ref())?;
        let redirect = request.redirect_uri.clone().unwrap_or_default();
        let session = Session {
            request,
            scope,
            one_time_code: crate::auth::random_string(8),
            csrf: crate::auth::random_string(32),
            tries: 0,
            expires_at: now() + CONSENT_TTL.as_secs(),
            document,
        };
        let id = crate::auth::random_string(24);
        {
            let mut open = self.consents.lock().unwrap_or_else(|e| e.into_inner());
            open.retain(|_, s| s.expires_at > now());
            if open.len() >= MAX_OPEN {
                return Err(Box::new(error_page(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many consent requests are open: try again in a few minutes",
                )));
            }
            open.insert(id.clone(), session.clone());
        }
        let pending = Pending {
            client_id: client_id.clone(),
            scope: session.scope.clone(),
            redirect_uri: redirect.clone(),
            expires_at: session.expires_at,
            approved: false,
        };
        self.update(|s| {
            s.pending.insert(id.clone(), pending.clone());
        })
        .map_err(|_| {
            error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "the authorization state could not be written",
            )
        })?;
        (self.notify)(&ConsentEvent::Asked(ConsentNotice {
            request_id: id.clone(),
            client_id,
            client_name: client.name.clone(),
            scope: session.scope.clone(),
            code: session.one_time_code.clone(),
            redirect_uri: redirect,
            expires_at: session.expires_at,
        }));
        Ok((id, session))
    }

    /// Checks the consent form: CSRF, then the operator's approval or the one-time code.
    fn answer_consent(&self, headers: &HeaderMap, form: ConsentForm) -> Response {
        let mut open = self.consents.lock().unwrap_or_else(|e| e.into_inner());
        let Some(session) = open.get_mut(&form.request).filter(|s| s.expires_at > now()) else {
            return error_page(
                StatusCode::BAD_REQUEST,
                "this consent request is unknown or expired: start the login again",
            );
        };
        let cookie = cookie_value(headers, CSRF_COOKIE).unwrap_or_default();
        let csrf_ok: bool = (form.csrf.as_bytes().ct_eq(session.csrf.as_bytes())
            & cookie.as_bytes().ct_eq(session.csrf.as_bytes()))
        .into();
        if !csrf_ok {
            return error_page(
                StatusCode::FORBIDDEN,
                "the form's CSRF token is missing or wrong: reload the consent page",
            );
        }
        let request = session.request.clone();
        let redirect = request.redirect_uri.clone().unwrap_or_default();
        if form.action == "deny" {
            open.remove(&form.request);
            self.settled(&form.request);
            return redirect_error(
                &redirect,
                "access_denied",
                request.state.as_deref(),
                &self.issuer,
            );
        }
        let approved = self
            .current()
            .ok()
            .and_then(|s| s.pending.get(&form.request).map(|p| p.approved))
            .unwrap_or(false);
        let code_ok: bool = form
            .code
            .trim()
            .as_bytes()
            .ct_eq(session.one_time_code.as_bytes())
            .into();
        if !approved && !code_ok {
            session.tries += 1;
            if session.tries >= MAX_TRIES {
                open.remove(&form.request);
                self.settled(&form.request);
                return error_page(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many wrong codes: this request is closed; start the login again",
                );
            }
            let left = MAX_TRIES - session.tries;
            return page(
                &form.request,
                session,
                Some(&format!("wrong code: {left} tries left")),
            );
        }
        let session = open.remove(&form.request).expect("looked up above");
        drop(open);
        self.settled(&form.request);
        self.grant_code(&form.request, session)
    }

    /// Tells the operator that request `id` is answered.
    fn settled(&self, id: &str) {
        (self.notify)(&ConsentEvent::Settled {
            request_id: id.to_string(),
        });
    }

    /// Consent given: the client's scope is recorded and an authorization code issued.
    fn grant_code(&self, request_id: &str, session: Session) -> Response {
        let request = session.request;
        let client_id = request.client_id.clone().unwrap_or_default();
        let redirect = request.redirect_uri.clone().unwrap_or_default();
        let written = self.update(|s| {
            s.pending.remove(request_id);
            if let Some(document) = &session.document {
                // The client as its document says now (name, redirect URIs), kept for `/token`
                // and `auth clients`.
                let client = s
                    .clients
                    .entry(client_id.clone())
                    .or_insert(document.clone());
                client.name.clone_from(&document.name);
                client.redirect_uris.clone_from(&document.redirect_uris);
            }
            if let Some(client) = s.clients.get_mut(&client_id) {
                client.granted_scope = Some(session.scope.clone());
            }
        });
        if written.is_err() {
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "the authorization state could not be written",
            );
        }
        let code = crate::auth::random_string(40);
        let kept = Code {
            client_id,
            redirect_uri: redirect.clone(),
            challenge: request.code_challenge.unwrap_or_default(),
            scope: session.scope,
            expires_at: now() + CODE_TTL.as_secs(),
        };
        if self.keep_code(&hash(&code), kept).is_err() {
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "the authorization code could not be kept: try the login again",
            );
        }
        let mut params = vec![("code", code.as_str())];
        params.extend(request.state.as_deref().map(|s| ("state", s)));
        params.push(("iss", &self.issuer));
        redirect_to(&redirect, &params)
    }
}

impl OAuthServer {
    /// Keeps `code` under its hash: in the shared store when there is one (any replica's
    /// `/token` redeems it), else in memory.
    fn keep_code(&self, hash: &str, code: Code) -> std::io::Result<()> {
        let record = serde_json::to_vec(&code)?;
        if !self.store.put_code(hash, &record, CODE_TTL)? {
            let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
            codes.insert(hash.to_string(), code);
        }
        Ok(())
    }

    /// Takes the code kept under `hash` (once, wherever it was kept).
    pub(super) fn take_code(&self, hash: &str) -> std::io::Result<Option<Code>> {
        let held = self
            .codes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(hash);
        if held.is_some() {
            return Ok(held);
        }
        match self.store.take_code(hash)? {
            Some(record) => Ok(Some(serde_json::from_slice(&record)?)),
            None => Ok(None),
        }
    }
}

/// A 303 to `redirect` with `params` added to its query.
pub(super) fn redirect_to(redirect: &str, params: &[(&str, &str)]) -> Response {
    let Ok(mut url) = Url::parse(redirect) else {
        return error_page(StatusCode::BAD_REQUEST, "the redirect_uri is not a URL");
    };
    url.query_pairs_mut().extend_pairs(params);
    (StatusCode::SEE_OTHER, [(header::LOCATION, url.to_string())]).into_response()
}

/// An error sent back to the client's (registered) redirect URI.
pub(super) fn redirect_error(
    redirect: &str,
    error: &str,
    state: Option<&str>,
    issuer: &str,
) -> Response {
    let mut params = vec![("error", error)];
    params.extend(state.map(|s| ("state", s)));
    params.push(("iss", issuer));
    redirect_to(redirect, &params)
}

/// The headers every page of ours carries: never framed, never cached.
fn page_headers() -> [(header::HeaderName, &'static str); 4] {
    [
        (header::CONTENT_SECURITY_POLICY, "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
    ]
}

/// An error page (never a redirect: the redirect URI may be the attacker's).
pub(super) fn error_page(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<!doctype html><title>mcp-launch</title><h1>Not authorized</h1><p>{}</p>",
        escape(message)
    );
    (status, page_headers(), body).into_response()
}

/// The consent page of request `id`.
fn page(id: &str, session: &Session, note: Option<&str>) -> Response {
    let client = escape(session.request.client_id.as_deref().unwrap_or(""));
    let note = note
        .map(|n| format!("<p><b>{}</b></p>", escape(n)))
        .unwrap_or_default();
    let body = format!(
        "<!doctype html><title>mcp-launch: allow access?</title><h1>Allow access to your tools?</h1>\
         <p>Client <code>{client}</code> asks for <code>{scope}</code>.</p>{note}\
         <p>Enter the one-time code mcp-launch shows in its terminal, or run \
         <code>mcp-launch auth approve {id}</code> and press Allow.</p>\
         <form method=\"post\" action=\"authorize\"><input type=\"hidden\" name=\"request\" value=\"{id}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input name=\"code\" autocomplete=\"off\">\
         <button name=\"action\" value=\"allow\">Allow</button> <button name=\"action\" value=\"deny\">Deny</button></form>",
        scope = escape(&session.scope),
        csrf = session.csrf,
    );
    let cookie = format!(
        "{CSRF_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
        session.csrf
    );
    let mut response = (StatusCode::OK, page_headers(), body).into_response();
    if let Ok(value) = cookie.parse() {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The value of cookie `name`.
fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    let cookies: HashMap<&str, &str> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .collect();
    cookies.get(name).map(|v| v.to_string())
}

/// Text made safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}
