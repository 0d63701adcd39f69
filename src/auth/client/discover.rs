//! Discovery: which authorization server guards a resource, and what it offers. The resource's
//! 401 challenge names its metadata (RFC 9728 §5.1), else the well-known URLs are tried in the
//! spec's order; then the authorization server's metadata (RFC 8414, then OpenID Discovery).
//! Every document is checked against where it was found before anything is sent anywhere.

use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Client, Url};

use super::error::{AuthError, Step};
use super::fetch::Fetch;
use crate::auth::challenge::BearerChallenge;
use crate::auth::metadata::{
    authorization_server_urls, protected_resource_urls, AuthorizationServer, ProtectedResource,
    AUTHORIZATION_SERVER_SUFFIX, OPENID_SUFFIX,
};

/// What discovery found for one MCP server.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The resource indicator (RFC 8707) sent on authorize and token requests.
    pub resource: String,
    /// The authorization server's checked metadata.
    pub server: AuthorizationServer,
    /// The scopes to ask for: the challenge's, else the resource's `scopes_supported`.
    pub scope: Option<String>,
}

/// Discovers the authorization server of the MCP endpoint `url`. `challenge` is the Bearer
/// challenge of a 401 already seen; without one, the endpoint is asked once. `metadata_url`
/// (the config's `oauth.authServerMetadataUrl`) names the authorization server's metadata
/// document instead of discovering it: see [`pinned`].
pub async fn discover(
    client: &Client,
    url: &str,
    challenge: Option<BearerChallenge>,
    metadata_url: Option<&str>,
) -> Result<Discovery, AuthError> {
    let endpoint = parse_url(url, url, Step::ResourceMetadata)?;
    let challenge = match challenge {
        Some(c) => Some(c),
        None => probe(client, &endpoint).await,
    };
    let (scopes_supported, resource, server) = match metadata_url {
        Some(at) => pinned(client, &endpoint, challenge.as_ref(), at).await?,
        None => {
            let (metadata, resource, issuer) = guarded_by(client, url, challenge.as_ref()).await?;
            let server = server_metadata(client, url, &issuer).await?;
            (metadata.scopes_supported, resource, server)
        }
    };
    let scope = challenge
        .as_ref()
        .and_then(|c| c.scope.clone())
        .or_else(|| scopes_supported.map(|s| s.join(" ")))
        .filter(|s| !s.is_empty());
    Ok(Discovery {
        resource,
        server,
        scope,
    })
}

/// Discovery with the authorization server's metadata document named by the config: that
/// document, its `issuer` checked as RFC 8414 §3.3 says (see [`issuer_at`]). The resource's
/// own metadata, where it has one, still gives the resource indicator (checked as always) and
/// its scopes; without one the resource is the endpoint itself.
async fn pinned(
    client: &Client,
    endpoint: &Url,
    challenge: Option<&BearerChallenge>,
    metadata_url: &str,
) -> Result<(Option<Vec<String>>, String, AuthorizationServer), AuthError> {
    let url = endpoint.as_str();
    let (scopes, resource) = match resource_metadata(client, endpoint, challenge).await {
        Ok(metadata) => (
            metadata.scopes_supported.clone(),
            check_resource(url, endpoint, &metadata)?,
        ),
        Err(AuthError::Failed { .. }) => (None, url.to_string()),
        Err(refused) => return Err(refused),
    };
    let fetch = Fetch {
        client,
        resource: url,
        step: Step::ServerMetadata,
    };
    let at = parse_url(url, metadata_url, Step::ServerMetadata)?;
    let server: AuthorizationServer = fetch.json(&fetch.get(&at).await?)?;
    let issuer = match issuer_at(&at) {
        Some(issuer) => issuer,
        None if Url::parse(&server.issuer).is_ok_and(|i| i.origin() == at.origin()) => {
            server.issuer.clone()
        }
        None => {
            return Err(fetch.refused(format!(
                "its issuer {:?} is not on the origin of {at}, where the config's authServerMetadataUrl found it",
                server.issuer
            )))
        }
    };
    Ok((scopes, resource, check_server(&fetch, server, &issuer)?))
}

/// The issuer a metadata document at `at` must name (RFC 8414 §3.3), when `at` is one of the
/// well-known forms (`/.well-known/oauth-authorization-server/PATH`,
/// `/.well-known/openid-configuration/PATH`, `/PATH/.well-known/openid-configuration`); `None`
/// for any other URL (its issuer must then be on its origin).
fn issuer_at(at: &Url) -> Option<String> {
    if at.query().is_some() || at.fragment().is_some() {
        return None;
    }
    let path = at.path();
    let path = [AUTHORIZATION_SERVER_SUFFIX, OPENID_SUFFIX]
        .iter()
        .find_map(|suffix| {
            let rest = path.strip_prefix(suffix)?;
            (rest.is_empty() || rest.starts_with('/')).then_some(rest)
        })
        .or_else(|| path.strip_suffix(OPENID_SUFFIX))?;
    let origin = at.origin().ascii_serialization();
    Some(format!("{origin}{path}"))
}

/// The resource's checked metadata, its resource indicator and the authorization server it
/// names first (the one we use).
async fn guarded_by(
    client: &Client,
    url: &str,
    challenge: Option<&BearerChallenge>,
) -> Result<(ProtectedResource, String, String), AuthError> {
    let endpoint = parse_url(url, url, Step::ResourceMetadata)?;
    let metadata = resource_metadata(client, &endpoint, challenge).await?;
    let resource = check_resource(url, &endpoint, &metadata)?;
    let issuer = metadata
        .authorization_servers
        .first()
        .cloned()
        .ok_or_else(|| AuthError::Refused {
            resource: url.to_string(),
            step: Step::ResourceMetadata,
            reason: "it names no authorization server".into(),
        })?;
    Ok((metadata, resource, issuer))
}

/// The authorization server the resource's metadata names now (read again: a server may move
/// to another one, SEP-2352), as the metadata writes it.
pub async fn authorization_server(
    client: &Client,
    url: &str,
    challenge: Option<&BearerChallenge>,
) -> Result<String, AuthError> {
    Ok(guarded_by(client, url, challenge).await?.2)
}

/// The scopes the resource's metadata names (`scopes_supported`), if it can be read now.
pub async fn scopes_supported(
    client: &Client,
    url: &str,
    challenge: Option<&BearerChallenge>,
) -> Option<String> {
    let (metadata, _, _) = guarded_by(client, url, challenge).await.ok()?;
    metadata.scopes_supported.map(|s| s.join(" "))
}

/// Whether `named` (from the resource's metadata) and `issuer` (from a stored grant) are one
/// authorization server (a trailing slash aside).
pub fn same_server(named: &str, issuer: &str) -> bool {
    trimmed(named) == trimmed(issuer)
}

/// The Bearer challenge of the endpoint's 401 to an unauthenticated request, if any.
async fn probe(client: &Client, endpoint: &Url) -> Option<BearerChallenge> {
    let ping = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
    let resp = client
        .post(endpoint.clone())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(ping)
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    let header = resp.headers().get(WWW_AUTHENTICATE)?.to_str().ok()?;
    BearerChallenge::parse(header)
}

/// The resource's metadata: from the challenge's `resource_metadata`, else the well-known URLs.
async fn resource_metadata(
    client: &Client,
    endpoint: &Url,
    challenge: Option<&BearerChallenge>,
) -> Result<ProtectedResource, AuthError> {
    let url = endpoint.as_str();
    let fetch = Fetch {
        client,
        resource: url,
        step: Step::ResourceMetadata,
    };
    let named = challenge.and_then(|c| c.resource_metadata.as_deref());
    let candidates = match named {
        Some(named) => vec![parse_url(url, named, Step::ResourceMetadata)?],
        None => protected_resource_urls(endpoint),
    };
    for candidate in candidates {
        let answer = fetch.get(&candidate).await?;
        if answer.status == 200 || named.is_some() {
            return fetch.json(&answer);
        }
    }
    Err(fetch.failed(
        "no protected-resource metadata at the well-known URLs, and the server's 401 named none"
            .into(),
    ))
}

/// The resource indicator: the metadata's `resource`, which must be the endpoint itself or a
/// prefix of it on the same origin (else the document speaks for another server).
fn check_resource(
    url: &str,
    endpoint: &Url,
    metadata: &ProtectedResource,
) -> Result<String, AuthError> {
    let refuse = |reason: String| AuthError::Refused {
        resource: url.to_string(),
        step: Step::ResourceMetadata,
        reason,
    };
    let named = Url::parse(&metadata.resource)
        .map_err(|_| refuse(format!("its resource {:?} is not a URL", metadata.resource)))?;
    let same_origin = named.origin() == endpoint.origin();
    let covers = endpoint
        .path()
        .starts_with(named.path().trim_end_matches('/'));
    if !same_origin || !covers {
        return Err(refuse(format!(
            "it speaks for {}, not for this server",
            metadata.resource
        )));
    }
    Ok(metadata.resource.clone())
}

/// The authorization server's metadata, checked: found under its issuer, PKCE S256 offered,
/// endpoints on HTTPS (or loopback).
async fn server_metadata(
    client: &Client,
    url: &str,
    issuer: &str,
) -> Result<AuthorizationServer, AuthError> {
    let fetch = Fetch {
        client,
        resource: url,
        step: Step::ServerMetadata,
    };
    let issuer_url = parse_url(url, issuer, Step::ServerMetadata)?;
    let mut found = None;
    for candidate in authorization_server_urls(&issuer_url) {
        let answer = fetch.get(&candidate).await?;
        if answer.status == 200 {
            found = Some(fetch.json::<AuthorizationServer>(&answer)?);
            break;
        }
    }
    let server = found
        .ok_or_else(|| fetch.failed(format!("no metadata at the well-known URLs of {issuer}")))?;
    check_server(&fetch, server, issuer)
}

/// An authorization server's metadata, checked: its `issuer` is the one expected, PKCE S256
/// offered, endpoints on HTTPS (or loopback).
fn check_server(
    fetch: &Fetch<'_>,
    server: AuthorizationServer,
    issuer: &str,
) -> Result<AuthorizationServer, AuthError> {
    let url = fetch.resource;
    if trimmed(&server.issuer) != trimmed(issuer) {
        return Err(fetch.refused(format!(
            "its issuer {:?} is not {issuer:?}, where it was found",
            server.issuer
        )));
    }
    if !server.supports_s256() {
        return Err(
            fetch.refused("it does not offer PKCE S256 (code_challenge_methods_supported)".into())
        );
    }
    for endpoint in [&server.authorization_endpoint, &server.token_endpoint]
        .into_iter()
        .chain([
            &server.registration_endpoint,
            &server.device_authorization_endpoint,
        ])
        .flatten()
    {
        parse_url(url, endpoint, Step::ServerMetadata)?;
    }
    if server.token_endpoint.is_none() {
        return Err(fetch.refused("it names no token_endpoint".into()));
    }
    Ok(server)
}

/// An issuer compared without its trailing slash (`https://a/` and `https://a` are one).
pub(crate) fn trimmed(issuer: &str) -> &str {
    issuer.trim_end_matches('/')
}

/// `text` as a URL we may send credentials to: HTTPS, or HTTP on a loopback host.
pub(crate) fn parse_url(resource: &str, text: &str, step: Step) -> Result<Url, AuthError> {
    let refuse = |reason: String| AuthError::Refused {
        resource: resource.to_string(),
        step,
        reason,
    };
    let url = Url::parse(text).map_err(|_| refuse(format!("{text:?} is not a URL")))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        _ => Err(refuse(format!(
            "{text} is neither HTTPS nor a loopback address"
        ))),
    }
}

/// Whether `url`'s host is this machine.
pub(crate) fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(resource: &str) -> ProtectedResource {
        serde_json::from_value(
            json!({"resource": resource, "authorization_servers": ["https://as.example"]}),
        )
        .unwrap()
    }

    #[test]
    fn metadata_for_another_server_is_refused() {
        let url = "https://mcp.example/tenant/mcp";
        let endpoint = Url::parse(url).unwrap();
        assert_eq!(check_resource(url, &endpoint, &metadata(url)).unwrap(), url);
        assert!(check_resource(url, &endpoint, &metadata("https://mcp.example/")).is_ok());
        for elsewhere in [
            "https://evil.example/tenant/mcp",
            "https://mcp.example/other",
            "http://mcp.example/tenant/mcp",
        ] {
            let refused = check_resource(url, &endpoint, &metadata(elsewhere)).unwrap_err();
            assert_eq!(refused.kind(), "auth_refused", "{elsewhere}");
            assert!(
                refused.to_string().contains(url)
                    && refused.to_string().contains("protected-resource metadata"),
                "{refused}"
            );
        }
    }

    #[test]
    fn credentials_go_to_https_or_loopback_only() {
        for ok in [
            "https://as.example/token",
            "http://127.0.0.1:9/token",
            "http://localhost:9/t",
            "http://[::1]:9/t",
        ] {
            assert!(parse_url("r", ok, Step::Token).is_ok(), "{ok}");
        }
        for bad in [
            "http://as.example/token",
            "ftp://as.example/",
            "not a url",
            "http://10.0.0.1/t",
        ] {
            assert_eq!(
                parse_url("r", bad, Step::Token).unwrap_err().kind(),
                "auth_refused",
                "{bad}"
            );
        }
    }

    /// RFC 8414 §3.3: a document at a well-known URL must name the issuer that URL was made
    /// from; any other URL names none (its issuer must be on its origin).
    #[test]
    fn a_configured_metadata_url_names_its_issuer_where_it_is_well_known() {
        let issuer = |text: &str| issuer_at(&Url::parse(text).unwrap());
        for (at, expected) in [
            (
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example",
            ),
            (
                "https://as.example/.well-known/oauth-authorization-server/tenant",
                "https://as.example/tenant",
            ),
            (
                "https://as.example/.well-known/openid-configuration/tenant",
                "https://as.example/tenant",
            ),
            (
                "https://as.example/tenant/.well-known/openid-configuration",
                "https://as.example/tenant",
            ),
            (
                "http://127.0.0.1:9/.well-known/openid-configuration",
                "http://127.0.0.1:9",
            ),
        ] {
            assert_eq!(issuer(at).as_deref(), Some(expected), "{at}");
        }
        for elsewhere in [
            "https://as.example/metadata.json",
            "https://as.example/.well-known/oauth-authorization-server-x",
            "https://as.example/.well-known/openid-configuration?x=1",
        ] {
            assert_eq!(issuer(elsewhere), None, "{elsewhere}");
        }
    }
}
