//! The authorization code flow with PKCE S256: register (pre-registered client, Client ID
//! Metadata Document, else RFC 7591), build the authorization URL, then check the redirect
//! that comes back (state, `iss` per RFC 9207, the loopback redirect URI) and exchange its code.

use reqwest::{Client, Url};

use super::discover::{discover, is_loopback, parse_url, same_server, Discovery};
use super::error::{AuthError, Step};
use super::preregistered::{at_token_endpoint, Probe};
use super::register::{check_document, register};
use super::Grant;
use crate::auth::metadata::ClientInformation;
use crate::auth::pkce::{self, Pkce};

pub use super::preregistered::PreRegistered;

/// What a login needs to start.
pub struct LoginRequest {
    /// The server's name in the config (shown in `auth status`).
    pub server: String,
    /// The MCP endpoint.
    pub url: String,
    /// Where the authorization server sends the browser back (a loopback URL).
    pub redirect_uri: String,
    /// A pre-registered client, if the config names one.
    pub registered: Option<PreRegistered>,
    /// Our Client ID Metadata Document's URL, used when the authorization server takes them.
    pub metadata_document: Option<String>,
    /// Scopes to ask for beyond the discovered ones (a step-up's, or `auth login --scope`).
    pub scope: Option<String>,
    /// How the person authorizes (see [`Flow`]).
    pub flow: Flow,
    /// The authorization server's metadata document to use instead of discovering it (the
    /// config's `oauth.authServerMetadataUrl`).
    pub metadata_url: Option<String>,
}

/// How the person authorizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// The authorization code flow: a browser, whose redirect comes back to us (or is pasted).
    Redirect,
    /// Device authorization (RFC 8628): a code the person enters on any device.
    Device,
    /// Device authorization where the authorization server offers it, else `Redirect` (a
    /// machine with no browser).
    DeviceWhereOffered,
}

/// A login whose authorization server is discovered and whose client is registered: what
/// both flows start from.
pub struct Started {
    pub(crate) request: LoginRequest,
    pub(crate) discovery: Discovery,
    pub(crate) client: ClientInformation,
    /// The scopes asked for (kept in the grant: the next step-up asks for them again).
    pub(crate) scope: Option<String>,
    /// The authorization server of the grant stored before, when it was another one (the
    /// server moved, SEP-2352): nothing of that grant was sent to the new one.
    pub replaces_issuer: Option<String>,
}

/// A login waiting for its redirect.
pub struct Pending {
    started: Started,
    pkce: Pkce,
    state: String,
    /// Where to send the person.
    pub authorize_url: Url,
}

/// Discovers, registers and builds the authorization URL.
pub async fn begin(http: &Client, request: LoginRequest) -> Result<Pending, AuthError> {
    start(http, request).await?.authorize()
}

/// Discovers the authorization server and registers with it, for the request's flow (a
/// `DeviceWhereOffered` is settled here, by the metadata).
pub async fn start(http: &Client, mut request: LoginRequest) -> Result<Started, AuthError> {
    let redirect = Url::parse(&request.redirect_uri).ok().filter(is_loopback);
    if redirect.is_none() {
        return Err(AuthError::Refused {
            resource: request.url.clone(),
            step: Step::Registration,
            reason: format!("{} is not a loopback redirect URI", request.redirect_uri),
        });
    }
    let discovery = discover(http, &request.url, None, request.metadata_url.as_deref()).await?;
    if request.flow == Flow::DeviceWhereOffered {
        let offered = discovery.server.device_authorization_endpoint.is_some();
        request.flow = if offered {
            Flow::Device
        } else {
            Flow::Redirect
        };
    }
    let held = super::store::load(&request.url).await;
    let replaces_issuer = held
        .as_ref()
        .map(|grant| grant.issuer.clone())
        .filter(|issuer| !same_server(&discovery.server.issuer, issuer));
    let scope = scope_to_ask(&request, &discovery, held.as_ref());
    let client = register(http, &request, &discovery, scope.as_deref()).await?;
    Ok(Started {
        request,
        discovery,
        client,
        scope,
        replaces_issuer,
    })
}

impl Started {
    /// The flow the login takes (never `DeviceWhereOffered`).
    pub fn flow(&self) -> Flow {
        self.request.flow
    }

    /// The authorization URL of the code flow, with PKCE S256, `state` and the resource.
    pub fn authorize(self) -> Result<Pending, AuthError> {
        let pkce = Pkce::new();
        let state = crate::auth::random_string(32);
        let endpoint = self
            .discovery
            .server
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| AuthError::Refused {
                resource: self.request.url.clone(),
                step: Step::ServerMetadata,
                reason: "it names no authorization_endpoint".into(),
            })?;
        let mut authorize_url = parse_url(&self.request.url, endpoint, Step::ServerMetadata)?;
        {
            let mut query = authorize_url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client.client_id)
                .append_pair("redirect_uri", &self.request.redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", pkce::METHOD)
                .append_pair("state", &state)
                .append_pair("resource", &self.discovery.resource);
            if let Some(scope) = &self.scope {
                query.append_pair("scope", scope);
            }
        }
        Ok(Pending {
            started: self,
            pkce,
            state,
            authorize_url,
        })
    }

    /// The grant this login makes, before its tokens come.
    pub(crate) fn grant(&self) -> Grant {
        let pre = self.request.registered.as_ref();
        Grant {
            server: self.request.server.clone(),
            url: self.request.url.clone(),
            resource: self.discovery.resource.clone(),
            issuer: self.discovery.server.issuer.clone(),
            token_endpoint: self
                .discovery
                .server
                .token_endpoint
                .clone()
                .unwrap_or_default(),
            revocation_endpoint: self.discovery.server.revocation_endpoint.clone(),
            client_id: self.client.client_id.clone(),
            // A pre-registered client's secret stays in the config.
            client_secret: self.client.client_secret.clone().filter(|_| pre.is_none()),
            secret_from_config: pre.is_some_and(|pre| pre.client_secret.is_some()),
            token_endpoint_auth_method: self.client.metadata.token_endpoint_auth_method.clone(),
            access_token: String::new(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            requested_scope: self.scope.clone(),
            metadata_url: self.request.metadata_url.clone(),
            obtained_at: super::now(),
            keyring: None,
        }
    }

    /// A token endpoint's refusal of a client registered by hand, named as such.
    pub(crate) fn at_token_endpoint(&self, error: AuthError) -> AuthError {
        match &self.request.registered {
            Some(pre) => at_token_endpoint(
                error,
                pre,
                &self.discovery.server.issuer,
                &self.request.redirect_uri,
            ),
            None => error,
        }
    }
}

/// The scopes to ask for: the discovered ones (the 401's challenge, else the resource's
/// `scopes_supported`) — or a pre-registered client's own instead — with the ones asked for
/// besides and, for a server logged in to before, the ones asked for then (SEP-2350: a
/// step-up keeps what the other operations need).
fn scope_to_ask(
    request: &LoginRequest,
    discovery: &Discovery,
    held: Option<&Grant>,
) -> Option<String> {
    if let Some(scopes) = request
        .registered
        .as_ref()
        .and_then(|r| r.scopes.as_deref())
    {
        return super::scope::union([Some(scopes), request.scope.as_deref()]);
    }
    let held = held.and_then(Grant::held_scope);
    super::scope::union([
        held.as_deref(),
        discovery.scope.as_deref(),
        request.scope.as_deref(),
    ])
}

impl Pending {
    /// The authorization server of the grant stored before, when it was another one.
    pub fn replaces_issuer(&self) -> Option<&str> {
        self.started.replaces_issuer.as_deref()
    }

    /// For a client registered by hand, tries the authorization request once before a person
    /// is sent there: an authorization server that refuses the client (an unknown id, a
    /// redirect URI the app does not list) is then said here, naming the config, instead of
    /// on an error page in the browser. For a client by our metadata document, reads the
    /// hosted document as the authorization server will (see [`check_document`]). Nothing to
    /// do for a client registered now.
    pub async fn check_client(&self, http: &Client) -> Result<(), AuthError> {
        let request = &self.started.request;
        if request.metadata_document.as_ref() == Some(&self.started.client.client_id) {
            return check_document(http, request, &self.started.client.client_id).await;
        }
        let Some(pre) = &self.started.request.registered else {
            return Ok(());
        };
        let probe = Probe {
            client: http,
            resource: &self.started.request.url,
            issuer: &self.started.discovery.server.issuer,
            redirect_uri: &self.started.request.redirect_uri,
        };
        probe.authorization(pre, &self.authorize_url).await
    }

    /// Checks the redirect that came back (the full URL the browser was sent to) and exchanges
    /// its code for tokens; the grant, ready to store.
    pub async fn finish(self, http: &Client, redirected: &str) -> Result<Grant, AuthError> {
        let code = self.check_redirect(redirected)?;
        let started = &self.started;
        let mut grant = started.grant();
        let pairs = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", started.request.redirect_uri.as_str()),
            ("code_verifier", self.pkce.verifier.as_str()),
        ];
        let token = grant
            .token_client(http)
            .request(Step::Token, &pairs)
            .await
            .map_err(|error| started.at_token_endpoint(error))?;
        grant.take(token);
        Ok(grant)
    }

    /// The code of the redirect, after checking it came to our redirect URI with our state
    /// and from the issuer we asked.
    fn check_redirect(&self, redirected: &str) -> Result<String, AuthError> {
        let refuse = |reason: String| AuthError::Refused {
            resource: self.started.request.url.clone(),
            step: Step::Authorization,
            reason,
        };
        let url = Url::parse(redirected.trim())
            .map_err(|_| refuse("the pasted redirect is not a URL".into()))?;
        let mut base = url.clone();
        base.set_query(None);
        base.set_fragment(None);
        if base.as_str() != self.started.request.redirect_uri {
            return Err(refuse(format!(
                "the redirect went to {base}, not to {}",
                self.started.request.redirect_uri
            )));
        }
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if param("state").as_deref() != Some(self.state.as_str()) {
            return Err(refuse(
                "its state is not the one we sent (a forged or stale redirect)".into(),
            ));
        }
        self.check_iss(param("iss").as_deref()).map_err(refuse)?;
        if let Some(error) = param("error") {
            let detail = param("error_description").unwrap_or_default();
            return Err(AuthError::Failed {
                resource: self.started.request.url.clone(),
                step: Step::Authorization,
                reason: format!("the authorization server said {error} {detail}")
                    .trim()
                    .to_string(),
            });
        }
        param("code").ok_or_else(|| refuse("it carries no code".into()))
    }

    /// RFC 9207: an `iss` must be our issuer, compared as strings with no normalization
    /// (§2.4; SEP-2468); one the server promised must be there.
    fn check_iss(&self, iss: Option<&str>) -> Result<(), String> {
        let issuer = &self.started.discovery.server.issuer;
        match iss {
            Some(iss) if iss != issuer => {
                Err(format!("it comes from issuer {iss:?}, not {issuer:?}"))
            }
            None if self
                .started
                .discovery
                .server
                .authorization_response_iss_parameter_supported =>
            {
                Err("it lacks the iss its authorization server promised (RFC 9207)".into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::auth::metadata::ClientMetadata;
    use serde_json::{json, Value};

    /// A login to `url` whose authorization server's metadata is `server`, its client `c`.
    pub(crate) fn started(url: &str, server: Value, flow: Flow) -> Started {
        Started {
            request: LoginRequest {
                server: "s".into(),
                url: url.into(),
                redirect_uri: "http://127.0.0.1:33001/callback".into(),
                registered: None,
                metadata_document: None,
                scope: None,
                flow,
                metadata_url: None,
            },
            discovery: Discovery {
                resource: url.into(),
                server: serde_json::from_value(server).unwrap(),
                scope: None,
            },
            client: ClientInformation {
                client_id: "c".into(),
                client_secret: None,
                client_id_issued_at: None,
                client_secret_expires_at: None,
                metadata: ClientMetadata::default(),
            },
            scope: None,
            replaces_issuer: None,
        }
    }

    fn pending(iss_promised: bool) -> Pending {
        let server = json!({
            "issuer": "https://as.example",
            "authorization_endpoint": "https://as.example/authorize",
            "token_endpoint": "https://as.example/token",
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": iss_promised,
        });
        let started = started("https://mcp.example/mcp", server, Flow::Redirect);
        Pending {
            started,
            pkce: Pkce::new(),
            state: "st8".into(),
            authorize_url: Url::parse("https://as.example/authorize").unwrap(),
        }
    }

    #[test]
    fn the_redirect_is_checked_before_its_code_is_used() {
        let p = pending(false);
        let ok = p.check_redirect("http://127.0.0.1:33001/callback?code=abc&state=st8");
        assert_eq!(ok.unwrap(), "abc");
        let with_iss =
            "http://127.0.0.1:33001/callback?code=abc&state=st8&iss=https%3A%2F%2Fas.example";
        assert_eq!(p.check_redirect(with_iss).unwrap(), "abc");
        for (bad, why) in [
            (
                "http://127.0.0.1:33001/callback?code=abc&state=other",
                "state",
            ),
            (
                "https://evil.example/callback?code=abc&state=st8",
                "redirect went to",
            ),
            (
                "http://127.0.0.1:33001/callback?code=abc&state=st8&iss=https%3A%2F%2Fevil.example",
                "issuer",
            ),
            (
                "http://127.0.0.1:33001/callback?code=abc&state=st8&iss=https%3A%2F%2Fas.example%2F",
                "issuer",
            ),
        ] {
            let refused = p.check_redirect(bad).unwrap_err();
            assert_eq!(refused.kind(), "auth_refused", "{bad}");
            assert!(
                refused.to_string().contains(why)
                    && refused.to_string().contains("authorization response"),
                "{refused}"
            );
        }
        let missing_iss =
            pending(true).check_redirect("http://127.0.0.1:33001/callback?code=abc&state=st8");
        assert!(missing_iss.unwrap_err().to_string().contains("RFC 9207"));
    }

    /// SEP-2350: a step-up's login asks for what the last login asked for, the discovered
    /// scopes and the challenge's; a pre-registered client's own scopes replace the held and
    /// discovered ones.
    #[test]
    fn a_login_asks_for_the_union_of_held_discovered_and_wanted_scopes() {
        let mut p = pending(false);
        p.started.discovery.scope = Some("mcp:basic".into());
        p.started.request.scope = Some("mcp:basic mcp:write".into());
        let held: Grant = serde_json::from_value(json!({
            "server": "s", "url": "u", "resource": "r", "issuer": "i", "token_endpoint": "t",
            "client_id": "c", "access_token": "a", "obtained_at": 0,
            "requested_scope": "files:read", "scope": "files:read mcp:basic"
        }))
        .unwrap();
        assert_eq!(
            scope_to_ask(&p.started.request, &p.started.discovery, Some(&held)).as_deref(),
            Some("files:read mcp:basic mcp:write")
        );
        assert_eq!(
            scope_to_ask(&p.started.request, &p.started.discovery, None).as_deref(),
            Some("mcp:basic mcp:write")
        );
        p.started.request.scope = None;
        p.started.discovery.scope = None;
        assert_eq!(
            scope_to_ask(&p.started.request, &p.started.discovery, None),
            None
        );
        p.started.request.registered = Some(PreRegistered {
            client_id: "pre".into(),
            scopes: Some("only".into()),
            ..PreRegistered::default()
        });
        assert_eq!(
            scope_to_ask(&p.started.request, &p.started.discovery, Some(&held)).as_deref(),
            Some("only")
        );
        p.started.request.scope = Some("more".into());
        assert_eq!(
            scope_to_ask(&p.started.request, &p.started.discovery, Some(&held)).as_deref(),
            Some("only more"),
            "a step-up's scopes still go with a pre-registered client's own"
        );
    }

    #[tokio::test]
    async fn a_redirect_uri_off_this_machine_is_refused_before_anything_is_sent() {
        let request = LoginRequest {
            server: "s".into(),
            url: "http://127.0.0.1:9/mcp".into(),
            redirect_uri: "https://evil.example/callback".into(),
            registered: None,
            metadata_document: None,
            scope: None,
            flow: Flow::Redirect,
            metadata_url: None,
        };
        let refused = begin(&crate::auth::client::http_client(), request)
            .await
            .err()
            .unwrap();
        assert_eq!(refused.kind(), "auth_refused");
        assert!(refused.to_string().contains("loopback"), "{refused}");
    }
}
