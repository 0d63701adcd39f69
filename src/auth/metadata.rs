//! The OAuth metadata documents both sides exchange, and where they are found.
//!
//! - [`ProtectedResource`]: RFC 9728, served by an MCP server (ours under `--auth`), read by our
//!   client to learn which authorization server to ask.
//! - [`AuthorizationServer`]: RFC 8414 (and OpenID Connect Discovery, whose fields we use are the
//!   same), served by our built-in authorization server, read by our client.
//! - [`ClientMetadata`] / [`ClientInformation`]: RFC 7591 registration request and answer; the
//!   same fields make a Client ID Metadata Document.
//! - [`TokenResponse`] / [`ErrorResponse`]: RFC 6749 §5.
//!
//! Unknown fields are kept in `extra`, so a document read and written again loses nothing.

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The well-known suffix of protected-resource metadata (RFC 9728 §3).
pub const PROTECTED_RESOURCE_SUFFIX: &str = "/.well-known/oauth-protected-resource";
/// The well-known suffix of authorization-server metadata (RFC 8414 §3).
pub const AUTHORIZATION_SERVER_SUFFIX: &str = "/.well-known/oauth-authorization-server";
/// The well-known suffix of OpenID Connect Discovery.
pub const OPENID_SUFFIX: &str = "/.well-known/openid-configuration";

/// RFC 9728 protected-resource metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtectedResource {
    /// The resource's identifier: the canonical URI of the MCP endpoint (RFC 8707).
    pub resource: String,
    /// Issuers of the authorization servers that grant tokens for this resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// Scopes the document's subject knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How a bearer token may be presented (`header` only, for us).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A name to show people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Fields this struct does not name, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// RFC 8414 authorization-server metadata (the OpenID Discovery fields we use are the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationServer {
    /// The authorization server's identifier; must equal the URL its metadata was found under (minus the well-known part) and the `iss` of its answers.
    pub issuer: String,
    /// Where the browser is sent to authorize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens are exchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// RFC 7591 dynamic client registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// RFC 7009 token revocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// RFC 8628 device authorization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_endpoint: Option<String>,
    /// The signing keys of the tokens it issues (JWTs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes the document's subject knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Response types (`code` for us).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// Grant types (`authorization_code`, `refresh_token`, device code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; must name `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint (`none`, `client_secret_basic`, `client_secret_post`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents (an HTTPS URL as `client_id`) are accepted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authorization_response_iss_parameter_supported: bool,
    /// Fields this struct does not name, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthorizationServer {
    /// Whether PKCE S256 is advertised; the MCP spec says a client must refuse to proceed
    /// without it (`code_challenge_methods_supported` absent means no PKCE support).
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == super::pkce::METHOD))
    }
}

/// RFC 7591 client metadata: a registration request, or a Client ID Metadata Document (which
/// also names its own URL as `client_id`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientMetadata {
    /// The client's identifier (a Client ID Metadata Document's own URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// A name to show the person who consents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// Redirect URIs, matched exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_uris: Vec<String>,
    /// Grant types the client uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grant_types: Vec<String>,
    /// Response types the client uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_types: Vec<String>,
    /// How the client authenticates at the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// Space-separated scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The client's home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    /// The client's logo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logo_uri: Option<String>,
    /// Fields this struct does not name, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// RFC 7591 §3.2.1: a registration's answer.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientInformation {
    /// The client's identifier (a Client ID Metadata Document's own URL).
    pub client_id: String,
    /// The client's secret (confidential clients only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// When the id was issued (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_issued_at: Option<u64>,
    /// 0 means the secret does not expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
    /// The registered metadata.
    #[serde(flatten)]
    pub metadata: ClientMetadata,
}

impl std::fmt::Debug for ClientInformation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientInformation")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

/// RFC 6749 §5.1: a successful token answer.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenResponse {
    /// The token presented to the resource.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Lifetime of the access token in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u64>,
    /// Exchanged for a new access token (rotated on use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Space-separated scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Fields this struct does not name, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "***"))
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// RFC 6749 §5.2: an error answer (token, registration and authorization endpoints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// The error code (`invalid_grant`, `invalid_client`, …).
    pub error: String,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
    /// A page about the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_uri: Option<String>,
}

/// Where a resource's metadata may be, in the order the MCP spec has clients try them: the
/// path-aware URL (`/.well-known/oauth-protected-resource/<path>`), then the root one. Query and
/// fragment are dropped.
pub fn protected_resource_urls(resource: &Url) -> Vec<Url> {
    let path = resource.path().trim_end_matches('/');
    let mut urls = Vec::with_capacity(2);
    if !path.is_empty() {
        urls.push(at_path(
            resource,
            &format!("{PROTECTED_RESOURCE_SUFFIX}{path}"),
        ));
    }
    urls.push(at_path(resource, PROTECTED_RESOURCE_SUFFIX));
    urls
}

/// Where an authorization server's metadata may be, in the MCP spec's order: for an issuer
/// with a path, RFC 8414's path insertion, OpenID's path insertion, then OpenID's path
/// appending; for an issuer without, RFC 8414's then OpenID's well-known URL.
pub fn authorization_server_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            at_path(issuer, AUTHORIZATION_SERVER_SUFFIX),
            at_path(issuer, OPENID_SUFFIX),
        ];
    }
    vec![
        at_path(issuer, &format!("{AUTHORIZATION_SERVER_SUFFIX}{path}")),
        at_path(issuer, &format!("{OPENID_SUFFIX}{path}")),
        at_path(issuer, &format!("{path}{OPENID_SUFFIX}")),
    ]
}

/// `base` with its path replaced by `path`, and no query or fragment.
fn at_path(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn protected_resource_urls_try_the_path_first() {
        assert_eq!(
            strings(protected_resource_urls(&url(
                "https://h.example/public/mcp?x=1"
            ))),
            [
                "https://h.example/.well-known/oauth-protected-resource/public/mcp",
                "https://h.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(protected_resource_urls(&url("https://h.example/"))),
            ["https://h.example/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_urls_follow_the_spec_order() {
        assert_eq!(
            strings(authorization_server_urls(&url(
                "https://auth.example/tenant1"
            ))),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(authorization_server_urls(&url("https://auth.example"))),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn documents_keep_unknown_fields_and_hide_secrets() {
        let doc = json!({
            "issuer": "https://auth.example",
            "code_challenge_methods_supported": ["S256"],
            "x-vendor": {"a": 1},
        });
        let server: AuthorizationServer = serde_json::from_value(doc.clone()).unwrap();
        assert!(server.supports_s256());
        assert_eq!(serde_json::to_value(&server).unwrap(), doc);
        let plain: AuthorizationServer = serde_json::from_value(
            json!({"issuer": "i", "code_challenge_methods_supported": ["plain"]}),
        )
        .unwrap();
        assert!(!plain.supports_s256());

        let info: ClientInformation = serde_json::from_value(
            json!({"client_id": "c", "client_secret": "s3cret", "redirect_uris": ["http://127.0.0.1:1/cb"]}),
        )
        .unwrap();
        assert_eq!(info.metadata.redirect_uris.len(), 1);
        assert!(!format!("{info:?}").contains("s3cret"));
        let token: TokenResponse = serde_json::from_value(
            json!({"access_token": "at-secret", "token_type": "Bearer", "refresh_token": "rt-secret"}),
        )
        .unwrap();
        let shown = format!("{token:?}");
        assert!(
            !shown.contains("at-secret") && !shown.contains("rt-secret"),
            "{shown}"
        );
    }
}
