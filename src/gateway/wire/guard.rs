//! Every refusal an HTTP client gets from `/mcp` is a JSON-RPC error body. rmcp refuses bad
//! requests in plain text (and a body that is not JSON with a 415, as if its type were wrong),
//! so requests are checked here first and rmcp's own refusals are rewrapped:
//! - a body that is not JSON (bad syntax, invalid UTF-8, or nested deeper than serde_json's
//!   [`MAX_DEPTH`], checked by a scan that does not recurse): 400, -32700, `id: null`;
//! - JSON that is not a JSON-RPC message: 400, -32600 (rmcp's 415);
//! - a POST whose `Content-Type` is not `application/json`: 415, -32600;
//! - a body that does not arrive within the listener's body timeout (a slow-body client would
//!   hold its connection: the header timeout does not cover bodies): 408, -32600;
//! - a session client's 2025-11-25 task request: answered by [`super::tasks25`] (rmcp drops
//!   what it does not know), once rmcp has accepted its session;
//! - a batch: answered by [`super::batch`] on a 2025-03-26 session, else 400, -32600;
//! - DELETE of a session: 200 (rmcp's 202 is a failure to the Python SDK); of one that does
//!   not exist (or has ended): 404, -32001 ("the server MUST
//!   respond to requests containing that session ID with HTTP 404 Not Found", Streamable HTTP,
//!   session management); rmcp answers it 202. With `--state`, a session another replica
//!   began ends here too: its record goes and every replica holding it closes its copy;
//! - rmcp's other plain-text refusals (406, 404 of an unknown session, 400 without a session id,
//!   413) keep their status, with their text as the error's message (-32001 for a 404, as the
//!   official TypeScript SDK does; -32603 for a 5xx; else -32600).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::SessionManager;
use serde_json::{json, Value};
use tower::ServiceExt;

/// The largest request body taken.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The deepest nesting of arrays and objects rmcp can read (serde_json's recursion limit of
/// 128 allows 127 levels).
pub const MAX_DEPTH: usize = 127;

/// JSON-RPC: the bytes are not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// The session named is unknown (the official TypeScript SDK's code for a 404).
pub const SESSION_NOT_FOUND: i64 = -32001;
/// JSON-RPC: internal error.
const INTERNAL_ERROR: i64 = -32603;

/// The bytes of a plain-text refusal kept as the message.
const MAX_REFUSAL_BYTES: usize = 4096;

/// `/mcp` behind the checks: rmcp (with the raw layer) and its sessions.
#[derive(Clone)]
pub struct Guard {
    /// rmcp's service under `/mcp`, with the raw layer.
    pub inner: Router,
    /// rmcp's sessions (bounded), to tell an unknown one.
    pub sessions: Arc<super::sessions::Sessions>,
    /// How long a client may take to send a body (`crate::listen::BODY_READ_TIMEOUT`).
    pub body_read_timeout: Duration,
    /// The gateway, for what rmcp cannot read (`super::tasks25`).
    pub gateway: crate::gateway::Gateway,
}

/// A JSON-RPC error response (`id: null` unless given) with an HTTP status.
pub fn refusal(status: StatusCode, code: i64, message: impl Into<String>, id: Value) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": code, "message": message.into()}});
    (status, axum::Json(body)).into_response()
}

/// The handler of every request: checked, passed to rmcp (or the batch), refusals rewrapped.
pub async fn check(State(guard): State<Guard>, request: Request) -> Response {
    if request.uri().path() != "/mcp" {
        return forward(&guard.inner, request).await;
    }
    let response = match *request.method() {
        Method::POST => match post(&guard, request).await {
            Ok(response) => response,
            Err(refused) => return refused,
        },
        Method::DELETE => return delete(&guard, request).await,
        _ => forward(&guard.inner, request).await,
    };
    rewrap(response).await
}

/// rmcp's answer to `request`.
pub async fn forward(inner: &Router, request: Request) -> Response {
    match inner.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// A POST: its type and body checked, then rmcp's answer (a batch's, for an array).
async fn post(guard: &Guard, request: Request) -> Result<Response, Response> {
    if !is_json(&request) {
        return Err(refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Unsupported Media Type: a POST to /mcp must have Content-Type: application/json",
            Value::Null,
        ));
    }
    let (mut parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_BODY_BYTES);
    let bytes = match tokio::time::timeout(guard.body_read_timeout, read).await {
        Ok(read) => read.map_err(|_| too_large())?,
        Err(_) => return Err(slow_body(guard.body_read_timeout)),
    };
    check_json(&bytes)
        .map_err(|e| refusal(StatusCode::BAD_REQUEST, PARSE_ERROR, e, Value::Null))?;
    if bytes.trim_ascii_start().starts_with(b"[") {
        return Ok(super::batch::answer(&guard.inner, parts, &bytes).await);
    }
    if let Some(answer) = super::tasks25::over_http(guard, &parts, &bytes).await {
        return Ok(answer);
    }
    parts.headers.remove(CONTENT_LENGTH);
    let response = forward(&guard.inner, Request::from_parts(parts, Body::from(bytes))).await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        // The type was checked above: rmcp could not read the JSON as a message.
        let text = plain_text(response).await;
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("Invalid Request: not a JSON-RPC message ({text})"),
            Value::Null,
        ));
    }
    Ok(response)
}

fn too_large() -> Response {
    refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        format!(
            "Invalid Request: the body is over {} MiB",
            MAX_BODY_BYTES >> 20
        ),
        Value::Null,
    )
}

/// A body that did not arrive in time: 408 (its rest unread, `listen` closes the connection).
fn slow_body(limit: Duration) -> Response {
    let message = format!(
        "Request Timeout: the body did not arrive within {}",
        humantime::format_duration(limit)
    );
    refusal(
        StatusCode::REQUEST_TIMEOUT,
        INVALID_REQUEST,
        message,
        Value::Null,
    )
}

/// Whether the request says its body is JSON (`application/json`, parameters allowed).
fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// Why `bytes` are not JSON rmcp can read, if they are not.
pub fn check_json(bytes: &[u8]) -> Result<(), String> {
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(format!(
            "Parse error: the body is not UTF-8 (byte {})",
            e.valid_up_to()
        ));
    }
    // The depth first: the syntax check below recurses (bounded by it).
    if depth(bytes) > MAX_DEPTH {
        return Err(format!(
            "Parse error: nested deeper than {MAX_DEPTH} levels of arrays and objects"
        ));
    }
    serde_json::from_slice::<Readable>(bytes).map_err(|e| format!("Parse error: {e}"))?;
    Ok(())
}

/// A JSON value read as a JSON value would be, without building it: unlike `IgnoredAny`,
/// whose numbers are checked for syntax only, a number out of range (`6e111111`) is refused.
struct Readable;

impl<'de> serde::Deserialize<'de> for Readable {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Readable)
    }
}

impl<'de> serde::de::Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Readable, A::Error> {
        while seq.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Readable, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, Readable>()?
            .is_some()
        {}
        Ok(Readable)
    }
}

/// The deepest nesting of arrays and objects in valid JSON `bytes`, counted in one pass.
fn depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in bytes {
        match (in_string, byte) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') => in_string = false,
            (true, _) => {}
            (false, b'"') => in_string = true,
            (false, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The session a request names.
fn session_id(request: &Request) -> Option<Arc<str>> {
    let id = request.headers().get("mcp-session-id")?;
    id.to_str().ok().map(Arc::from)
}

/// A DELETE: rmcp ends the session here; with `--state`, it ends on every replica (its record
/// gone, the copies others restored closed). 404 when neither this replica nor the store
/// knows it.
async fn delete(guard: &Guard, request: Request) -> Response {
    let Some(id) = session_id(&request) else {
        return rewrap(forward(&guard.inner, request).await).await;
    };
    let here = guard.sessions.has_session(&id).await.unwrap_or(true);
    let shared = match guard.sessions.end_everywhere(&id).await {
        Ok(shared) => shared,
        Err(e) => {
            let message = format!("Service Unavailable: the session could not be ended: {e}");
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                INTERNAL_ERROR,
                message,
                Value::Null,
            );
        }
    };
    if !here && !shared {
        return refusal(
            StatusCode::NOT_FOUND,
            SESSION_NOT_FOUND,
            "Session not found: it ended or never existed; initialize a new one",
            Value::Null,
        );
    }
    let mut response = rewrap(forward(&guard.inner, request).await).await;
    // rmcp says 202; the official Python SDK takes anything but 200 and 204 for a failed
    // termination and warns at every close ("Session termination failed: 202").
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// rmcp's plain-text refusal as a JSON-RPC error with the same status; anything else as is.
async fn rewrap(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let code = match status {
        StatusCode::NOT_FOUND => SESSION_NOT_FOUND,
        s if s.is_server_error() => INTERNAL_ERROR,
        _ => INVALID_REQUEST,
    };
    let headers = response.headers().clone();
    let mut rewrapped = refusal(status, code, plain_text(response).await, Value::Null);
    for (name, value) in &headers {
        if name != CONTENT_TYPE && name != CONTENT_LENGTH {
            rewrapped.headers_mut().insert(name, value.clone());
        }
    }
    rewrapped
}

/// The start of a plain-text body.
pub async fn plain_text(response: Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), MAX_REFUSAL_BYTES)
        .await
        .unwrap_or_else(|_| Bytes::from_static(b"(unreadable)"));
    String::from_utf8_lossy(&bytes).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert_eq!(depth(br#"{"a":[1,{"b":"[[[{"}]}"#), 3);
        assert_eq!(depth(br#"["\"[", "\\", []]"#), 2);
        assert_eq!(depth(b"1"), 0);
    }

    #[test]
    fn bodies_rmcp_cannot_read_are_parse_errors() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(check_json(deep.as_bytes()).unwrap_err().contains("deeper"));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert_eq!(check_json(ok.as_bytes()), Ok(()));
        assert!(check_json(b"{\"a\": \"\xff\"}")
            .unwrap_err()
            .contains("UTF-8"));
        assert!(check_json(b"{nope").is_err());
        assert!(check_json(b"").is_err());
    }

    /// Found by the `gateway_wire` fuzz target: a number JSON cannot hold passed the guard.
    #[test]
    fn a_number_out_of_range_is_a_parse_error() {
        for body in [&b"6e111111"[..], br#"{"id": 1, "params": {"x": [-1e400]}}"#] {
            let refused = check_json(body).unwrap_err();
            assert!(refused.contains("out of range"), "{refused}");
        }
        assert_eq!(
            check_json(br#"{"n": 1e308, "m": -0.5, "i": 18446744073709551615}"#),
            Ok(())
        );
    }
}
