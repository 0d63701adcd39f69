//! The login proxy's refusals that need a clock or a record the end-to-end test cannot reach
//! (tests/cli/serve_oidc_proxy.rs runs the whole login against the certified
//! `oidc-provider`): an expired login, the provider's words passed on only as OAuth allows,
//! and the built-in server refusing to renew a provider's refresh token.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::json;
use tower::ServiceExt;

use super::oidc::Delegate;
use super::proxy::{self, Login};
use super::store::{hash, Client, Grant, Refresh};
use super::*;

const RSA: &[u8] = include_bytes!("../../../tests/fixtures/oidc-keys/rsa-pkcs1.der");
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const BASE: &str = "http://127.0.0.1:7000";

/// A provider's discovery and keys served here (its endpoints are never reached): the
/// delegate, and the guard that stops it.
async fn delegate() -> (Delegate, tokio_util::sync::DropGuard) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
        "authorization_endpoint": format!("{issuer}/auth"), "token_endpoint": format!("{issuer}/token")});
    let mut jwk =
        Jwk::from_encoding_key(&EncodingKey::from_rsa_der(RSA), Algorithm::RS256).unwrap();
    jwk.common.key_id = Some("a".into());
    let keys = serde_json::to_value(JwkSet { keys: vec![jwk] }).unwrap();
    let app = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { Json(discovery) }),
        )
        .route("/jwks", get(move || async move { Json(keys) }));
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(crate::listen::serve(listener, app, stop.clone()));
    let delegate = Delegate::discover(&issuer).await.unwrap();
    (
        delegate.for_audience(format!("{BASE}/mcp")),
        stop.drop_guard(),
    )
}

fn client() -> Client {
    Client {
        name: None,
        redirect_uris: vec![REDIRECT.into()],
        secret_hash: None,
        registered_at: 1,
        granted_scope: None,
        last_used: None,
    }
}

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Option<String>, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let location =
        (response.headers().get(header::LOCATION)).map(|v| v.to_str().unwrap().to_string());
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, location, String::from_utf8_lossy(&bytes).into())
}

fn get_uri(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

/// A login whose ten minutes ran out is refused at the callback with a page (we no longer
/// know whose it was), as is a state used once already.
#[tokio::test]
async fn an_expired_or_used_login_state_is_refused_at_the_callback() {
    let (delegate, _stop) = delegate().await;
    let login = Login::new(&delegate, "gw".into(), Some("s".into())).unwrap();
    let store = Arc::new(MemoryStore::default());
    store
        .update(&mut |s| {
            s.clients.insert("c".into(), client());
        })
        .unwrap();
    let server = OAuthServer::delegated(BASE, "/mcp", delegate).with_login(login, store);
    let server = Arc::new(server);
    let app = server.router();
    let authorize = format!(
        "/authorize?response_type=code&client_id=c&redirect_uri={REDIRECT}&state=mine\
         &code_challenge=IGhphATrFKcFKTPhu8JzpChVWFFrGeAB33lJrh5TJpM&code_challenge_method=S256"
    );
    let (status, location, _) = send(&app, get_uri(&authorize)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let location = reqwest::Url::parse(&location.unwrap()).unwrap();
    let sent: std::collections::HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(
        sent["redirect_uri"],
        format!("{BASE}{}", proxy::CALLBACK_PATH)
    );
    assert_eq!(sent["client_id"], "gw");
    assert_eq!(sent["code_challenge_method"], "S256");
    assert_ne!(
        sent["state"], "mine",
        "the client's state went to the provider"
    );
    let callback = |state: &str| get_uri(&format!("{}?code=x&state={state}", proxy::CALLBACK_PATH));
    let (status, location, _) = send(&app, callback(&sent["state"])).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "the fresh login");
    assert!(location.unwrap().starts_with(&format!("{REDIRECT}?code=")));
    let (status, location, page) = send(&app, callback(&sent["state"])).await;
    assert_eq!(
        (status, location),
        (StatusCode::BAD_REQUEST, None),
        "{page}"
    );

    let (_, location, _) = send(&app, get_uri(&authorize)).await;
    let location = reqwest::Url::parse(&location.unwrap()).unwrap();
    let state = location
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1;
    proxy::tests::expire_held(&server);
    let (status, location, page) = send(&app, callback(&state)).await;
    assert_eq!(
        (status, location),
        (StatusCode::BAD_REQUEST, None),
        "{page}"
    );
    assert!(page.contains("unknown or expired"), "{page}");
}

/// The provider's error code and description are passed on only in the characters OAuth
/// allows: no markup, no quotes, a word for a code.
#[test]
fn the_providers_words_are_passed_on_as_oauth_allows() {
    assert_eq!(proxy::tests::error_code("access_denied"), "access_denied");
    assert_eq!(proxy::tests::error_code("<b>x</b>"), "server_error");
    assert_eq!(proxy::tests::error_code(""), "server_error");
    let said = proxy::tests::printable("no \"way\" \\ é\n<i>");
    assert_eq!(said, "no way  <i>");
    assert_eq!(proxy::tests::printable(&"x".repeat(500)).len(), 200);
}

/// A provider's refresh token recorded by the proxy is never renewed by the built-in server
/// (the same state file serves both modes): it would mint our own tokens without consent.
#[tokio::test]
async fn the_built_in_server_does_not_renew_a_providers_refresh_token() {
    let store = Arc::new(MemoryStore::default());
    let refresh = "provider-refresh-token";
    store
        .update(&mut |s| {
            s.clients.insert("c".into(), client());
            let grant = Grant {
                client_id: "c".into(),
                subject: Some("tester".into()),
                scope: SCOPE_ALL.into(),
                resource: format!("{BASE}/mcp"),
                expires_at: u64::MAX,
                family: format!("{}x", proxy::FAMILY),
            };
            let record = Refresh { grant, used: false };
            s.refresh.insert(hash(refresh), record);
        })
        .unwrap();
    let notify: Notify = Arc::new(|_: &ConsentEvent| {});
    let app = Arc::new(OAuthServer::new(BASE, "/mcp", store, notify)).router();
    let body = format!("grant_type=refresh_token&client_id=c&refresh_token={refresh}");
    let request = Request::post("/token")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    let (status, _, answer) = send(&app, request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer.contains("invalid_grant"), "{answer}");
}
