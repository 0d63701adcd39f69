//! The front proxy of a stack: the one port clients (ChatGPT Actions, scripts) talk to.
//!
//! It holds the stack's public API key, enforces the [`Exposure`] (disabled servers, denied
//! and unknown tools never reach the controller), serves the merged `/openapi.json` and
//! `/healthz`, and streams everything else to the controller (mcpo) under a separate
//! internal key, so the public key can be rotated or leaked without exposing the controller
//! and the controller's key never leaves the machine.
//!
//! | Route | Auth | Answer |
//! |---|---|---|
//! | `GET /healthz` | none | 200 / 503 by [`Front::set_upstream_ready`] |
//! | `GET /readyz` | none | 200 once the controller answers and the spec is published, else 503 |
//! | `GET /metrics` | the key | the process's metrics (`crate::observe`: the native bridge's upstreams) |
//! | `GET /openapi.json` | none, or the key with `protect_spec` | the published spec, 503 before |
//! | `POST /_mcp-launch/reload` | `X-MCP-Launch-Admin` | the [`ReloadHandler`]'s JSON |
//! | `POST /_mcp-launch/upstream` | `X-MCP-Launch-Admin` | a native bridge's server stopped or restarted (`upstream`) |
//! | `/mcp` and its OAuth routes, once mounted | the side's own | the [`McpSide`] (see `mcp`) |
//! | anything else | the key | gated by the exposure, then forwarded (counted in `/metrics`: `mcp_launch_rest_requests_total`) |

mod counted;
mod error;
mod mcp;
pub(crate) mod path;
mod proxy;
mod spec;
#[cfg(test)]
mod tests;
mod upstream;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use error::FrontError;
pub use mcp::{McpMount, McpSide};
pub use proxy::{
    ForwardLimits, DEFAULT_FORWARD_TIMEOUT, FORWARD_TIMEOUT, FORWARD_TIMEOUT_ENV, IN_FLIGHT,
    IN_FLIGHT_ENV,
};
pub use upstream::UPSTREAM_PATH;

use super::Exposure;
use path::{Pass, RequestPath};

/// The admin route `mcp-launch openapi` calls to rebuild and republish the spec.
pub const RELOAD_PATH: &str = "/_mcp-launch/reload";

/// What a front needs to run. Its `Debug` hides the three secrets.
#[derive(Clone)]
pub struct FrontConfig {
    /// The stack's name (in health answers, errors and logs).
    pub stack: String,
    /// The public API key clients send.
    pub api_key: String,
    /// The controller's base URL, e.g. `http://127.0.0.1:8800`.
    pub upstream: String,
    /// The controller's own key; only the front knows it.
    pub upstream_key: String,
    /// Whether `/openapi.json` needs the API key too (by default it is open, as ChatGPT
    /// Actions imports it without credentials).
    pub protect_spec: bool,
    /// The token of the admin route (never the API key: clients must not trigger reloads).
    pub admin_token: String,
    /// Bounds on forwarded requests: their number at once and (to mcpo) their duration.
    pub forward: ForwardLimits,
}

impl std::fmt::Debug for FrontConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontConfig")
            .field("stack", &self.stack)
            .field("api_key", &"<redacted>")
            .field("upstream", &self.upstream)
            .field("upstream_key", &"<redacted>")
            .field("protect_spec", &self.protect_spec)
            .field("admin_token", &"<redacted>")
            .field("forward", &self.forward)
            .finish()
    }
}

/// Why a front could not be built from its config.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `upstream` is not an `http://` URL.
    #[error("the controller URL {url:?} is not an http:// URL")]
    BadUpstream {
        /// The configured URL.
        url: String,
    },
    /// `upstream_key` cannot travel in a header.
    #[error("the controller key contains characters not allowed in an HTTP header")]
    BadUpstreamKey,
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// A request to rebuild the published spec (the body of `POST /_mcp-launch/reload`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReloadRequest {
    /// The public URL to put in the spec's `servers` (e.g. a new tunnel's); none keeps it.
    #[serde(default)]
    pub public_url: Option<String>,
}

/// Rebuilds and republishes the spec (typically via [`Front::publish`]); answers the JSON
/// the admin route returns, or a message for its 500.
pub type ReloadHandler =
    Arc<dyn Fn(ReloadRequest) -> BoxFuture<'static, Result<Value, ReloadError>> + Send + Sync>;

/// Why a reload failed: the handler's own error (its message and help reach the admin route's
/// answer), typed by the room that raised it.
pub type ReloadError = Arc<dyn crate::error::Actionable + Send + Sync>;

/// The front proxy of one stack. Cheap to clone: clones share the published spec, the
/// readiness flag and the connection pool.
#[derive(Clone)]
pub struct Front {
    inner: Arc<Inner>,
}

struct Inner {
    config: FrontConfig,
    /// `upstream` without a trailing slash.
    upstream_base: String,
    /// `Bearer <upstream_key>`, marked sensitive so it is never printed.
    upstream_authorization: HeaderValue,
    client: reqwest::Client,
    /// One permit per request forwarded at once ([`ForwardLimits::in_flight`]).
    slots: Arc<tokio::sync::Semaphore>,
    published: RwLock<Option<Arc<Published>>>,
    /// The controller's routes when it runs in this process (the native bridge): requests go
    /// to them directly instead of over loopback HTTP.
    local_upstream: RwLock<Option<Router>>,
    upstream_ready: AtomicBool,
    reload: RwLock<Option<ReloadHandler>>,
    /// The native bridge's pool, for the upstream admin route.
    pool: RwLock<Option<crate::pool::Pool>>,
    /// The MCP side, once `up` mounted one.
    mcp: mcp::Mounted,
}

/// A spec and the exposure it was built from, swapped as one so the gate always matches
/// the spec clients see.
struct Published {
    spec: Bytes,
    exposure: Exposure,
}

impl Front {
    /// A front for `config`; nothing is published and the controller counts as not ready.
    pub fn new(config: FrontConfig) -> Result<Front, SetupError> {
        let upstream_base = config.upstream.trim_end_matches('/').to_string();
        if reqwest::Url::parse(&upstream_base).map_or(true, |u| u.scheme() != "http") {
            return Err(SetupError::BadUpstream {
                url: config.upstream.clone(),
            });
        }
        let mut upstream_authorization =
            HeaderValue::from_str(&format!("Bearer {}", config.upstream_key))
                .map_err(|_| SetupError::BadUpstreamKey)?;
        upstream_authorization.set_sensitive(true);
        let inner = Inner {
            client: proxy::client()?,
            slots: proxy::slots(&config.forward),
            config,
            upstream_base,
            upstream_authorization,
            published: RwLock::new(None),
            local_upstream: RwLock::new(None),
            upstream_ready: AtomicBool::new(false),
            reload: RwLock::new(None),
            pool: RwLock::new(None),
            mcp: mcp::Mounted::default(),
        };
        Ok(Front {
            inner: Arc::new(inner),
        })
    }

    /// Atomically swaps in a new merged spec and the exposure it was built from.
    pub fn publish(&self, spec: Value, exposure: Exposure) {
        let published = Published {
            spec: Bytes::from(spec.to_string()),
            exposure,
        };
        *write(&self.inner.published) = Some(Arc::new(published));
    }

    /// Sends every forwarded request to `routes` in this process rather than to `upstream`
    /// over HTTP (same headers, same key check): the native bridge's routes.
    pub fn set_local_upstream(&self, routes: Router) {
        *write(&self.inner.local_upstream) = Some(routes);
    }

    /// Whether the controller answers (set by the supervisor); `/healthz` reports it.
    pub fn set_upstream_ready(&self, ready: bool) {
        self.inner.upstream_ready.store(ready, Ordering::Relaxed);
    }

    /// Installs the handler of the admin reload route (the `mcp-launch openapi` command
    /// calls it); until then the route answers 503.
    pub fn set_reload_handler(&self, handler: ReloadHandler) {
        *write(&self.inner.reload) = Some(handler);
    }

    /// Serves the MCP side `mount` builds for the public base URL `base` beside the REST
    /// routes (see [`McpSide`]).
    pub fn mount_mcp(&self, mount: McpMount, base: &str) {
        self.inner.mcp.mount(mount, base);
    }

    /// The stack's public base URL is `base` now: the MCP side is built again for it when it
    /// changed (its OAuth issuer and audience are that URL).
    pub fn follow_public_url(&self, base: &str) {
        self.inner.mcp.follow(base);
    }

    /// Serves on `listener` until `shutdown` is cancelled, then stops accepting and lets
    /// in-flight requests finish.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        crate::listen::serve(listener, self.router(), shutdown).await
    }

    fn router(self) -> Router {
        Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics))
            .route("/openapi.json", get(openapi))
            .route(RELOAD_PATH, post(reload))
            .route(upstream::UPSTREAM_PATH, post(upstream::upstream))
            .method_not_allowed_fallback(method_not_allowed)
            .fallback(gate_and_forward)
            .layer(middleware::from_fn_with_state(self.clone(), log_request))
            .with_state(self)
    }

    fn stack(&self) -> &str {
        &self.inner.config.stack
    }

    fn published(&self) -> Option<Arc<Published>> {
        self.inner
            .published
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn require_api_key(&self, headers: &HeaderMap) -> Result<(), FrontError> {
        if crate::auth::has_api_key(headers, &self.inner.config.api_key) {
            Ok(())
        } else {
            Err(FrontError::Unauthorized {
                stack: self.stack().to_string(),
            })
        }
    }
}

/// A write guard that survives a panicked writer: the values are replaced whole, so a
/// poisoned lock never holds a half-written one.
fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// `GET /healthz`: open, so load balancers and `mcp-launch status` need no key.
async fn healthz(State(front): State<Front>) -> Response {
    let (status, word) = if front.inner.upstream_ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    };
    (
        status,
        Json(json!({"status": word, "stack": front.stack()})),
    )
        .into_response()
}

/// `GET /readyz`: open; ready to serve once the controller answers and the spec is published.
async fn readyz(State(front): State<Front>) -> Response {
    let ready = front.inner.upstream_ready.load(Ordering::Relaxed) && front.published().is_some();
    let (status, word) = match ready {
        true => (StatusCode::OK, "ready"),
        false => (StatusCode::SERVICE_UNAVAILABLE, "starting"),
    };
    (
        status,
        Json(json!({"status": word, "stack": front.stack()})),
    )
        .into_response()
}

/// `GET /metrics`: the process's metrics, behind the stack's key.
async fn metrics(State(front): State<Front>, headers: HeaderMap) -> Result<Response, FrontError> {
    front.require_api_key(&headers)?;
    Ok(crate::observe::metrics_page().await)
}

/// `GET /openapi.json`: the published spec, pre-serialized.
async fn openapi(State(front): State<Front>, headers: HeaderMap) -> Result<Response, FrontError> {
    if front.inner.config.protect_spec {
        front.require_api_key(&headers)?;
    }
    let published = front.published().ok_or_else(|| FrontError::NotPublished {
        stack: front.stack().to_string(),
    })?;
    Ok(json_response(published.spec.clone()))
}

/// A spec as an answer: JSON, never cached — it changes on every reload, and a cached copy
/// would advertise tools the gate now refuses.
fn json_response(body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The largest reload request body: `{"public_url": "…"}`.
const MAX_RELOAD_BODY: usize = 64 * 1024;

/// `POST /_mcp-launch/reload`: admin token only; the body is `{}` or `{"public_url": …}`. The
/// token is checked before a byte of the body is read.
async fn reload(State(front): State<Front>, request: Request) -> Result<Response, FrontError> {
    if !crate::auth::has_admin_token(request.headers(), &front.inner.config.admin_token) {
        return Err(FrontError::AdminUnauthorized);
    }
    let body = axum::body::to_bytes(request.into_body(), MAX_RELOAD_BODY)
        .await
        .map_err(|e| FrontError::BadBody {
            reason: format!("{e} (at most {MAX_RELOAD_BODY} bytes)"),
        })?;
    let request = parse_reload_request(&body)?;
    let handler = front
        .inner
        .reload
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .ok_or_else(|| FrontError::ReloadUnavailable {
            stack: front.stack().to_string(),
        })?;
    match handler(request).await {
        Ok(answer) => Ok(Json(answer).into_response()),
        Err(e) => Err(FrontError::ReloadFailed(e)),
    }
}

/// An empty body means `{}`.
fn parse_reload_request(body: &[u8]) -> Result<ReloadRequest, FrontError> {
    if body.trim_ascii().is_empty() {
        return Ok(ReloadRequest::default());
    }
    serde_json::from_slice(body).map_err(|e| FrontError::BadBody {
        reason: e.to_string(),
    })
}

/// A front route with the wrong method: our JSON error rather than axum's empty 405.
async fn method_not_allowed(request: Request) -> FrontError {
    FrontError::MethodNotAllowed {
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
    }
}

/// Every other route: the MCP side's paths to it; else a REST request, counted for `/metrics`
/// (time to the answer's head) by the server and tool the exposure knows (`counted`).
async fn gate_and_forward(State(front): State<Front>, request: Request) -> Response {
    if let Some(routes) = front.inner.mcp.routes_for(request.uri().path()) {
        return mcp::answer(routes, request).await;
    }
    let started = Instant::now();
    let published = front.published();
    let exposure = published.as_ref().map(|p| &p.exposure);
    let (server, tool) = counted::labels(request.uri().path(), exposure);
    let response = gate_and_forward_rest(front, request).await.into_response();
    let outcome = counted::outcome(response.status());
    let took = started.elapsed();
    crate::observe::rest_served(server.as_deref(), tool.as_deref(), took, outcome);
    response
}

/// A REST request: the key, then the path check and the exposure's verdict, then the
/// controller.
async fn gate_and_forward_rest(front: Front, request: Request) -> Result<Response, FrontError> {
    front.require_api_key(request.headers())?;
    let path = RequestPath::parse(request.uri().path())?;
    let published = front.published();
    let exposure = published.as_ref().map(|p| &p.exposure);
    if let Pass::ServerSpec(server) = path.gate(front.stack(), exposure, request.method())? {
        let published = published.ok_or_else(|| FrontError::NotPublished {
            stack: front.stack().to_string(),
        })?;
        return Ok(json_response(spec::server_part(&published.spec, &server)));
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    let limits = &front.inner.config.forward;
    let upstream = proxy::Upstream {
        slot: proxy::take_slot(&front.inner.slots, limits, front.stack()).await?,
        timeout: limits.timeout,
        client: &front.inner.client,
        base: &front.inner.upstream_base,
        authorization: &front.inner.upstream_authorization,
        stack: front.stack(),
    };
    let local = front
        .inner
        .local_upstream
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    match local {
        Some(routes) => {
            proxy::forward_local(routes, upstream, request, &path.canonical(), peer).await
        }
        None => proxy::forward(upstream, request, &path.canonical(), peer).await,
    }
}

/// Logs each request at DEBUG: method, path (no query), status, time to the response head.
/// Never headers or bodies: they carry keys and tool data.
async fn log_request(State(front): State<Front>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::debug!(
        stack = front.stack(),
        %method,
        path,
        status = response.status().as_u16(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "front request"
    );
    response
}
