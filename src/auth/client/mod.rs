//! OAuth 2.1 to remote MCP servers, our client side (the MCP authorization spec, 2025-11-25).
//!
//! - `discover`: the resource's 401 challenge and metadata (RFC 9728), the authorization
//!   server's (RFC 8414 / OpenID), each checked against where it was found.
//! - `login`: registration, PKCE S256, resource indicators (RFC 8707), the redirect's checks
//!   (state, RFC 9207 `iss`), the code exchange.
//! - `device`: device authorization (RFC 8628): a code the person enters on any device,
//!   the token endpoint polled as the authorization server says.
//! - `challenged`: a 403 `insufficient_scope` (step-up, SEP-2350) and a 401 from a server
//!   that moved to another authorization server (SEP-2352), read before anything is sent.
//! - `register`: the client to authorize as (by hand, metadata document, RFC 7591).
//! - `preregistered`: a client registered by hand (the config's `oauth`): its auth method, its
//!   authorization request tried before the browser opens, its refusals named.
//! - `scope`: scope sets and their union.
//! - `store`: the 0600 token store under the state dir; refresh with rotation under its lock.
//! - `keyring`: the OS keyring, where the store puts a grant's secrets when one answers.
//! - `secrets`: pre-registered clients' secrets, from the config, in this process's memory only.
//! - `fetch`: every request bounded in time and size.
//!
//! Tokens never leave this room except as the `Authorization` header of a request to the
//! resource they were issued for.

pub mod challenged;
pub mod device;
mod discover;
mod error;
pub(crate) mod fetch;
pub mod keyring;
pub mod login;
mod preregistered;
mod register;
pub mod scope;
pub mod secrets;
pub mod store;
mod token;

pub(crate) use discover::parse_url;
pub use discover::{authorization_server, discover, same_server, Discovery};
pub use error::{login_command, AuthError, LoginContext, Rejection, StaleDocument, Step};
pub use fetch::http_client;
pub use preregistered::PreRegistered;
pub use register::metadata_document;
pub use token::revoke;
pub(crate) use token::TokenClient;

use serde::{Deserialize, Serialize};

/// What a login left: the tokens of one MCP endpoint and how to refresh them.
#[derive(Clone, Serialize, Deserialize)]
pub struct Grant {
    /// The server's name in the config at login.
    pub server: String,
    /// The MCP endpoint (the store's key).
    pub url: String,
    /// The resource indicator (RFC 8707).
    pub resource: String,
    /// The authorization server.
    pub issuer: String,
    /// Where refreshes go.
    pub token_endpoint: String,
    /// Where `auth logout` revokes (RFC 7009), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// The client we are at that server.
    pub client_id: String,
    /// Its secret, for confidential clients registered dynamically (a pre-registered client's
    /// comes from the config each time: see `secret_from_config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The client is pre-registered and confidential: its secret is the config's
    /// `oauth.clientSecret`, found in [`secrets`] (never stored here).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret_from_config: bool,
    /// How it proves that secret at the token endpoint: `client_secret_basic` (HTTP Basic),
    /// else in the form body (`client_secret_post`; also older grants, which lack this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// Sent to the resource.
    pub access_token: String,
    /// Exchanged for the next access token (rotated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The granted scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The scopes asked for at login: a step-up asks for them again with the new ones
    /// (SEP-2350), whatever the server granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_scope: Option<String>,
    /// The authorization server's metadata document the config names
    /// (`oauth.authServerMetadataUrl`): the server is pinned by the config, so a resource
    /// metadata naming another one is no move (SEP-2352) to log in anew for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_url: Option<String>,
    /// When the login happened.
    pub obtained_at: u64,
    /// Where its secrets (the tokens, a registered client's secret) live: `None` in this
    /// record (the 0600 file), else in the OS keyring under the endpoint's URL, the version of
    /// this stamp (the file then holds them empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyring: Option<String>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("server", &self.server)
            .field("url", &self.url)
            .field("issuer", &self.issuer)
            .field("scope", &self.scope)
            .field("requested_scope", &self.requested_scope)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The client secret to prove at the token endpoint: the stored one, else a
    /// pre-registered client's from this process's config.
    pub(crate) fn secret(&self) -> Option<String> {
        self.client_secret.clone().or_else(|| {
            self.secret_from_config
                .then(|| secrets::known(&self.url, &self.client_id))
                .flatten()
        })
    }

    /// Where its tokens live, as `auth status` says: `keyring` or `file`.
    pub fn location(&self) -> &'static str {
        if self.keyring.is_some() {
            "keyring"
        } else {
            "file"
        }
    }

    /// The scopes this grant stands for: those asked for at login and those granted.
    pub fn held_scope(&self) -> Option<String> {
        scope::union([self.requested_scope.as_deref(), self.scope.as_deref()])
    }
}

pub(crate) use super::now;
