//! A client registered by hand (the server's `oauth` in the config): no registration request,
//! its secret proved as the authorization server's metadata says, and its authorization
//! request tried once before the browser opens — an unknown client id is then said here,
//! naming the config, instead of on an error page in the browser.

use std::time::Duration;

use reqwest::{Client, Url};

use super::error::{AuthError, Rejection, Step};
use super::fetch::Fetch;
use super::token::BASIC;
use crate::auth::metadata::AuthorizationServer;

/// How long the authorization server may take to answer the tried request.
const PROBE_WAIT: Duration = Duration::from_secs(10);

/// OAuth error codes an authorization server's page may name when it refuses a client.
const CLIENT_ERRORS: &[&str] = &[
    "invalid_client",
    "unauthorized_client",
    "invalid_redirect_uri",
    "redirect_uri_mismatch",
    "invalid_request",
];

/// A client registered beforehand, from the server's `oauth` entry (secrets expanded).
#[derive(Clone, Default)]
pub struct PreRegistered {
    /// The client id.
    pub client_id: String,
    /// The client secret (confidential clients); never stored, never shown.
    pub client_secret: Option<String>,
    /// Scopes to ask for instead of the discovered ones.
    pub scopes: Option<String>,
    /// Where it is configured, for errors: the file, the server and the field.
    pub origin: String,
}

impl PreRegistered {
    /// How it proves its secret at the token endpoint: `none` without one; else
    /// `client_secret_basic` where the server takes it (RFC 8414's default when it lists no
    /// methods), else `client_secret_post`.
    pub(crate) fn auth_method(&self, server: &AuthorizationServer) -> &'static str {
        if self.client_secret.is_none() {
            return "none";
        }
        let methods = server.token_endpoint_auth_methods_supported.as_deref();
        match methods {
            Some(methods) if !methods.iter().any(|m| m == BASIC) => {
                if methods.iter().any(|m| m == "client_secret_post") {
                    "client_secret_post"
                } else {
                    BASIC
                }
            }
            _ => BASIC,
        }
    }

    /// The refusal of this client by `issuer` at `step`, saying `said`.
    pub(crate) fn rejected(
        &self,
        resource: &str,
        issuer: &str,
        redirect_uri: &str,
        step: Step,
        said: String,
    ) -> AuthError {
        AuthError::ClientRejected(Box::new(Rejection {
            resource: resource.to_string(),
            issuer: issuer.to_string(),
            client_id: self.client_id.clone(),
            origin: self.origin.clone(),
            redirect_uri: redirect_uri.to_string(),
            step,
            said,
        }))
    }
}

/// Where the authorization request of a pre-registered client is tried.
pub(crate) struct Probe<'a> {
    pub(crate) client: &'a Client,
    /// The MCP endpoint (named in errors).
    pub(crate) resource: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) redirect_uri: &'a str,
}

impl Probe<'_> {
    /// GETs the authorization URL without following it. An error status, or a redirect back
    /// to us carrying an `error`, is the server refusing the client; anything else (a login
    /// page, a redirect to one, no answer) is left to the browser.
    pub(crate) async fn authorization(
        &self,
        pre: &PreRegistered,
        url: &Url,
    ) -> Result<(), AuthError> {
        let Ok(Ok(resp)) =
            tokio::time::timeout(PROBE_WAIT, self.client.get(url.clone()).send()).await
        else {
            return Ok(());
        };
        let status = resp.status();
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let refuse = |said: String| {
            Err(pre.rejected(
                self.resource,
                self.issuer,
                self.redirect_uri,
                Step::Authorization,
                said,
            ))
        };
        if status.is_redirection() {
            return match location.as_deref().and_then(|l| self.error_in(l)) {
                Some(said) => refuse(said),
                None => Ok(()),
            };
        }
        if !(status.is_client_error() || status.is_server_error()) {
            return Ok(());
        }
        let fetch = Fetch {
            client: self.client,
            resource: self.resource,
            step: Step::Authorization,
        };
        let body = tokio::time::timeout(PROBE_WAIT, fetch.read_capped(resp))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let body = String::from_utf8_lossy(&body);
        let named = CLIENT_ERRORS.iter().find(|code| body.contains(*code));
        let said = match named {
            Some(code) => format!("HTTP {} naming {code}", status.as_u16()),
            None => format!("HTTP {} to the authorization request", status.as_u16()),
        };
        refuse(said)
    }

    /// The `error` (and its description) of a redirect to our redirect URI.
    fn error_in(&self, location: &str) -> Option<String> {
        let url = Url::parse(location).ok()?;
        let mut base = url.clone();
        base.set_query(None);
        base.set_fragment(None);
        if base.as_str() != self.redirect_uri {
            return None;
        }
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.chars().take(200).collect::<String>())
        };
        let error = param("error")?;
        Some(match param("error_description") {
            Some(detail) => format!("{error}: {detail}"),
            None => error,
        })
    }
}

/// A token endpoint's refusal of the client itself (RFC 6749 §5.2), made a
/// [`AuthError::ClientRejected`]; other errors as they are.
pub(crate) fn at_token_endpoint(
    error: AuthError,
    pre: &PreRegistered,
    issuer: &str,
    redirect_uri: &str,
) -> AuthError {
    match error {
        AuthError::Failed {
            resource, reason, ..
        } if CLIENT_ERRORS[..2].iter().any(|code| reason.contains(code)) => {
            pre.rejected(&resource, issuer, redirect_uri, Step::Token, reason)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_confidential_client_proves_its_secret_as_the_server_takes_it() {
        let server = |methods: serde_json::Value| -> AuthorizationServer {
            serde_json::from_value(json!({"issuer": "https://as.example",
                "token_endpoint_auth_methods_supported": methods}))
            .unwrap()
        };
        let mut pre = PreRegistered {
            client_id: "app".into(),
            client_secret: Some("s".into()),
            ..PreRegistered::default()
        };
        assert_eq!(pre.auth_method(&server(json!(null))), BASIC);
        assert_eq!(pre.auth_method(&server(json!(["none", BASIC]))), BASIC);
        assert_eq!(
            pre.auth_method(&server(json!(["none", "client_secret_post"]))),
            "client_secret_post"
        );
        pre.client_secret = None;
        assert_eq!(pre.auth_method(&server(json!([BASIC]))), "none");
    }
}
