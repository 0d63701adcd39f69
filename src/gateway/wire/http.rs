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
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::guard::{self, Guard, MAX_BODY_BYTES};
use super::Handler;
use crate::gateway::Gateway;
use crate::listen::Limits;

/// Where and how the HTTP endpoint listens.
#[derive(Clone)]
pub struct HttpOptions {
    /// The address to bind (loopback by default).
    pub addr: SocketAddr,
    /// The key clients send as `Authorization: Bearer <key>`; required off loopback.
    pub api_key: Option<String>,
    /// The bounds of the listener (header timeout, connections).
    pub limits: Limits,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("limits", &self.limits)
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
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(gateway.clone(), false)),
        Arc::clone(&sessions),
        config,
    );
    let inner = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(spliced, super::raw::restore));
    let key = Arc::new(options.api_key.unwrap_or_default());
    let app = Router::new()
        .fallback(guard::check)
        .with_state(Guard {
            inner,
            sessions,
            body_read_timeout: options.limits.body_read_timeout,
        })
        .layer(middleware::from_fn_with_state(key, require_key));
    crate::listen::serve_with(listener, app, options.limits, stop).await
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

    use super::*;
    use crate::gateway::{GatewayOptions, Mode};

    /// A gateway with no servers on a loopback port, under `limits`.
    async fn serving(limits: Limits) -> (String, CancellationToken, tempfile::TempDir) {
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
        };
        let gateway = Gateway::start(Vec::new(), options).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let options = HttpOptions {
            addr,
            api_key: None,
            limits,
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
}
