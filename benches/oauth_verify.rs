//! Token verification of `serve --http --auth oauth`, per request (`cargo bench --bench
//! oauth_verify`): the p50 and p99 of `OAuthServer::verify` with 1,000 live tokens, against
//! the file store (a stat per request, to see a revocation by another process at once) and
//! the memory store. Printed as Markdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/timing.rs"]
#[allow(dead_code)] // `median` times whole rounds; this bench needs each request's time.
mod timing;
use timing::ms;

use axum::http::{header, HeaderMap, HeaderValue};
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
}
