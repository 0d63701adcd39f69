//! The test bench: a small axum "controller" that checks its key like mcpo, records what it
//! receives and echoes bodies, and a published front on a random port in front of it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::http::Method;
use futures_util::stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

use super::super::*;
use crate::launch::{ServerExposure, ToolRule};

pub(super) const KEY: &str = "public-key";
pub(super) const UPSTREAM_KEY: &str = "internal-key";
pub(super) const ADMIN: &str = "admin-token";
pub(super) const BIG: usize = 5 * 1024 * 1024;
pub(super) const CHUNK: usize = 64 * 1024;

/// One request as the controller saw it.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) method: Method,
    pub(super) uri: String,
    pub(super) headers: HeaderMap,
}

/// The stand-in controller's state.
#[derive(Default)]
pub(super) struct Controller {
    seen: Mutex<Vec<Seen>>,
    /// Lets `/everything/big` send the rest of its body.
    pub(super) release_big: Notify,
}

impl Controller {
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A mcpo stand-in: 401 without a bearer, 403 with the wrong one; `/everything/big` streams
/// BIG bytes, pausing after the first chunk; `/everything/hang` never answers; every other
/// path echoes the body.
async fn controller(State(state): State<Arc<Controller>>, request: Request) -> Response {
    state.seen.lock().unwrap().push(Seen {
        method: request.method().clone(),
        uri: request.uri().to_string(),
        headers: request.headers().clone(),
    });
    match request.headers().get("authorization") {
        None => return (StatusCode::UNAUTHORIZED, "Not authenticated").into_response(),
        Some(v) if v != format!("Bearer {UPSTREAM_KEY}").as_str() => {
            return (StatusCode::FORBIDDEN, "Invalid API key").into_response()
        }
        Some(_) => {}
    }
    match request.uri().path() {
        "/everything/big" => return Response::new(Body::from_stream(big_body(state))),
        // A tool that never returns.
        "/everything/hang" => std::future::pending().await,
        _ => {}
    }
    Response::new(request.into_body())
}

fn big_body(
    state: Arc<Controller>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    stream::unfold(0usize, move |sent| {
        let state = Arc::clone(&state);
        async move {
            if sent >= BIG {
                return None;
            }
            if sent == CHUNK {
                state.release_big.notified().await;
            }
            Some((Ok(Bytes::from(pattern(sent, CHUNK))), sent + CHUNK))
        }
    })
}

/// Bytes whose content depends on their offset, so reordering or loss shows.
pub(super) fn pattern(offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len).map(|i| (i % 251) as u8).collect()
}

/// Tool rules from `(name, allowed)` pairs.
pub(super) fn tools(rules: &[(&str, bool)]) -> BTreeMap<String, ToolRule> {
    ToolRule::from_pairs(rules)
}

/// `everything` (echo, big, hang allowed; get-env denied) and `time` (disabled).
pub(super) fn exposure() -> Exposure {
    let mut exposure = Exposure::new();
    exposure.insert(
        "everything",
        ServerExposure {
            enabled: true,
            started: true,
            tools: tools(&[
                ("echo", true),
                ("big", true),
                ("hang", true),
                ("get-env", false),
            ]),
        },
    );
    exposure.insert(
        "time",
        ServerExposure {
            enabled: false,
            started: true,
            tools: tools(&[("get_current_time", true)]),
        },
    );
    exposure
}

/// How the front reaches the stand-in controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// Over loopback HTTP (mcpo).
    Http,
    /// Its routes called in process (the native bridge).
    InProcess,
}

/// A running controller and front, and a client.
pub(super) struct Harness {
    pub(super) url: String,
    pub(super) front: Front,
    pub(super) controller: Arc<Controller>,
    pub(super) shutdown: CancellationToken,
    pub(super) served: JoinHandle<std::io::Result<()>>,
    pub(super) http: reqwest::Client,
}

impl Harness {
    /// A controller and a published, ready front with `tweak` applied to its config.
    pub(super) async fn start(tweak: impl FnOnce(&mut FrontConfig)) -> Harness {
        Harness::start_with(Reach::Http, tweak).await
    }

    /// The same with the controller reached as `reach` says.
    pub(super) async fn start_with(reach: Reach, tweak: impl FnOnce(&mut FrontConfig)) -> Harness {
        let controller = Arc::new(Controller::default());
        let upstream = listen().await;
        let upstream_url = format!("http://{}", upstream.local_addr().unwrap());
        let app = Router::new()
            .fallback(self::controller)
            .with_state(Arc::clone(&controller));
        let local_routes = app.clone();
        match reach {
            Reach::Http => {
                tokio::spawn(async move { axum::serve(upstream, app).await });
            }
            // Nothing listens at the URL: a request that took the socket path would fail.
            Reach::InProcess => drop(upstream),
        }

        let mut config = FrontConfig {
            stack: "demo".into(),
            api_key: KEY.into(),
            upstream: upstream_url,
            upstream_key: UPSTREAM_KEY.into(),
            protect_spec: false,
            admin_token: ADMIN.into(),
            forward: ForwardLimits::default(),
        };
        tweak(&mut config);
        let front = Front::new(config).unwrap();
        if reach == Reach::InProcess {
            front.set_local_upstream(local_routes);
        }
        front.publish(json!({"openapi": "3.1.0", "v": 1}), exposure());
        front.set_upstream_ready(true);
        let listener = listen().await;
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(front.clone().serve(listener, shutdown.clone()));
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        Harness {
            url,
            front,
            controller,
            shutdown,
            served,
            http,
        }
    }

    pub(super) fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(format!("{}{path}", self.url))
    }

    pub(super) fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.post(format!("{}{path}", self.url))
    }

    /// `GET path` with the key; the status and the JSON body (Null when not JSON).
    pub(super) async fn get_keyed(&self, path: &str) -> (u16, Value) {
        answer(self.get(path).header("x-api-key", KEY)).await
    }
}

/// A listener on a free loopback port.
pub(super) async fn listen() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Sends `request`: its status and JSON body (Null when not JSON).
pub(super) async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// Asserts the documented error shape and returns the type.
pub(super) fn error_type(body: &Value) -> &str {
    let error = &body["error"];
    for field in ["type", "message", "help"] {
        assert!(error[field].is_string(), "no error.{field} in {body}");
    }
    error["type"].as_str().unwrap_or_default()
}

/// The status of a keyed GET of `path` sent verbatim.
pub(super) async fn raw_status(url: &str, path: &str) -> u16 {
    let address = url.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nhost: x\r\nx-api-key: {KEY}\r\nconnection: close\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut reply = String::new();
    socket.read_to_string(&mut reply).await.unwrap();
    reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap()
}

/// A stream of what `receiver` gets.
pub(super) fn tokio_stream<T: Send + 'static>(
    mut receiver: mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> {
    stream::poll_fn(move |cx| receiver.poll_recv(cx))
}
