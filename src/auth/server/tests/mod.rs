//! The authorization server and the protected resource, driven over HTTP requests: the whole
//! flow, and each refusal the MCP authorization spec and OAuth 2.1 call for. This file holds
//! the harness (a fixture server, the client's and the browser's requests); `flow` the login,
//! tokens and their refusals; `pages` the consent page and redirect URIs.

mod flow;
mod pages;

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::*;

const REDIRECT: &str = "http://127.0.0.1:9/callback";

struct Fixture {
    app: Router,
    server: Arc<OAuthServer>,
    /// What the operator was told, in order.
    events: Arc<Mutex<Vec<ConsentEvent>>>,
}

impl Fixture {
    /// The one-time code of the last consent request.
    fn last_code(&self) -> String {
        let events = self.events.lock().unwrap();
        let asked = events.iter().rev().find_map(|e| match e {
            ConsentEvent::Asked(notice) => Some(notice.code.clone()),
            ConsentEvent::Settled { .. } => None,
        });
        asked.expect("a consent request was announced")
    }
}

fn fixture_on(base: &str, store: Arc<dyn Store>) -> Fixture {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&notices);
    let notify: Notify =
        Arc::new(move |event: &ConsentEvent| seen.lock().unwrap().push(event.clone()));
    let server = Arc::new(OAuthServer::new(base, "/mcp", store, notify));
    let protected = Router::new()
        .route("/mcp", post(|| async { "called" }))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&server),
            protect,
        ));
    Fixture {
        app: protected.merge(server.router()),
        server,
        events: notices,
    }
}

fn fixture() -> Fixture {
    fixture_on("http://127.0.0.1:7000", Arc::new(MemoryStore::default()))
}

/// The status, headers and body of `request`.
async fn send(app: &Router, request: Request<Body>) -> (StatusCode, HeaderMap, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into(),
    )
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

fn form(uri: &str, pairs: &[(&str, &str)], cookie: Option<&str>) -> Request<Body> {
    let body: String = reqwest::Url::parse_with_params("x:", pairs)
        .unwrap()
        .query()
        .unwrap_or("")
        .to_string();
    let mut request =
        Request::post(uri).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    request.body(Body::from(body)).unwrap()
}

/// `POST /register` with `metadata`: the status and the body.
async fn post_register(app: &Router, metadata: &Value) -> (StatusCode, String) {
    let request = Request::post("/register")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(metadata.to_string()))
        .unwrap();
    let (status, _, body) = send(app, request).await;
    (status, body)
}

/// Registers a public client redirecting to `REDIRECT`: its id.
async fn register(app: &Router) -> String {
    let body = json!({"client_name": "test client", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
    let (status, body) = post_register(app, &body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// An open consent page: its request id, CSRF token and cookie.
struct Page {
    request: String,
    csrf: String,
    cookie: String,
}

fn authorize_uri(client: &str, challenge: &str, redirect: &str) -> String {
    reqwest::Url::parse_with_params(
        "http://x/authorize",
        [
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", redirect),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("state", "st4te"),
            ("scope", "tools:all"),
            ("resource", "http://127.0.0.1:7000/mcp"),
        ],
    )
    .unwrap()
    .as_str()
    .trim_start_matches("http://x")
    .to_string()
}

async fn open_page(app: &Router, client: &str, challenge: &str) -> (Page, HeaderMap) {
    let (status, headers, body) = send(app, get(&authorize_uri(client, challenge, REDIRECT))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let field = |name: &str| {
        let marker = format!("name=\"{name}\" value=\"");
        let start = body.find(&marker).unwrap() + marker.len();
        body[start..].split('"').next().unwrap().to_string()
    };
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    (
        Page {
            request: field("request"),
            csrf: field("csrf"),
            cookie,
        },
        headers,
    )
}

async fn submit(app: &Router, page: &Page, code: &str) -> (StatusCode, HeaderMap, String) {
    let pairs = [
        ("request", page.request.as_str()),
        ("csrf", &page.csrf),
        ("code", code),
        ("action", "allow"),
    ];
    send(app, form("/authorize", &pairs, Some(&page.cookie))).await
}

fn query_param(location: &str, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(location).unwrap();
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Consents with the code the terminal was shown: the authorization code.
async fn consent(fx: &Fixture, client: &str, challenge: &str) -> String {
    let (page, _) = open_page(&fx.app, client, challenge).await;
    let code = fx.last_code();
    let (status, headers, body) = submit(&fx.app, &page, &code).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let told = fx.events.lock().unwrap();
    let settled = matches!(told.last(), Some(ConsentEvent::Settled { request_id }) if *request_id == page.request);
    assert!(settled, "the operator is not told it is answered: {told:?}");
    drop(told);
    let location = headers[header::LOCATION].to_str().unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(query_param(location, "state").as_deref(), Some("st4te"));
    assert_eq!(
        query_param(location, "iss").as_deref(),
        Some(fx.server.issuer())
    );
    query_param(location, "code").unwrap()
}

async fn exchange(app: &Router, client: &str, code: &str, verifier: &str) -> (StatusCode, Value) {
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
        ("client_id", client),
    ];
    let (status, _, body) = send(app, form("/token", &pairs, None)).await;
    (status, serde_json::from_str(&body).unwrap())
}

async fn refresh(app: &Router, client: &str, token: &str) -> (StatusCode, Value) {
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client),
    ];
    let (status, _, body) = send(app, form("/token", &pairs, None)).await;
    (status, serde_json::from_str(&body).unwrap())
}

/// A whole login: the client id and the token answer.
async fn login(fx: &Fixture) -> (String, Value) {
    let client = register(&fx.app).await;
    let pkce = crate::auth::pkce::Pkce::new();
    let code = consent(fx, &client, &pkce.challenge).await;
    let (status, tokens) = exchange(&fx.app, &client, &code, &pkce.verifier).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    (client, tokens)
}

async fn call(app: &Router, uri: &str, token: &str) -> (StatusCode, HeaderMap, String) {
    let request = Request::post(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    send(app, request).await
}

fn token_of(tokens: &Value, name: &str) -> String {
    tokens[name].as_str().unwrap().to_string()
}
