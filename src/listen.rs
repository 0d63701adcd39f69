//! The one way our HTTP services accept connections (the `up` front, the native bridge and the
//! gateway's `serve --http`; a test in `architecture` keeps `axum::serve` out of `src/`),
//! hardened for a port that may face the internet through a tunnel:
//! - a client gets [`HEADER_READ_TIMEOUT`] to send a request's headers, on a new connection
//!   and between requests on a kept-alive one, so slow-header clients (slowloris) and idle
//!   connections are closed instead of held forever;
//! - at most [`MAX_CONNECTIONS`] connections at once: past that, new ones wait in the
//!   kernel's backlog rather than costing memory;
//! - TCP_NODELAY (a response written as headers then body otherwise stalls ~40 ms on a
//!   kept-alive connection: Nagle's algorithm waiting for the client's delayed ACK);
//! - an answer given before the request's body was read (a refusal, say) says
//!   `Connection: close`: hyper cannot carry another request on that connection and closes
//!   it, and a client told nothing reuses it and finds it closed under its next request;
//! - graceful shutdown: on cancel, stop accepting and let requests in flight finish.
//!
//! The other listeners in `src/` are not HTTP: the daemon's unix socket (no Nagle there; its
//! own line protocol and loop, `gateway::daemon`), and the ports `launch` binds only to
//! reserve or probe them (`plan`, `tunnel`, `launcher`; those served are served here).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue};
use axum::Router;
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long a client may take to send a request's headers (also the idle limit of a
/// kept-alive connection). Real clients send them in one packet.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a service that reads a whole request body gives the client to send it (the
/// gateway's `/mcp`, answered 408): a header timeout does not bound a slow body.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections served at once. Far above what a stack's clients open; a flood past it waits.
pub const MAX_CONNECTIONS: usize = 4096;

/// The bounds a server applies.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// See [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// See [`BODY_READ_TIMEOUT`] (applied by the service, not by the loop).
    pub body_read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            body_read_timeout: BODY_READ_TIMEOUT,
        }
    }
}

/// Serves `app` on `listener` with the default [`Limits`] until `shutdown` is cancelled, then
/// waits for the requests in flight. Each request carries its peer address
/// (`ConnectInfo<SocketAddr>`).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    serve_with(listener, app, Limits::default(), shutdown).await
}

/// [`serve`] with other limits.
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Some(limits.header_read_timeout))
        .keep_alive(true);
    loop {
        let slot = tokio::select! {
            () = shutdown.cancelled() => break,
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let (tcp, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let app = app.clone();
        let service = tower::service_fn(move |request| answer(app.clone(), request, peer));
        let connection =
            http.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(%peer, error = %e, "connection ended");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// `app`'s answer to `request` from `peer`, saying `Connection: close` when it was given
/// before the request's body was read to its end (see the module doc).
async fn answer(
    app: Router,
    request: hyper::Request<Incoming>,
    peer: std::net::SocketAddr,
) -> Result<axum::response::Response, Infallible> {
    let read = (!request.body().is_end_stream()).then(|| Arc::new(AtomicBool::new(false)));
    let mut request = request.map(|body| match &read {
        Some(read) => axum::body::Body::new(Noted {
            body,
            read: Arc::clone(read),
        }),
        None => axum::body::Body::new(body),
    });
    request.extensions_mut().insert(ConnectInfo(peer));
    let mut response = app.oneshot(request).await?;
    if read.is_some_and(|read| !read.load(Ordering::Acquire)) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(response)
}

/// A request body that notes when it has been read to its end.
struct Noted {
    body: Incoming,
    read: Arc<AtomicBool>,
}

impl Body for Noted {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.body.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Whether the server side of `client`'s connection (an accepted socket of this process,
/// found in `/proc/self/fd` by its two ports) has TCP_NODELAY set; `None` until it is
/// accepted within a second.
#[cfg(test)]
pub(crate) async fn accepted_nodelay(client: &tokio::net::TcpStream) -> Option<bool> {
    for _ in 0..100 {
        if let Some(nodelay) = find_accepted_nodelay(client) {
            return Some(nodelay);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

#[cfg(test)]
fn find_accepted_nodelay(client: &tokio::net::TcpStream) -> Option<bool> {
    use nix::sys::socket::{getpeername, getsockname, getsockopt, sockopt, SockaddrStorage};
    use std::os::fd::{BorrowedFd, RawFd};
    let (ours, theirs) = (client.local_addr().ok()?, client.peer_addr().ok()?);
    let same = |a: SockaddrStorage, b: std::net::SocketAddr| {
        a.as_sockaddr_in().map(|a| a.port()) == Some(b.port())
    };
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        let local = getsockname::<SockaddrStorage>(fd);
        let peer = getpeername::<SockaddrStorage>(fd);
        if let (Ok(local), Ok(peer)) = (local, peer) {
            if same(local, theirs) && same(peer, ours) {
                // SAFETY: only read while `client` holds the connection open; a number
                // closed meanwhile fails with EBADF, it is never written through.
                let fd = unsafe { BorrowedFd::borrow_raw(fd) };
                return getsockopt(&fd, sockopt::TcpNoDelay).ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    async fn server(limits: Limits) -> (String, CancellationToken) {
        let app = Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok" }))
            .route(
                "/refuse",
                axum::routing::post(|| async { axum::http::StatusCode::UNAUTHORIZED }),
            )
            .route(
                "/read",
                axum::routing::post(|body: String| async move { body }),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let shutdown = CancellationToken::new();
        tokio::spawn(serve_with(listener, app, limits, shutdown.clone()));
        (addr, shutdown)
    }

    /// Sends a request's first header line and stalls, as a slowloris client does.
    async fn stall(addr: &str) -> TcpStream {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        tcp
    }

    async fn healthz(addr: &str) -> String {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// Slow-header clients are cut off at the timeout, and meanwhile others are served.
    #[tokio::test]
    async fn slow_headers_are_cut_off_and_others_still_served() {
        let limits = Limits {
            header_read_timeout: Duration::from_millis(300),
            max_connections: 64,
            ..Limits::default()
        };
        let (addr, shutdown) = server(limits).await;
        let mut slow = Vec::new();
        for _ in 0..20 {
            slow.push(stall(&addr).await);
        }
        assert!(healthz(&addr).await.ends_with("ok"));
        for mut tcp in slow {
            let mut rest = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut rest));
            assert!(
                read.await.is_ok(),
                "a slow client was held past the timeout"
            );
        }
        shutdown.cancel();
    }

    /// Every accepted connection has TCP_NODELAY (read back from the server's own socket).
    #[tokio::test]
    async fn accepted_connections_have_nodelay() {
        let (addr, shutdown) = server(Limits::default()).await;
        let client = stall(&addr).await;
        let seen = accepted_nodelay(&client).await;
        assert_eq!(seen, Some(true), "the accepted socket has no TCP_NODELAY");
        shutdown.cancel();
    }

    /// Past the connection cap, a new client waits for a slot instead of costing memory.
    #[tokio::test]
    async fn connections_past_the_cap_wait_for_a_slot() {
        let limits = Limits {
            header_read_timeout: Duration::from_millis(500),
            max_connections: 2,
            ..Limits::default()
        };
        let (addr, shutdown) = server(limits).await;
        let _held = [stall(&addr).await, stall(&addr).await];
        let started = std::time::Instant::now();
        assert!(healthz(&addr).await.ends_with("ok"));
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "served before a slot was free"
        );
        shutdown.cancel();
    }

    /// The head of the answer to a POST of `body` to `path` on a kept-alive connection.
    async fn post(addr: &str, path: &str, body: &str) -> String {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut head = vec![0; 1024];
        let n = tcp.read(&mut head).await.unwrap();
        String::from_utf8_lossy(&head[..n]).to_ascii_lowercase()
    }

    /// A refusal given before the body was read says the connection closes (a client told
    /// nothing reused it and found it closed); an answer after reading it keeps it alive.
    #[tokio::test]
    async fn an_answer_before_the_body_was_read_closes_the_connection() {
        let (addr, shutdown) = server(Limits::default()).await;
        let refused = post(&addr, "/refuse", "{\"jsonrpc\":\"2.0\"}").await;
        assert!(refused.starts_with("http/1.1 401"), "{refused}");
        assert!(refused.contains("connection: close"), "{refused}");
        let read = post(&addr, "/read", "hello").await;
        assert!(read.starts_with("http/1.1 200"), "{read}");
        assert!(!read.contains("connection: close"), "{read}");
        let get = healthz(&addr).await;
        assert!(get.ends_with("ok"), "{get}");
        shutdown.cancel();
    }
}
