//! Delegated mode's verifier against a provider served here (discovery and a JWKS that the test
//! changes), with tokens signed by the test keys of `tests/fixtures/oidc-keys/`: the refetch
//! rate limit, ES256 and PS256, a key's declared algorithm, `scp` and `azp`. The end-to-end
//! tests (`tests/cli/serve_oidc.rs`) run the certified `oidc-provider`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::routing::get;
use axum::{Json, Router};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::oidc::Delegate;

const RSA: &[u8] = include_bytes!("../../../tests/fixtures/oidc-keys/rsa-pkcs1.der");
const EC: &[u8] = include_bytes!("../../../tests/fixtures/oidc-keys/ec-pkcs8.der");
const AUDIENCE: &str = "http://127.0.0.1:1/mcp";

struct Provider {
    issuer: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    fetches: Arc<AtomicUsize>,
    _stop: tokio_util::sync::DropGuard,
}

fn jwk(key: &EncodingKey, alg: Algorithm, kid: &str, declared: bool) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
    jwk.common.key_id = Some(kid.into());
    if !declared {
        jwk.common.key_algorithm = None;
    }
    jwk
}

async fn provider(keys: Vec<Jwk>) -> Provider {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let keys = Arc::new(Mutex::new(keys));
    let fetches = Arc::new(AtomicUsize::new(0));
    let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
    let (served, counted) = (Arc::clone(&keys), Arc::clone(&fetches));
    let app = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { Json(discovery) }),
        )
        .route(
            "/jwks",
            get(move || async move {
                counted.fetch_add(1, Ordering::SeqCst);
                let keys = served.lock().unwrap().clone();
                Json(serde_json::to_value(JwkSet { keys }).unwrap())
            }),
        );
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(crate::listen::serve(listener, app, stop.clone()));
    Provider {
        issuer,
        keys,
        fetches,
        _stop: stop.drop_guard(),
    }
}

fn token(issuer: &str, key: &EncodingKey, alg: Algorithm, kid: &str, extra: Value) -> String {
    let mut claims = json!({"iss": issuer, "aud": AUDIENCE, "sub": "alice",
        "client_id": "app", "scope": "tools:all", "exp": super::now() + 300});
    claims
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

async fn delegate(provider: &Provider) -> Delegate {
    Delegate::discover(&provider.issuer)
        .await
        .unwrap()
        .for_audience(AUDIENCE.into())
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_keys_again_at_most_once_per_period() {
    let (rsa, ec) = (EncodingKey::from_rsa_der(RSA), EncodingKey::from_ec_der(EC));
    let provider = provider(vec![jwk(&rsa, Algorithm::RS256, "a", true)]).await;
    let delegate = delegate(&provider).await;
    assert_eq!(provider.fetches.load(Ordering::SeqCst), 1);
    // The provider rotates: `b` in, `a` out.
    *provider.keys.lock().unwrap() = vec![jwk(&ec, Algorithm::ES256, "b", true)];
    let rotated = token(&provider.issuer, &ec, Algorithm::ES256, "b", json!({}));
    assert!(
        delegate.verify(&rotated).await.is_ok(),
        "the new key's token is refused"
    );
    assert_eq!(provider.fetches.load(Ordering::SeqCst), 2);
    let removed = token(&provider.issuer, &rsa, Algorithm::RS256, "a", json!({}));
    let made_up = token(&provider.issuer, &rsa, Algorithm::RS256, "zz", json!({}));
    for stale in [&removed, &made_up, &made_up] {
        let refused = delegate.verify(stale).await.unwrap_err();
        assert!(refused.contains("is not among"), "{refused}");
    }
    assert_eq!(
        provider.fetches.load(Ordering::SeqCst),
        2,
        "unknown kids fetched the keys again within the period"
    );
}

#[tokio::test]
async fn ps256_and_es256_pass_and_a_key_is_held_to_its_declared_alg() {
    let (rsa, ec) = (EncodingKey::from_rsa_der(RSA), EncodingKey::from_ec_der(EC));
    let keys = vec![
        jwk(&rsa, Algorithm::RS256, "declared", true),
        jwk(&rsa, Algorithm::PS256, "open", false),
        jwk(&ec, Algorithm::ES256, "ec", true),
    ];
    let provider = provider(keys).await;
    let delegate = delegate(&provider).await;
    let issuer = &provider.issuer;
    let ps = token(issuer, &rsa, Algorithm::PS256, "open", json!({}));
    assert!(delegate.verify(&ps).await.is_ok());
    let es = token(issuer, &ec, Algorithm::ES256, "ec", json!({}));
    assert!(delegate.verify(&es).await.is_ok());
    let switched = token(issuer, &rsa, Algorithm::PS256, "declared", json!({}));
    let refused = delegate.verify(&switched).await.unwrap_err();
    assert!(refused.contains("is for RS256"), "{refused}");
    let rs384 = token(issuer, &rsa, Algorithm::RS384, "open", json!({}));
    let refused = delegate.verify(&rs384).await.unwrap_err();
    assert!(refused.contains("only RS256, PS256 and ES256"), "{refused}");
}

#[tokio::test]
async fn scp_lists_and_azp_name_the_scope_and_the_client() {
    let rsa = EncodingKey::from_rsa_der(RSA);
    let provider = provider(vec![jwk(&rsa, Algorithm::RS256, "a", true)]).await;
    let delegate = delegate(&provider).await;
    let claims = json!({"scope": null, "client_id": null, "azp": "web", "scp": ["tools:read"]});
    let signed = token(&provider.issuer, &rsa, Algorithm::RS256, "a", claims);
    let grant = delegate.verify(&signed).await.unwrap();
    assert_eq!(grant.scope, "tools:read");
    assert_eq!(grant.client_id, "web");
    assert_eq!(grant.subject.as_deref(), Some("alice"));
    assert_eq!(grant.resource, AUDIENCE);
}
