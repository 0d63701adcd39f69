//! Forwarding to the controller: the client's method, path and query, its end-to-end headers
//! minus its credentials, our internal key, and both bodies streamed (a 5 MB tool result never
//! sits whole in memory). Every exchange holds one of the stack's [`ForwardLimits::in_flight`]
//! slots until its answer's body is sent, and one with mcpo over HTTP ends at
//! [`ForwardLimits::timeout`]: a stuck tool or a flood of calls never piles up without end.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, CONNECTION, HOST};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use tower::ServiceExt;

use super::error::FrontError;
use crate::auth::{ADMIN_HEADER, API_KEY_HEADER};
use crate::duration::Setting;
use crate::mcp::cap::{Cap, Unit};

/// A controller on loopback answers a connect at once; anything slower means it is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Environment variable bounding a request forwarded to mcpo, answer body included.
pub const FORWARD_TIMEOUT_ENV: &str = "MCP_LAUNCH_FORWARD_TIMEOUT";

/// The bound on a forwarded request when [`FORWARD_TIMEOUT_ENV`] is not set: as long as the
/// native bridge's call timeout, since tools may run for minutes either way.
pub const DEFAULT_FORWARD_TIMEOUT: Duration = Duration::from_secs(300);

/// The forward timeout as a user sets it.
pub const FORWARD_TIMEOUT: Setting = Setting::timeout(FORWARD_TIMEOUT_ENV, DEFAULT_FORWARD_TIMEOUT);

/// Environment variable bounding the requests one stack forwards at once.
pub const IN_FLIGHT_ENV: &str = "MCP_LAUNCH_MAX_IN_FLIGHT";

/// Requests a stack forwards at once when not told otherwise: plenty for agents calling tools
/// in parallel, few enough that a flood cannot make mcpo start thousands of calls.
pub const DEFAULT_IN_FLIGHT: usize = 64;

/// The in-flight bound as a user sets it: 1 to 4,096 (the front's connection cap).
pub const IN_FLIGHT: Cap = Cap::new(IN_FLIGHT_ENV, DEFAULT_IN_FLIGHT, 1, 4096, Unit::Items);

/// How long a request waits for a free slot before it is answered 503: a client retrying
/// later beats a queue that only grows.
pub const DEFAULT_QUEUE_WAIT: Duration = Duration::from_secs(10);

/// Bounds on what one stack forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardLimits {
    /// The longest a request to mcpo may take, answer body included (the native bridge
    /// bounds its calls itself).
    pub timeout: Duration,
    /// Requests forwarded at once, to either controller.
    pub in_flight: usize,
    /// How long a request waits for one of those slots.
    pub queue_wait: Duration,
}

impl ForwardLimits {
    /// The limits from the environment ([`FORWARD_TIMEOUT_ENV`], [`IN_FLIGHT_ENV`]),
    /// defaults otherwise.
    pub fn from_env() -> ForwardLimits {
        ForwardLimits {
            timeout: FORWARD_TIMEOUT.from_env_or_default(),
            in_flight: IN_FLIGHT.from_env_or_default(),
            ..ForwardLimits::default()
        }
    }
}

impl Default for ForwardLimits {
    fn default() -> Self {
        ForwardLimits {
            timeout: DEFAULT_FORWARD_TIMEOUT,
            in_flight: DEFAULT_IN_FLIGHT,
            queue_wait: DEFAULT_QUEUE_WAIT,
        }
    }
}

/// The slots of one stack: [`ForwardLimits::in_flight`] permits.
pub(super) fn slots(limits: &ForwardLimits) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(limits.in_flight.max(1)))
}

/// One slot for a request, waiting at most [`ForwardLimits::queue_wait`] for it.
pub(super) async fn take_slot(
    slots: &Arc<Semaphore>,
    limits: &ForwardLimits,
    stack: &str,
) -> Result<OwnedSemaphorePermit, FrontError> {
    let busy = || FrontError::Busy {
        stack: stack.to_string(),
        in_flight: limits.in_flight,
    };
    match tokio::time::timeout(limits.queue_wait, Arc::clone(slots).acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        // Closed never happens (the front never closes it); either way there is no slot.
        Ok(Err(_)) | Err(_) => Err(busy()),
    }
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus `expect`,
/// which our client does not speak: none of them may cross the proxy.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
];

const X_FORWARDED_FOR: &str = "x-forwarded-for";
const X_FORWARDED_PROTO: &str = "x-forwarded-proto";

/// The pooled client of one front: keep-alive, a short connect timeout, no total timeout
/// (tools may run for minutes), no redirects followed (the client must see the controller's
/// `307 /server/`) and no system proxy (the controller is on loopback).
pub(super) fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
}

/// Where and how to forward.
pub(super) struct Upstream<'a> {
    /// The request's slot, released once the answer's body is sent.
    pub slot: OwnedSemaphorePermit,
    /// The bound on an exchange over HTTP.
    pub timeout: Duration,
    /// The pooled client.
    pub client: &'a reqwest::Client,
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub base: &'a str,
    /// `Bearer <upstream key>`.
    pub authorization: &'a HeaderValue,
    /// The stack, for error messages.
    pub stack: &'a str,
}

/// Sends `request` to the controller at `path` (canonical) and streams back its answer.
pub(super) async fn forward(
    upstream: Upstream<'_>,
    request: Request,
    path: &str,
    peer: Option<IpAddr>,
) -> Result<Response, FrontError> {
    let (parts, body) = request.into_parts();
    let url = format!("{}{}", upstream.base, path_and_query(path, &parts.uri));
    let mut outgoing = upstream
        .client
        .request(parts.method, url)
        .headers(upstream_headers(
            &parts.headers,
            peer,
            upstream.authorization,
        ));
    // A bodiless request stays bodiless (no `transfer-encoding: chunked` on a GET).
    if body.size_hint().exact() != Some(0) {
        outgoing = outgoing.body(reqwest::Body::wrap_stream(body.into_data_stream()));
    }
    let answer = outgoing
        .timeout(upstream.timeout)
        .send()
        .await
        .map_err(|error| {
            let stack = upstream.stack.to_string();
            if error.is_timeout() {
                tracing::warn!(stack, timeout = ?upstream.timeout, "controller request timed out");
                return FrontError::UpstreamTimeout {
                    stack,
                    timeout: upstream.timeout,
                };
            }
            tracing::warn!(stack, %error, "controller request failed");
            FrontError::UpstreamUnavailable { stack }
        })?;
    downstream_response(upstream.stack, answer, upstream.slot)
}

/// Hands `request` to a controller that runs in this process (the native bridge's routes):
/// the same headers and path as over HTTP, without a loopback connection; the body passes
/// through as it streams.
pub(super) async fn forward_local(
    routes: Router,
    upstream: Upstream<'_>,
    request: Request,
    path: &str,
    peer: Option<IpAddr>,
) -> Result<Response, FrontError> {
    let (parts, body) = request.into_parts();
    let mut local = Request::new(body);
    *local.method_mut() = parts.method;
    *local.uri_mut() =
        path_and_query(path, &parts.uri)
            .parse()
            .map_err(|_| FrontError::UpstreamUnavailable {
                stack: upstream.stack.to_string(),
            })?;
    *local.headers_mut() = upstream_headers(&parts.headers, peer, upstream.authorization);
    let Ok(answer) = routes.oneshot(local).await;
    let (mut parts, body) = answer.into_parts();
    check_key_accepted(upstream.stack, parts.status)?;
    parts.headers = end_to_end(&parts.headers);
    let body = holding(upstream.slot, body.into_data_stream());
    Ok(Response::from_parts(parts, body))
}

/// `stream` as a body that keeps `slot` until it is sent or dropped.
fn holding<S, E>(slot: OwnedSemaphorePermit, stream: S) -> Body
where
    S: futures_util::Stream<Item = Result<axum::body::Bytes, E>> + Send + 'static,
    E: Into<axum::BoxError>,
{
    Body::from_stream(stream.map(move |chunk| {
        let _ = &slot;
        chunk
    }))
}

/// `path` (canonical) with the client's query, if it sent one.
fn path_and_query(path: &str, uri: &axum::http::Uri) -> String {
    match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    }
}

/// The controller's answer as ours: its status, end-to-end headers and streamed body (which
/// holds the request's slot).
fn downstream_response(
    stack: &str,
    answer: reqwest::Response,
    slot: OwnedSemaphorePermit,
) -> Result<Response, FrontError> {
    let status = answer.status();
    check_key_accepted(stack, status)?;
    let headers = end_to_end(answer.headers());
    let mut response = Response::new(holding(slot, answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

/// A controller's 401/403 concern our internal key, never the client's: a 502.
fn check_key_accepted(stack: &str, status: StatusCode) -> Result<(), FrontError> {
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        tracing::error!(
            stack,
            status = status.as_u16(),
            "controller rejected the internal key"
        );
        return Err(FrontError::UpstreamRejectedKey {
            stack: stack.to_string(),
            status: status.as_u16(),
        });
    }
    Ok(())
}

/// The client's headers as the controller gets them: end-to-end only, without the client's
/// credentials or `host`, with our key and the `x-forwarded-*` pair.
fn upstream_headers(
    incoming: &HeaderMap,
    peer: Option<IpAddr>,
    authorization: &HeaderValue,
) -> HeaderMap {
    let mut headers = end_to_end(incoming);
    for name in [
        HOST,
        AUTHORIZATION,
        HeaderName::from_static(API_KEY_HEADER),
        HeaderName::from_static(ADMIN_HEADER),
    ] {
        headers.remove(name);
    }
    headers.insert(AUTHORIZATION, authorization.clone());
    if let Some(forwarded_for) = forwarded_for(incoming, peer) {
        headers.insert(X_FORWARDED_FOR, forwarded_for);
    }
    if !headers.contains_key(X_FORWARDED_PROTO) {
        headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static("http"));
    }
    headers
}

/// The incoming `x-forwarded-for` chain (a tunnel in front of us sets it) with the peer's
/// address appended.
fn forwarded_for(incoming: &HeaderMap, peer: Option<IpAddr>) -> Option<HeaderValue> {
    let mut chain: Vec<String> = incoming
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    chain.extend(peer.map(|ip| ip.to_string()));
    if chain.is_empty() {
        return None;
    }
    HeaderValue::from_str(&chain.join(", ")).ok()
}

/// `headers` without the hop-by-hop ones, including those the `connection` header names.
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named_by_connection: Vec<String> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .collect();
    let mut kept = headers.clone();
    let dropped = HOP_BY_HOP
        .iter()
        .copied()
        .chain(named_by_connection.iter().map(String::as_str));
    for name in dropped {
        kept.remove(name);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_credentials_and_hop_by_hop_headers() {
        let mut incoming = HeaderMap::new();
        for (name, value) in [
            ("host", "front:8000"),
            ("authorization", "Bearer public"),
            ("x-api-key", "public"),
            ("x-mcp-launch-admin", "admin"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "1"),
            ("transfer-encoding", "chunked"),
            ("x-forwarded-for", "203.0.113.7"),
            ("content-type", "application/json"),
        ] {
            incoming.append(name, HeaderValue::from_static(value));
        }
        let ours = HeaderValue::from_static("Bearer internal");
        let out = upstream_headers(&incoming, "127.0.0.1".parse().ok(), &ours);
        assert_eq!(
            out.get_all(AUTHORIZATION).iter().collect::<Vec<_>>(),
            [&ours]
        );
        for gone in [
            "host",
            "x-api-key",
            "x-mcp-launch-admin",
            "connection",
            "x-private",
            "transfer-encoding",
        ] {
            assert!(!out.contains_key(gone), "{gone} must not be forwarded");
        }
        assert_eq!(out["x-forwarded-for"], "203.0.113.7, 127.0.0.1");
        assert_eq!(out["x-forwarded-proto"], "http");
        assert_eq!(out["content-type"], "application/json");
    }
}
