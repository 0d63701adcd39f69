//! Streamable HTTP at `/mcp`: rmcp's service behind our key check, on loopback unless a key
//! is set. rmcp validates `Host` (loopback names by default) and, with the allow-list set
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
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Handler;
use crate::gateway::Gateway;

/// The largest request body taken.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Where and how the HTTP endpoint listens.
#[derive(Clone)]
pub struct HttpOptions {
    /// The address to bind (loopback by default).
    pub addr: SocketAddr,
    /// The key clients send as `Authorization: Bearer <key>`; required off loopback.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
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
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    config.cancellation_token = stop.child_token();
    if !options.addr.ip().is_loopback() {
        let host = options.addr.ip().to_string();
        config = config.with_allowed_hosts(["localhost".to_string(), "127.0.0.1".into(), host]);
    }
    let spliced = gateway.clone();
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(gateway.clone(), false)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let key = Arc::new(options.api_key.unwrap_or_default());
    let app = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(spliced, super::raw::restore))
        .layer(middleware::from_fn_with_state(key, require_key));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
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
