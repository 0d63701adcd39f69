//! The authorization server and the protected resource, driven over HTTP requests: the whole
//! flow, and each refusal the MCP authorization spec and OAuth 2.1 call for.

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

/// Registers a public client redirecting to `REDIRECT`: its id.
async fn register(app: &Router) -> String {
    let body = json!({"client_name": "test client", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
    let request = Request::post("/register")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, body) = send(app, request).await;
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

#[tokio::test]
async fn a_client_discovers_registers_consents_calls_and_refreshes() {
    let fx = fixture();
    let (status, headers, _) =
        send(&fx.app, Request::post("/mcp").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let challenge = headers[header::WWW_AUTHENTICATE].to_str().unwrap();
    let parsed = crate::auth::challenge::BearerChallenge::parse(challenge).unwrap();
    let metadata_url = parsed.resource_metadata.unwrap();
    assert_eq!(
        metadata_url,
        "http://127.0.0.1:7000/.well-known/oauth-protected-resource/mcp"
    );
    let (_, _, body) = send(&fx.app, get("/.well-known/oauth-protected-resource/mcp")).await;
    let resource: crate::auth::metadata::ProtectedResource = serde_json::from_str(&body).unwrap();
    assert_eq!(resource.resource, "http://127.0.0.1:7000/mcp");
    let (_, _, body) = send(&fx.app, get("/.well-known/oauth-authorization-server")).await;
    let server: crate::auth::metadata::AuthorizationServer = serde_json::from_str(&body).unwrap();
    assert!(server.supports_s256() && server.authorization_response_iss_parameter_supported);
    let (client, tokens) = login(&fx).await;
    assert_eq!(
        call(&fx.app, "/mcp", &token_of(&tokens, "access_token"))
            .await
            .0,
        StatusCode::OK
    );
    let (status, renewed) = refresh(&fx.app, &client, &token_of(&tokens, "refresh_token")).await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    assert_ne!(
        renewed["refresh_token"], tokens["refresh_token"],
        "the refresh token was not rotated"
    );
    assert_eq!(
        call(&fx.app, "/mcp", &token_of(&renewed, "access_token"))
            .await
            .0,
        StatusCode::OK
    );
    let state = fx.server.store.load().unwrap();
    assert!(state.clients[&client].last_used.is_some());
    let file = serde_json::to_string(&state).unwrap();
    assert!(
        !file.contains(&token_of(&renewed, "access_token")),
        "a token is stored in the clear"
    );
}

#[tokio::test]
async fn a_replayed_code_is_refused() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let pkce = crate::auth::pkce::Pkce::new();
    let code = consent(&fx, &client, &pkce.challenge).await;
    assert_eq!(
        exchange(&fx.app, &client, &code, &pkce.verifier).await.0,
        StatusCode::OK
    );
    let (status, answer) = exchange(&fx.app, &client, &code, &pkce.verifier).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn a_pkce_mismatch_is_refused() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let pkce = crate::auth::pkce::Pkce::new();
    let code = consent(&fx, &client, &pkce.challenge).await;
    let other = crate::auth::pkce::Pkce::new();
    let (status, answer) = exchange(&fx.app, &client, &code, &other.verifier).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
}

/// An unregistered redirect URI gets an error page, never a redirect (an open redirect).
#[tokio::test]
async fn an_unregistered_redirect_uri_gets_a_page_not_a_redirect() {
    let fx = fixture();
    let client = register(&fx.app).await;
    for redirect in [
        "https://evil.example/cb",
        "http://127.0.0.1:9/callback/../x",
        "http://127.0.0.1:9/callbackx",
    ] {
        let uri = authorize_uri(&client, "abc", redirect);
        let (status, headers, _) = send(&fx.app, get(&uri)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{redirect}");
        assert!(
            headers.get(header::LOCATION).is_none(),
            "redirected to {redirect}"
        );
    }
    let body = json!({"redirect_uris": ["http://evil.example/cb"]});
    let request = Request::post("/register")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, body) = send(&fx.app, request).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "plain http off loopback was registered: {body}"
    );
}

#[tokio::test]
async fn a_token_in_the_query_string_is_refused() {
    let fx = fixture();
    let (_, tokens) = login(&fx).await;
    let access = token_of(&tokens, "access_token");
    let (status, _, _) = call(&fx.app, &format!("/mcp?access_token={access}"), &access).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// Two servers share a store: a token of one is refused by the other (RFC 8707 audience).
#[tokio::test]
async fn a_token_for_another_resource_is_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::default());
    let ours = fixture_on("http://127.0.0.1:7000", Arc::clone(&store));
    let theirs = fixture_on("http://127.0.0.1:7001", store);
    let (_, tokens) = login(&ours).await;
    let access = token_of(&tokens, "access_token");
    let (status, headers, _) = call(&theirs.app, "/mcp", &access).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .contains("invalid_token"));
}

#[tokio::test]
async fn expired_and_revoked_tokens_are_refused_at_once() {
    let fx = fixture();
    let (client, tokens) = login(&fx).await;
    let access = token_of(&tokens, "access_token");
    fx.server
        .store
        .update(&mut |s| s.access.values_mut().for_each(|g| g.expires_at = now() - 1))
        .unwrap();
    assert_eq!(
        call(&fx.app, "/mcp", &access).await.0,
        StatusCode::UNAUTHORIZED,
        "an expired token passed"
    );
    let (_, tokens) = login(&fx).await;
    let access = token_of(&tokens, "access_token");
    assert_eq!(call(&fx.app, "/mcp", &access).await.0, StatusCode::OK);
    let second = fx
        .server
        .store
        .load()
        .unwrap()
        .access
        .values()
        .last()
        .unwrap()
        .client_id
        .clone();
    assert!(admin::revoke(fx.server.store.as_ref(), &second).unwrap());
    assert_eq!(
        call(&fx.app, "/mcp", &access).await.0,
        StatusCode::UNAUTHORIZED,
        "a revoked client's token passed"
    );
    let (status, _) = refresh(&fx.app, &client, &token_of(&tokens, "refresh_token")).await;
    assert_ne!(status, StatusCode::OK);
}

/// A refresh token used twice: the second use is refused and ends the whole login.
#[tokio::test]
async fn a_reused_refresh_token_revokes_its_family() {
    let fx = fixture();
    let (client, tokens) = login(&fx).await;
    let first = token_of(&tokens, "refresh_token");
    let (_, renewed) = refresh(&fx.app, &client, &first).await;
    let (status, _) = refresh(&fx.app, &client, &first).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        call(&fx.app, "/mcp", &token_of(&renewed, "access_token"))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = refresh(&fx.app, &client, &token_of(&renewed, "refresh_token")).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the family's newest refresh token still works"
    );
}

#[tokio::test]
async fn the_consent_page_cannot_be_framed_or_cached() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (_, headers) = open_page(&fx.app, &client, "abc").await;
    assert!(headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
}

/// A form without the page's CSRF token (in the form and its cookie) is refused, even with
/// the right one-time code.
#[tokio::test]
async fn a_consent_form_without_its_csrf_token_is_refused() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    let code = fx.last_code();
    let forged = Page {
        csrf: "x".repeat(32),
        ..Page {
            request: page.request.clone(),
            csrf: String::new(),
            cookie: page.cookie.clone(),
        }
    };
    let (status, headers, _) = submit(&fx.app, &forged, &code).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(headers.get(header::LOCATION).is_none());
    let no_cookie = Page {
        cookie: String::new(),
        request: page.request.clone(),
        csrf: page.csrf.clone(),
    };
    assert_eq!(
        submit(&fx.app, &no_cookie, &code).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(submit(&fx.app, &page, &code).await.0, StatusCode::SEE_OTHER);
}

/// Guessing the one-time code: five wrong tries close the request; the right code after that
/// gets nothing.
#[tokio::test]
async fn the_one_time_code_cannot_be_brute_forced() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    let code = fx.last_code();
    for _ in 0..consent::MAX_TRIES {
        assert_ne!(
            submit(&fx.app, &page, "WRONG000").await.0,
            StatusCode::SEE_OTHER
        );
    }
    let (status, headers, _) = submit(&fx.app, &page, &code).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the request survived {} wrong codes",
        consent::MAX_TRIES
    );
    assert!(headers.get(header::LOCATION).is_none());
}

/// The operator's `auth approve` stands in for the code.
#[tokio::test]
async fn the_operator_approves_a_pending_client() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    assert_eq!(
        submit(&fx.app, &page, "").await.0,
        StatusCode::OK,
        "allowed without consent"
    );
    let state = admin::load(fx.server.store.as_ref()).unwrap();
    let (id, pending) = state.pending.iter().next().unwrap();
    assert_eq!(pending.client_id, client);
    assert!(admin::approve(fx.server.store.as_ref(), id).unwrap());
    assert_eq!(submit(&fx.app, &page, "").await.0, StatusCode::SEE_OTHER);
}

/// Open-redirect attempts on /authorize: a redirect URI that is not the registered one byte
/// for byte — whatever trick makes it look alike — gets an error page, never a `Location`;
/// nor does an unknown client, a second `redirect_uri`, or one slipped into the consent form.
#[tokio::test]
async fn open_redirect_attempts_get_a_page_never_a_redirect() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let lookalikes = [
        "http://127.0.0.1:9@evil.example/callback",
        "//evil.example/callback",
        "http://127.0.0.1:9/callback?next=https://evil.example",
        "http://127.0.0.1:9/callback#@evil.example",
        "HTTP://127.0.0.1:9/callback",
        "http://127.0.0.1:9/callback/",
        "http://127.0.0.1:9/%63allback",
        "http://127.0.0.1:09/callback",
        "http://localhost:9/callback",
        "http://127.0.0.1:9/callback%0d%0aLocation:%20https://evil.example",
        "javascript:alert(1)//http://127.0.0.1:9/callback",
        "",
    ];
    let unknown = authorize_uri("not-a-client", "abc", "https://evil.example/cb");
    let doubled = format!(
        "{}&redirect_uri=https%3A%2F%2Fevil.example%2Fcb",
        authorize_uri(&client, "abc", REDIRECT)
    );
    let attempts = lookalikes
        .iter()
        .map(|r| authorize_uri(&client, "abc", r))
        .chain([unknown, doubled]);
    for uri in attempts {
        let (status, headers, _) = send(&fx.app, get(&uri)).await;
        assert!(status.is_client_error(), "{status} for {uri}");
        assert!(headers.get(header::LOCATION).is_none(), "redirected: {uri}");
    }
    // The consent form names no redirect: the one checked when the page opened is used.
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    let code = fx.last_code();
    let pairs = [
        ("request", page.request.as_str()),
        ("csrf", &page.csrf),
        ("code", &code),
        ("action", "allow"),
        ("redirect_uri", "https://evil.example/cb"),
    ];
    let (status, headers, _) = send(&fx.app, form("/authorize", &pairs, Some(&page.cookie))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let location = headers[header::LOCATION].to_str().unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
}

/// Schemes a browser would run or that carry their own content are never registered.
#[tokio::test]
async fn script_and_data_redirect_uris_are_not_registered() {
    let fx = fixture();
    for redirect in [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "http://127.0.0.1:9@evil.example/callback",
        "http://localhost.evil.example/callback",
        "https://tools.example/cb#fragment",
    ] {
        let body = json!({"redirect_uris": [redirect], "token_endpoint_auth_method": "none"});
        let request = Request::post("/register")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, _, body) = send(&fx.app, request).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{redirect} registered: {body}"
        );
    }
}

/// A login made while the server answered at its loopback address holds tokens for that
/// resource; once the same state serves the tunnel's public URL, its refresh token mints
/// nothing there (it would renew a grant for another audience) and stays usable where it
/// belongs.
#[tokio::test]
async fn a_refresh_token_for_another_resource_is_refused_and_kept() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::default());
    let local = fixture_on("http://127.0.0.1:7000", Arc::clone(&store));
    let public = fixture_on("https://quiet-orbit.trycloudflare.com", store);
    let (client, tokens) = login(&local).await;
    let old = token_of(&tokens, "refresh_token");
    let (status, answer) = refresh(&public.app, &client, &old).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"], "invalid_grant", "{answer}");
    let access = token_of(&tokens, "access_token");
    let (status, _, _) = call(&public.app, "/mcp", &access).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, answer) = refresh(&local.app, &client, &old).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the refusal used the token up: {answer}"
    );
}
