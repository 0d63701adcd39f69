//! Token verification per request (`cargo bench --bench oauth_verify`), both modes:
//! - built-in (`serve --http --auth oauth`): the p50 and p99 of `OAuthServer::verify` with
//!   1,000 live tokens, against the file store (a stat per request, to see a revocation by
//!   another process at once) and the memory store;
//! - delegated (`--auth oidc:ISSUER`): `Delegate::verify` of a provider's signed JWT (ES256
//!   and RS256; keys made by `openssl`, served with the discovery document on loopback by
//!   this bench, fetched once as the gateway does: the cost per request is the signature and
//!   the claims).
//!
//! Printed as Markdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/timing.rs"]
#[allow(dead_code)] // `median` times whole rounds; this bench needs each request's time.
mod timing;
use timing::ms;

use axum::http::{header, HeaderMap, HeaderValue};
use axum::routing::get;
use axum::Json;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey};
use mcp_launch::auth::server::oidc::Delegate;
use mcp_launch::auth::server::store::{hash, Grant};
use mcp_launch::auth::server::{now, FileStore, MemoryStore, OAuthServer, Store};

const TOKENS: usize = 1_000;
const REQUESTS: usize = 20_000;

/// The server over `store` holding [`TOKENS`] tokens, and the headers of a request with one.
fn server_with(store: Arc<dyn Store>) -> (OAuthServer, HeaderMap) {
    let server = OAuthServer::new(
        "http://127.0.0.1:1",
        "/mcp",
        Arc::clone(&store),
        Arc::new(|_| {}),
    );
    let tokens: Vec<String> = (0..TOKENS)
        .map(|_| mcp_launch::auth::generate_key())
        .collect();
    store
        .update(&mut |state| {
            for token in &tokens {
                let grant = Grant {
                    client_id: "c".into(),
                    subject: None,
                    scope: "tools:all".into(),
                    resource: "http://127.0.0.1:1/mcp".into(),
                    expires_at: now() + 600,
                    family: "f".into(),
                };
                state.access.insert(hash(token), grant);
            }
        })
        .expect("store the tokens");
    let mut headers = HeaderMap::new();
    let bearer = format!("Bearer {}", tokens[TOKENS / 2]);
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&bearer).unwrap(),
    );
    (server, headers)
}

/// p50 and p99 of one verification.
fn measure(server: &OAuthServer, headers: &HeaderMap) -> (Duration, Duration) {
    let mut all: Vec<Duration> = (0..REQUESTS)
        .map(|_| {
            let started = Instant::now();
            server.verify(headers, None).expect("the token verifies");
            started.elapsed()
        })
        .collect();
    all.sort();
    (all[REQUESTS / 2], all[REQUESTS * 99 / 100])
}

/// p50 and p99 of one delegated verification of a JWT signed with `alg`.
async fn delegated(alg: Algorithm) -> (Duration, Duration) {
    let key = signing_key(alg);
    let mut jwk = Jwk::from_encoding_key(&key, alg).expect("a JWK of the key");
    jwk.common.key_id = Some("k1".into());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let issuer = format!("http://{}", listener.local_addr().expect("address"));
    let discovery = serde_json::json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
    });
    let jwks = serde_json::json!({ "keys": [jwk] });
    let app = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { Json(discovery) }),
        )
        .route("/jwks", get(move || async move { Json(jwks) }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let audience = "http://127.0.0.1:1/mcp";
    let delegate = Delegate::discover(&issuer)
        .await
        .expect("the bench's provider is discovered")
        .for_audience(audience.into());
    let claims = serde_json::json!({
        "iss": issuer, "aud": audience, "sub": "user-1", "client_id": "c",
        "scope": "openid tools:all", "exp": now() + 600,
    });
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = Some("k1".into());
    let token = jsonwebtoken::encode(&header, &claims, &key).expect("sign");
    delegate.verify(&token).await.expect("the JWT verifies");
    let mut all = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let started = Instant::now();
        delegate.verify(&token).await.expect("the JWT verifies");
        all.push(started.elapsed());
    }
    all.sort();
    (all[REQUESTS / 2], all[REQUESTS * 99 / 100])
}

/// A fresh private key for `alg`, made by `openssl` (ES256: P-256 in PKCS#8; RS256: 2,048-bit
/// RSA in PKCS#1), DER.
fn signing_key(alg: Algorithm) -> EncodingKey {
    let script = match alg {
        Algorithm::ES256 => {
            "openssl ecparam -genkey -noout -name prime256v1 | openssl pkcs8 -topk8 -nocrypt -outform DER"
        }
        _ => "openssl genrsa 2048 2>/dev/null | openssl rsa -traditional -outform DER",
    };
    let out = std::process::Command::new("sh")
        .args(["-c", script])
        .output()
        .expect("a shell");
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "openssl made no key (it makes the bench's keys): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    match alg {
        Algorithm::ES256 => EncodingKey::from_ec_der(&out.stdout),
        _ => EncodingKey::from_rsa_der(&out.stdout),
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file: Arc<dyn Store> = Arc::new(FileStore::new(dir.path().join("oauth-server.json")));
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::default());
    println!("| store | p50 (ms) | p99 (ms) |\n|---|---|---|");
    for (name, store) in [("file (0600 JSON)", file), ("memory", memory)] {
        let (server, headers) = server_with(store);
        let (p50, p99) = measure(&server, &headers);
        println!("| {name} | {:.4} | {:.4} |", ms(p50), ms(p99));
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    println!("\n| delegated (oidc:ISSUER), JWT | p50 (ms) | p99 (ms) |\n|---|---|---|");
    for alg in [Algorithm::ES256, Algorithm::RS256] {
        let (p50, p99) = runtime.block_on(delegated(alg));
        println!("| {alg:?} | {:.4} | {:.4} |", ms(p50), ms(p99));
    }
}
