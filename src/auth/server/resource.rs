//! The check of every request to the protected endpoint: a bearer token in the header (never
//! the query string), known, unexpired, issued for this resource (RFC 8707); refusals carry
//! the `WWW-Authenticate: Bearer` challenge that points at our resource metadata (RFC 9728).

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::store::{hash, Grant};
use super::{now, OAuthServer};
use crate::auth::challenge::BearerChallenge;
use crate::auth::metadata::{ProtectedResource, PROTECTED_RESOURCE_SUFFIX};

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No bearer token: the client must authorize first.
    #[error("no bearer token")]
    Missing,
    /// A token in the query string (OAuth 2.1 forbids it: URLs end up in logs).
    #[error("a token in the query string is refused; send `Authorization: Bearer <token>`")]
    InQuery,
    /// Unknown, expired or revoked.
    #[error("the token is unknown, expired or revoked")]
    Invalid,
    /// Issued for another resource.
    #[error("the token was issued for another resource")]
    WrongAudience,
    /// The scope does not cover the request.
    #[error("the token's scope does not cover this request (needs {0})")]
    InsufficientScope(String),
    /// The store could not be read.
    #[error("the authorization state could not be read")]
    Store,
    /// A JWT of the OpenID provider (delegated mode) did not verify: what failed.
    #[error("the token is refused: {0}")]
    Jwt(String),
}

impl OAuthServer {
    /// The grant of the request with `headers` and `query`, or why it is refused.
    pub fn verify(&self, headers: &HeaderMap, query: Option<&str>) -> Result<Grant, Refusal> {
        if query.is_some_and(has_token_param) {
            return Err(Refusal::InQuery);
        }
        let token = crate::auth::bearer_token_in(headers).ok_or(Refusal::Missing)?;
        let state = self.current().map_err(|_| Refusal::Store)?;
        let grant = state.access.get(&hash(token)).ok_or(Refusal::Invalid)?;
        if grant.expires_at <= now() {
            return Err(Refusal::Invalid);
        }
        if grant.resource != self.resource {
            return Err(Refusal::WrongAudience);
        }
        Ok(grant.clone())
    }

    /// [`OAuthServer::verify`], or in delegated mode the provider's JWT verified (which may
    /// fetch the provider's keys again).
    pub async fn check(&self, headers: &HeaderMap, query: Option<&str>) -> Result<Grant, Refusal> {
        let Some(delegate) = &self.delegate else {
            return self.verify(headers, query);
        };
        if query.is_some_and(has_token_param) {
            return Err(Refusal::InQuery);
        }
        let token = crate::auth::bearer_token_in(headers).ok_or(Refusal::Missing)?;
        delegate.verify(token).await.map_err(|reason| {
            tracing::info!(issuer = %delegate.issuer(), %reason, "a token was refused");
            Refusal::Jwt(reason)
        })
    }

    /// The URL of our protected-resource metadata (path-aware, RFC 9728 §3.1).
    pub fn resource_metadata_url(&self) -> String {
        let path = self.resource.strip_prefix(&self.base).unwrap_or("");
        format!("{}{PROTECTED_RESOURCE_SUFFIX}{path}", self.base)
    }

    /// Our protected-resource metadata.
    pub fn resource_metadata(&self) -> ProtectedResource {
        ProtectedResource {
            resource: self.resource.clone(),
            authorization_servers: vec![self.issuer.clone()],
            scopes_supported: Some(super::SCOPES.iter().map(|s| s.to_string()).collect()),
            bearer_methods_supported: Some(vec!["header".into()]),
            resource_name: Some("mcp-launch".into()),
            extra: Default::default(),
        }
    }

    /// The answer to a refused request: 401 (or 403 for scope, 400 for a query token) with a
    /// Bearer challenge naming our resource metadata.
    pub fn refuse(&self, refusal: &Refusal) -> Response {
        let (status, error, scope) = match refusal {
            Refusal::Missing => (StatusCode::UNAUTHORIZED, None, None),
            Refusal::InQuery => (StatusCode::BAD_REQUEST, Some("invalid_request"), None),
            Refusal::Invalid | Refusal::WrongAudience | Refusal::Jwt(_) => {
                (StatusCode::UNAUTHORIZED, Some("invalid_token"), None)
            }
            Refusal::InsufficientScope(scope) => (
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                Some(scope.clone()),
            ),
            Refusal::Store => (StatusCode::SERVICE_UNAVAILABLE, None, None),
        };
        let challenge = BearerChallenge {
            resource_metadata: Some(self.resource_metadata_url()),
            scope: scope.or_else(|| Some(super::SCOPES.join(" "))),
            error: error.map(str::to_string),
            error_description: error.map(|_| refusal.to_string()),
            ..BearerChallenge::default()
        };
        let body = json!({"error": {"type": "unauthorized", "message": refusal.to_string(),
            "help": "authorize with OAuth: the server's metadata is at the `resource_metadata` URL of the WWW-Authenticate header"}});
        let mut response = (status, axum::Json(body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge.to_string()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// Whether a query string carries an `access_token` parameter.
fn has_token_param(query: &str) -> bool {
    query
        .split('&')
        .any(|pair| pair.split('=').next() == Some("access_token"))
}

/// Middleware for the protected endpoint: passes a request whose token verifies (its
/// [`Grant`] added to the request's extensions), answers every other with the refusal.
pub async fn protect(
    axum::extract::State(server): axum::extract::State<std::sync::Arc<OAuthServer>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match server.check(request.headers(), request.uri().query()).await {
        Ok(grant) => {
            request.extensions_mut().insert(grant);
            next.run(request).await
        }
        // An unread body: `listen` says `Connection: close` on the refusal.
        Err(refusal) => server.refuse(&refusal),
    }
}
