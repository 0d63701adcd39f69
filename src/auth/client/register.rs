//! Registration: the client to authorize as — registered by hand (the config's `oauth`), a
//! Client ID Metadata Document, else RFC 7591 dynamic registration as a native application.

use reqwest::Client;

use super::discover::{parse_url, Discovery};
use super::error::{AuthError, StaleDocument, Step};
use super::fetch::Fetch;
use super::login::{Flow, LoginRequest};
use super::token::BASIC;
use crate::auth::metadata::{ClientInformation, ClientMetadata};

/// The client to authorize as: pre-registered, a metadata document, or registered now.
pub(super) async fn register(
    http: &Client,
    request: &LoginRequest,
    discovery: &Discovery,
    scope: Option<&str>,
) -> Result<ClientInformation, AuthError> {
    let metadata = client_metadata(request, discovery, scope);
    let as_client = |client_id: String, client_secret| ClientInformation {
        client_id,
        client_secret,
        client_id_issued_at: None,
        client_secret_expires_at: None,
        metadata: metadata.clone(),
    };
    if let Some(pre) = &request.registered {
        let mut client = as_client(pre.client_id.clone(), pre.client_secret.clone());
        client.metadata.token_endpoint_auth_method =
            Some(pre.auth_method(&discovery.server).into());
        if let Some(secret) = &pre.client_secret {
            super::secrets::remember(&request.url, &pre.client_id, secret);
        }
        return Ok(client);
    }
    let server = &discovery.server;
    if let (true, Some(url)) = (
        server.client_id_metadata_document_supported,
        &request.metadata_document,
    ) {
        let redirect_uris = match request.flow {
            Flow::Device => vec![],
            _ => vec![request.redirect_uri.clone()],
        };
        return Ok(ClientInformation {
            client_id: url.clone(),
            client_secret: None,
            client_id_issued_at: None,
            client_secret_expires_at: None,
            metadata: metadata_document(url, redirect_uris),
        });
    }
    let fetch = Fetch {
        client: http,
        resource: &request.url,
        step: Step::Registration,
    };
    let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
        fetch.failed("the authorization server takes no dynamic registration; put a pre-registered `oauth: {client_id}` in the server's config entry".into())
    })?;
    let endpoint = parse_url(&request.url, endpoint, Step::Registration)?;
    let answer = fetch.post_json(&endpoint, &metadata).await?;
    let mut info: ClientInformation = fetch.json(&answer)?;
    // The method it registered, else the one we asked for (RFC 7591 §3.2.1 echoes it).
    info.metadata.token_endpoint_auth_method = info
        .metadata
        .token_endpoint_auth_method
        .or(metadata.token_endpoint_auth_method);
    let ours = &request.redirect_uri;
    if !info.metadata.redirect_uris.is_empty() && !info.metadata.redirect_uris.contains(ours) {
        return Err(fetch.refused(format!("it registered other redirect URIs than {ours}")));
    }
    Ok(info)
}

/// The name a person is shown on a consent page.
const CLIENT_NAME: &str = "mcp-launch";

/// Our Client ID Metadata Document at `url`, listing `redirect_uris`: what `mcp-launch auth
/// client-metadata` prints for the person to host there, and the client a login by it is — a
/// public native application (PKCE, no secret: a document cannot hold one) using the
/// authorization code flow or the device flow, and refreshes.
pub fn metadata_document(url: &str, redirect_uris: Vec<String>) -> ClientMetadata {
    ClientMetadata {
        client_id: Some(url.to_string()),
        client_name: Some(CLIENT_NAME.into()),
        redirect_uris,
        grant_types: vec![
            "authorization_code".into(),
            super::device::GRANT_TYPE.into(),
            "refresh_token".into(),
        ],
        response_types: vec!["code".into()],
        token_endpoint_auth_method: Some("none".into()),
        extra: native(),
        ..ClientMetadata::default()
    }
}

/// `application_type: native` (OpenID Connect Registration §2): loopback redirects.
fn native() -> serde_json::Map<String, serde_json::Value> {
    let mut extra = serde_json::Map::new();
    extra.insert("application_type".into(), "native".into());
    extra
}

/// Reads our metadata document at `url` as the authorization server will, before a person is
/// sent there: one that answers an error, names another client id, or lacks the login's
/// redirect URI is said here (re-print and re-host it) instead of on an error page in the
/// browser. One this machine cannot reach is left to the authorization server (a warning):
/// it fetches the document from where it is.
pub(super) async fn check_document(
    http: &Client,
    request: &LoginRequest,
    url: &str,
) -> Result<(), AuthError> {
    let stale = |said: String| {
        AuthError::StaleDocument(Box::new(StaleDocument {
            resource: request.url.clone(),
            url: url.to_string(),
            redirect_uri: request.redirect_uri.clone(),
            said,
        }))
    };
    let fetch = Fetch {
        client: http,
        resource: &request.url,
        step: Step::Registration,
    };
    let answer = match parse_url(&request.url, url, Step::Registration) {
        Ok(parsed) => fetch.get(&parsed).await,
        Err(e) => Err(e),
    };
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(%url, error = %e, "cannot read our client metadata document from here; the authorization server reads it itself");
            return Ok(());
        }
    };
    if !(200..300).contains(&answer.status) {
        return Err(stale(format!("it answers HTTP {}", answer.status)));
    }
    let hosted: ClientMetadata = serde_json::from_slice(&answer.body)
        .map_err(|e| stale(format!("it is not client metadata JSON ({e})")))?;
    if hosted.client_id.as_deref() != Some(url) {
        return Err(stale(format!(
            "its client_id is {:?}, not its own URL",
            hosted.client_id.unwrap_or_default()
        )));
    }
    if !hosted.redirect_uris.contains(&request.redirect_uri) {
        return Err(stale(format!(
            "it does not list the redirect URI {}",
            request.redirect_uri
        )));
    }
    Ok(())
}

/// What we register as: a native application (SEP-837: a CLI on the person's machine, its
/// redirect on loopback) using the authorization code flow, or the device flow.
fn client_metadata(
    request: &LoginRequest,
    discovery: &Discovery,
    scope: Option<&str>,
) -> ClientMetadata {
    let by_device = request.flow == Flow::Device;
    let (redirect_uris, first_grant, response_types) = match by_device {
        // RFC 8628 §3.4: no redirect and no authorization endpoint.
        true => (vec![], super::device::GRANT_TYPE, vec![]),
        false => (
            vec![request.redirect_uri.clone()],
            "authorization_code",
            vec!["code".into()],
        ),
    };
    ClientMetadata {
        client_name: Some(CLIENT_NAME.into()),
        redirect_uris,
        grant_types: vec![first_grant.into(), "refresh_token".into()],
        response_types,
        token_endpoint_auth_method: Some(auth_method(&discovery.server).into()),
        scope: scope.map(String::from),
        extra: native(),
        ..ClientMetadata::default()
    }
}

/// A public client (`none`, PKCE only) where the server takes one, else `client_secret_post`
/// where it takes that, else `client_secret_basic` where only that is offered.
fn auth_method(server: &crate::auth::metadata::AuthorizationServer) -> &'static str {
    let offered = |method: &str| {
        server
            .token_endpoint_auth_methods_supported
            .as_ref()
            .is_none_or(|methods| methods.iter().any(|m| m == method))
    };
    match (
        offered("none"),
        offered("client_secret_post"),
        offered(BASIC),
    ) {
        (true, _, _) => "none",
        (false, false, true) => BASIC,
        _ => "client_secret_post",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn we_register_as_a_native_application() {
        let p = super::super::login::tests::started(
            "https://mcp.example/mcp",
            json!({"issuer": "https://as.example"}),
            Flow::Redirect,
        );
        let sent = serde_json::to_value(client_metadata(&p.request, &p.discovery, None)).unwrap();
        assert_eq!(sent["application_type"], "native", "{sent}");
        assert_eq!(
            sent["redirect_uris"],
            json!([p.request.redirect_uri]),
            "{sent}"
        );
    }

    /// What `auth client-metadata` prints: the client id its own URL, the redirect URIs given,
    /// a public native client of the code and device flows, no secret.
    #[test]
    fn our_metadata_document_is_a_public_native_client_named_by_its_url() {
        let url = "https://me.example/mcp-launch.json";
        let redirect = "http://127.0.0.1:33001/callback".to_string();
        let document = serde_json::to_value(metadata_document(url, vec![redirect])).unwrap();
        assert_eq!(
            document,
            json!({
                "client_id": url,
                "client_name": "mcp-launch",
                "redirect_uris": ["http://127.0.0.1:33001/callback"],
                "grant_types": ["authorization_code", super::super::device::GRANT_TYPE, "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            })
        );
    }

    /// The spec's order: a client registered by hand, else the document where the server
    /// takes them, else dynamic registration (here none is offered: refused, naming it).
    #[tokio::test]
    async fn the_document_is_the_client_only_where_the_server_takes_them() {
        let url = "https://me.example/mcp-launch.json";
        let at = |supported: bool| {
            let mut p = super::super::login::tests::started(
                "https://mcp.example/mcp",
                json!({"issuer": "https://as.example",
                    "client_id_metadata_document_supported": supported}),
                Flow::Redirect,
            );
            p.request.metadata_document = Some(url.into());
            p
        };
        let http = crate::auth::client::http_client();
        let p = at(true);
        let client = register(&http, &p.request, &p.discovery, None)
            .await
            .unwrap();
        assert_eq!(client.client_id, url);
        assert_eq!(
            client.metadata.token_endpoint_auth_method.as_deref(),
            Some("none")
        );
        assert_eq!(client.metadata.redirect_uris, [p.request.redirect_uri]);

        let p = at(false);
        let refused = register(&http, &p.request, &p.discovery, None).await;
        let refused = refused.expect_err("no dynamic registration offered");
        assert!(
            refused.to_string().contains("no dynamic registration"),
            "{refused}"
        );

        let mut p = at(true);
        p.request.registered = Some(super::super::PreRegistered {
            client_id: "by-hand".into(),
            ..Default::default()
        });
        let client = register(&http, &p.request, &p.discovery, None)
            .await
            .unwrap();
        assert_eq!(client.client_id, "by-hand");
    }

    #[test]
    fn the_token_endpoint_auth_method_is_one_the_server_offers() {
        let offering = |methods: Value| {
            let server = serde_json::from_value(json!({
                "issuer": "https://as.example",
                "token_endpoint_auth_methods_supported": methods,
            }))
            .unwrap();
            auth_method(&server)
        };
        assert_eq!(offering(json!(["client_secret_basic"])), BASIC);
        assert_eq!(
            offering(json!(["client_secret_basic", "client_secret_post"])),
            "client_secret_post"
        );
        assert_eq!(offering(json!(["none", "client_secret_basic"])), "none");
    }
}
