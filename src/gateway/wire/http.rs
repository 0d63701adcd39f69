//! Streamable HTTP at `/mcp`: rmcp's service behind our key check and request checks
//! (`guard`: every refusal a JSON-RPC error; `batch`: 2025-03-26 batches), served by the one
//! hardened loop (`crate::listen`: TCP_NODELAY, header timeout, connection cap), on loopback
//! unless a key is set. rmcp validates `Host` (loopback names by default) and, with the allow-list set
//! here, `Origin` (DNS-rebinding protection); it handles `Mcp-Session-Id`, SSE responses,
//! the GET stream and DELETE.
//!
//! rmcp's HTTP service takes a `ServerHandler`, so tool lists and results travel through its
//! typed structs carried under a private key, and `raw::restore` puts them back whole.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::guard::{self, Guard, MAX_BODY_BYTES};
use super::sessions::{SessionLimits, Sessions};
use super::Handler;
use crate::auth::server::OAuthServer;
use crate::gateway::Gateway;
use crate::listen::Limits;

/// Where and how the HTTP endpoint listens.
#[derive(Clone)]
pub struct HttpOptions {
    /// The address to bind (loopback by default).
    pub addr: SocketAddr,
    /// The key clients send as `Authorization: Bearer <key>`; required off loopback.
    pub api_key: Option<String>,
    /// With OAuth (`serve --http --auth oauth`): the built-in authorization server, whose
    /// routes are served beside `/mcp` and whose tokens `/mcp` requires (instead of the key).
    pub oauth: Option<Arc<OAuthServer>>,
    /// The public base URL clients reach this listener at through a tunnel
    /// (`serve --http --tunnel`): a tunnel forwards the public name as `Host`, so that host
    /// (and its origin) is accepted beside the loopback names.
    pub public_url: Option<String>,
    /// More names clients may reach this listener by (`serve --allowed-host`: a load
    /// balancer's or a DNS name), as `Host` (`NAME` or `NAME:PORT`) and in `Origin`
    /// (`http(s)://NAME`, any port unless one is given).
    pub allowed_hosts: Vec<String>,
    /// The bounds of the listener (header timeout, connections).
    pub limits: Limits,
    /// The bounds of the sessions (how many, how long idle).
    pub sessions: SessionLimits,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "oauth",
                &self.oauth.as_ref().map(|o| o.issuer().to_string()),
            )
            .field("limits", &self.limits)
            .field("sessions", &self.sessions)
            .finish()
    }
}

/// Serves `/mcp` on `listener` until `stop` fires.
pub async fn serve_http(
    gateway: Gateway,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    stop: CancellationToken,
) -> std::io::Result<()> {
    // Off loopback, clients name the address we bound in `Host` too; through a tunnel, its
    // public host.
    let mut hosts = match options.addr.ip().is_loopback() {
        true => Vec::new(),
        false => vec![options.addr.ip().to_string()],
    };
    let public = options.public_url.as_deref().and_then(public_origin);
    hosts.extend(public.map(|(_, host)| host));
    hosts.extend(options.allowed_hosts.iter().cloned());
    let ready = readiness(&gateway);
    let limits = options.limits;
    let app = crate::observe::health_routes(ready).merge(routes(gateway, options, &hosts, &stop));
    crate::listen::serve_with(listener, app, limits, stop).await
}

/// The routes of `/mcp` (and `/metrics`), behind the key or the OAuth server's tokens (whose
/// own routes are merged in), without a listener: [`serve_http`] serves them, and `up` mounts
/// them on a stack's front. `hosts`: the names clients may send in `Host` besides the
/// loopback ones (the address bound off loopback, a tunnel's public host); sessions end when
/// `stop` fires.
pub fn routes(
    gateway: Gateway,
    options: HttpOptions,
    hosts: &[String],
    stop: &CancellationToken,
) -> Router {
    let mut origins = vec![
        "http://localhost:*".to_string(),
        "http://127.0.0.1:*".into(),
        "http://[::1]:*".into(),
    ];
    let public = options.public_url.as_deref().and_then(public_origin);
    origins.extend(public.map(|(origin, _)| origin));
    origins.extend(
        options
            .allowed_hosts
            .iter()
            .flat_map(|name| origins_of(name)),
    );
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    config.cancellation_token = stop.child_token();
    if !hosts.is_empty() {
        let loopback = ["localhost", "127.0.0.1", "::1"].map(String::from);
        config = config.with_allowed_hosts(loopback.into_iter().chain(hosts.iter().cloned()));
    }
    let spliced = gateway.clone();
    let guarded = gateway.clone();
    let sessions = Arc::new(Sessions::new(options.sessions));
    Sessions::spawn_listener(&sessions);
    sessions.spawn_reaper(stop.child_token());
    config.session_store = sessions.records();
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(gateway.clone(), false)),
        Arc::clone(&sessions),
        config,
    );
    let inner = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(spliced, super::raw::restore));
    let routes = Router::new()
        .route("/metrics", get(crate::observe::metrics_page))
        .fallback(guard::check)
        .with_state(Guard {
            inner,
            sessions,
            body_read_timeout: options.limits.body_read_timeout,
            gateway: guarded,
        });
    match options.oauth {
        Some(oauth) => oauth
            .router()
            .merge(routes.layer(middleware::from_fn_with_state(
                Arc::clone(&oauth),
                crate::auth::server::protect,
            ))),
        None => {
            let key = Arc::new(options.api_key.unwrap_or_default());
            routes.layer(middleware::from_fn_with_state(key, require_key))
        }
    }
}

/// The origin (`https://host[:port]`) and the `Host` authority of a public base URL.
fn public_origin(url: &str) -> Option<(String, String)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    let authority = match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    Some((format!("{}://{authority}", parsed.scheme()), authority))
}

/// The origins of a page served at `name` (`NAME` or `NAME:PORT`), over either scheme.
fn origins_of(name: &str) -> [String; 2] {
    let port = match name.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => "",
        _ => ":*",
    };
    ["http", "https"].map(|scheme| format!("{scheme}://{name}{port}"))
}

/// `/readyz` of a gateway: ready once its catalog is loaded and its state store answers.
pub fn readiness(gateway: &Gateway) -> crate::observe::Readiness {
    let gateway = gateway.clone();
    Arc::new(move || gateway.is_ready() && crate::state::is_reachable())
}

/// With a key set, refuses requests without it (constant-time comparison).
async fn require_key(State(key): State<Arc<String>>, request: Request, next: Next) -> Response {
    if key.is_empty() || crate::auth::has_bearer(request.headers(), &key) {
        return next.run(request).await;
    }
    let body = json!({"error": {"type": "unauthorized", "message": "missing or wrong key",
        "help": "send `Authorization: Bearer <key>` (the key given to `serve --api-key` or MCP_LAUNCH_API_KEY)"}});
    let mut response = (axum::http::StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use serde_json::Value;

    use super::*;
    use crate::gateway::{GatewayOptions, Mode};

    /// A gateway with no servers on a loopback port, under `limits`.
    async fn serving(limits: Limits) -> (String, CancellationToken, tempfile::TempDir) {
        serving_with(limits, SessionLimits::default(), None).await
    }

    /// A gateway with no servers on a loopback port, under these bounds and key.
    async fn serving_with(
        limits: Limits,
        sessions: SessionLimits,
        api_key: Option<String>,
    ) -> (String, CancellationToken, tempfile::TempDir) {
        let project = tempfile::tempdir().unwrap();
        let options = GatewayOptions {
            mode: Mode::Full,
            idle: None,
            always_on: Vec::new(),
            pins: Vec::new(),
            passthrough: false,
            list_wait: Duration::from_millis(10),
            call_timeout: Duration::from_secs(5),
            connect: Default::default(),
            budget: Default::default(),
            project_dir: project.path().to_path_buf(),
            max_output: crate::outputs::Budget { max_tokens: 0 },
            login: Default::default(),
        };
        let gateway = Gateway::start(Vec::new(), options).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let options = HttpOptions {
            addr,
            api_key,
            oauth: None,
            public_url: None,
            allowed_hosts: Vec::new(),
            limits,
            sessions,
        };
        tokio::spawn(serve_http(gateway, listener, options, stop.clone()));
        (addr.to_string(), stop, project)
    }

    /// The gateway's accepted connections have TCP_NODELAY (read back from its own socket):
    /// without it every answer waited ~40 ms for the client's delayed ACK.
    #[tokio::test]
    async fn accepted_connections_have_nodelay() {
        let (addr, stop, _project) = serving(Limits::default()).await;
        let client = TcpStream::connect(&addr).await.unwrap();
        let nodelay = crate::listen::accepted_nodelay(&client).await;
        assert_eq!(
            nodelay,
            Some(true),
            "the gateway's socket has no TCP_NODELAY"
        );
        stop.cancel();
    }

    /// A client that sends its headers slowly is cut off at the header timeout.
    #[tokio::test]
    async fn slow_headers_are_cut_off() {
        let limits = Limits {
            header_read_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let (addr, stop, _project) = serving(limits).await;
        let mut slow = TcpStream::connect(&addr).await.unwrap();
        slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut rest));
        assert!(
            closed.await.is_ok(),
            "a slow client was held past the timeout"
        );
        stop.cancel();
    }

    /// A client that sends its body slowly gets a 408 at the body timeout, and is closed.
    #[tokio::test]
    async fn slow_bodies_are_answered_408_and_closed() {
        let limits = Limits {
            body_read_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let (addr, stop, _project) = serving(limits).await;
        let mut slow = TcpStream::connect(&addr).await.unwrap();
        let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                    Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{";
        slow.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut answer));
        assert!(
            closed.await.is_ok(),
            "a slow body was held past the timeout"
        );
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("-32600"), "{answer}");
        stop.cancel();
    }

    /// POSTs `body` to `/mcp` (in `session`, if given): the status, the session id the answer
    /// names and the body.
    async fn post(
        client: &reqwest::Client,
        addr: &str,
        session: Option<&str>,
        body: Value,
    ) -> (u16, Option<String>, String) {
        let mut request = client
            .post(format!("http://{addr}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (status, id, response.text().await.unwrap_or_default())
    }

    /// A new session (initialize, then initialized): its id.
    async fn open_session(client: &reqwest::Client, addr: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}});
        let (status, id, body) = post(client, addr, None, init).await;
        assert_eq!(status, 200, "{body}");
        let id = id.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(client, addr, Some(&id), initialized).await;
        id
    }

    /// `tools/list` in `session`: the status and body.
    async fn list_tools(client: &reqwest::Client, addr: &str, session: &str) -> (u16, String) {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let (status, _, body) = post(client, addr, Some(session), list).await;
        (status, body)
    }

    /// A 2025-11-25 task request is answered by the gateway in a live session only: in none,
    /// or from a foreign host, it gets rmcp's refusal (taking it does not skip rmcp's checks).
    #[tokio::test]
    async fn task_requests_are_answered_in_a_live_session_only() {
        let (addr, stop, _project) = serving(Limits::default()).await;
        let client = reqwest::Client::new();
        let session = open_session(&client, &addr).await;
        let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/list"});
        let (status, _, body) = post(&client, &addr, Some(&session), list.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""result":{"tasks":[]}"#), "{body}");
        let (status, _, body) = post(&client, &addr, Some("gone"), list.clone()).await;
        assert_eq!(status, 404, "{body}");
        let foreign = client
            .post(format!("http://{addr}/mcp"))
            .header("host", "evil.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", &session)
            .json(&list)
            .send()
            .await
            .unwrap();
        assert!(foreign.status().is_client_error(), "{}", foreign.status());
        assert!(!foreign.text().await.unwrap().contains("result"));
        stop.cancel();
    }

    fn capped(max_sessions: usize) -> SessionLimits {
        SessionLimits {
            max_sessions,
            ..SessionLimits::default()
        }
    }

    /// With room for two sessions, a third evicts the one idle longest; the others answer.
    #[tokio::test]
    async fn a_session_past_the_cap_evicts_the_oldest_idle_one() {
        let (addr, stop, _project) = serving_with(Limits::default(), capped(2), None).await;
        let client = reqwest::Client::new();
        let first = open_session(&client, &addr).await;
        assert_eq!(list_tools(&client, &addr, &first).await.0, 200);
        let second = open_session(&client, &addr).await;
        assert_eq!(list_tools(&client, &addr, &second).await.0, 200);
        let third = open_session(&client, &addr).await;
        let (status, body) = list_tools(&client, &addr, &first).await;
        assert_eq!(status, 404, "the oldest idle session was kept: {body}");
        assert!(body.contains("-32001"), "{body}");
        assert_eq!(list_tools(&client, &addr, &second).await.0, 200);
        assert_eq!(list_tools(&client, &addr, &third).await.0, 200);
        stop.cancel();
    }

    /// A session silent past the idle limit ends (rmcp's default kept one 300 s).
    #[tokio::test]
    async fn a_silent_session_ends_after_the_idle_limit() {
        let sessions = SessionLimits {
            idle: Duration::from_millis(300),
            ..SessionLimits::default()
        };
        let (addr, stop, _project) = serving_with(Limits::default(), sessions, None).await;
        let client = reqwest::Client::new();
        let session = open_session(&client, &addr).await;
        assert_eq!(list_tools(&client, &addr, &session).await.0, 200);
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let (status, body) = list_tools(&client, &addr, &session).await;
        assert_eq!(
            status, 404,
            "a silent session outlived its idle limit: {body}"
        );
        stop.cancel();
    }

    /// A flood of `initialize`s keeps the sessions at the cap, and a client in use keeps its
    /// session and gets every answer within a second.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_in_use_is_answered_under_a_flood_of_initializes() {
        let (addr, stop, _project) = serving_with(Limits::default(), capped(16), None).await;
        let client = reqwest::Client::new();
        let mine = open_session(&client, &addr).await;
        assert_eq!(list_tools(&client, &addr, &mine).await.0, 200);
        let early = open_session(&client, &addr).await;
        let flood: Vec<_> = (0..8)
            .map(|_| {
                let (client, addr) = (reqwest::Client::new(), addr.clone());
                tokio::spawn(async move {
                    for _ in 0..50 {
                        open_session(&client, &addr).await;
                    }
                })
            })
            .collect();
        for _ in 0..20 {
            let started = std::time::Instant::now();
            let (status, body) = list_tools(&client, &addr, &mine).await;
            assert_eq!(status, 200, "the client in use lost its session: {body}");
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for task in flood {
            task.await.unwrap();
        }
        let (status, _) = list_tools(&client, &addr, &early).await;
        assert_eq!(status, 404, "400 sessions were kept past a cap of 16");
        stop.cancel();
    }
}
