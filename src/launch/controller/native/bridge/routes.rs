//! The HTTP side: the key check, the tool route and the documents.

use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::auth::has_bearer;
use crate::catalog;
use crate::launch::exposure::READ_OUTPUT_PATH;
use crate::outputs::{Served as Call, Structured, META_KEY};

use super::error::BridgeError;
use super::result;
use super::upstream::Served;
use super::{Bridge, BODY_BUDGET_MIB, BODY_COST, MAX_BODY_BYTES};

/// The bridge's routes, every one behind the key.
pub(super) fn router(bridge: Bridge) -> Router {
    let mut router = Router::new();
    if bridge.inner.outputs.is_some() {
        router = router.route(READ_OUTPUT_PATH, post(read_output));
    }
    router
        .route("/openapi.json", get(root_openapi))
        .route("/docs", get(root_docs))
        .route("/{server}/{*rest}", any(server_route))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(bridge.clone(), reserve_body))
        .layer(middleware::from_fn_with_state(bridge.clone(), require_key))
        .with_state(bridge)
}

/// Refuses any request without our key, then logs the exchange at DEBUG (method, path,
/// status, time; never headers or bodies: they carry the key and tool data).
async fn require_key(State(bridge): State<Bridge>, request: Request, next: Next) -> Response {
    if !has_bearer(request.headers(), &bridge.inner.key) {
        return BridgeError::Unauthorized.into_response();
    }
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::debug!(
        %method,
        path,
        status = response.status().as_u16(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "bridge request"
    );
    response
}

/// Reserves the request body's size from the bridge's budget before it is read (after the key
/// check: a client without the key costs nothing), and holds it until the answer is made.
async fn reserve_body(State(bridge): State<Bridge>, request: Request, next: Next) -> Response {
    const MIB: usize = 1024 * 1024;
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let bytes = declared.unwrap_or(MAX_BODY_BYTES).min(MAX_BODY_BYTES);
    if bytes == 0 {
        return next.run(request).await;
    }
    let permits = (bytes.div_ceil(MIB) * BODY_COST).min(BODY_BUDGET_MIB) as u32;
    let Ok(_held) = bridge
        .inner
        .bodies
        .clone()
        .acquire_many_owned(permits)
        .await
    else {
        return BridgeError::ShuttingDown.into_response();
    };
    next.run(request).await
}

/// `/<server>/<rest>`: a tool call (POST), or the server's spec or docs page (GET).
async fn server_route(
    State(bridge): State<Bridge>,
    path: Result<Path<(String, String)>, PathRejection>,
    method: Method,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, BridgeError> {
    let Path((server, rest)) = path.map_err(|e| BridgeError::BadRequest {
        reason: e.body_text(),
    })?;
    let served = bridge
        .served(&server)
        .ok_or_else(|| BridgeError::UnknownServer {
            server: server.clone(),
            servers: bridge.server_names(),
        })?;
    match (method, rest.as_str()) {
        (Method::GET, "openapi.json") => Ok(json_bytes(served.tools().document.clone())),
        (Method::GET, "docs") => Ok(docs_page(served)),
        (Method::POST, tool) => call(&bridge, served, tool, body?).await,
        (method, rest) => Err(BridgeError::MethodNotAllowed {
            method: method.to_string(),
            path: format!("/{server}/{rest}"),
            allow: if matches!(rest, "openapi.json" | "docs") {
                "GET"
            } else {
                "POST"
            },
        }),
    }
}

/// Validates the arguments and calls the tool.
async fn call(
    bridge: &Bridge,
    served: &Served,
    tool: &str,
    body: Bytes,
) -> Result<Response, BridgeError> {
    let tools = served.tools();
    let found = tools.get(tool).ok_or_else(|| BridgeError::UnknownTool {
        server: served.name().to_string(),
        tool: tool.to_string(),
        suggestions: catalog::similar_names(tool, tools.names(), 3),
    })?;
    let invalid = |violations: Vec<String>| BridgeError::InvalidArguments {
        server: served.name().to_string(),
        tool: tool.to_string(),
        violations,
        expected: catalog::expected_shape(&found.definition),
    };
    let arguments = parse_arguments(&body)?;
    if !arguments.is_object() {
        return Err(invalid(vec![
            "the body must be one JSON object of arguments (`{}` when there are none)".into(),
        ]));
    }
    let violations = found.violations(&arguments);
    if !violations.is_empty() {
        return Err(invalid(violations));
    }
    let started = Instant::now();
    let timeout = bridge.inner.call_timeout;
    let answer = if crate::mcp::requires_task(&found.definition) {
        served.upstream.call_task(tool, arguments, timeout).await
    } else {
        served.upstream.call(tool, arguments, timeout).await
    };
    let answer = answer.map_err(|e| BridgeError::from(e).naming_login(&bridge.inner.login))?;
    let answer = match &bridge.inner.outputs {
        Some(outputs) => {
            let call = Call {
                server: served.name().to_string(),
                tool: tool.to_string(),
                budget: (outputs.budgets.get(served.name()))
                    .and_then(|o| o.output_budget(tool))
                    .map(crate::outputs::Budget::new),
                // The body of a result with structuredContent is it, documented by the
                // outputSchema: cut only where it still conforms.
                structured: catalog::tool::output_schema(&found.definition)
                    .map_or(Structured::Cut, |schema| {
                        Structured::Conforming(std::sync::Arc::new(schema.clone()))
                    }),
            };
            let scope = outputs.scope.clone();
            (outputs.outputs)
                .apply(call, answer, scope, started.elapsed())
                .await
        }
        None => answer,
    };
    if result::is_error(&answer) {
        return Err(BridgeError::ToolError {
            message: result::error_message(&answer),
            result: answer,
        });
    }
    let handle = answer
        .pointer(&format!(
            "/_meta/{}/cuts/0/handle",
            META_KEY.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .and_then(|h| HeaderValue::from_str(h).ok());
    let mut response = Json(result::success_body(answer)).into_response();
    if let Some(handle) = handle {
        response.headers_mut().insert(HANDLE_HEADER, handle);
    }
    Ok(response)
}

/// The header that names a cut result's handle (its body may be `structuredContent`, which
/// has no room for the envelope).
pub(super) const HANDLE_HEADER: &str = "x-mcp-launch-handle";

/// `POST /read_output` (only when results are budgeted): more of a cut result, for the
/// front's key.
async fn read_output(
    State(bridge): State<Bridge>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, BridgeError> {
    let outputs = (bridge.inner.outputs.as_ref()).ok_or_else(|| BridgeError::NotFound {
        path: READ_OUTPUT_PATH.to_string(),
    })?;
    let arguments = parse_arguments(&body?)?;
    let read = outputs
        .outputs
        .read_checked(arguments, outputs.scope.clone())
        .await
        .ok_or_else(|| BridgeError::NotFound {
            path: READ_OUTPUT_PATH.to_string(),
        })??;
    Ok(Json(result::success_body(read)).into_response())
}

/// The body as JSON; an empty body means `{}` (mcpo clients send none for argument-less tools).
fn parse_arguments(body: &[u8]) -> Result<Value, BridgeError> {
    if body.trim_ascii().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| BridgeError::InvalidJson {
        reason: e.to_string(),
    })
}

impl From<BytesRejection> for BridgeError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            BridgeError::BodyTooLarge {
                limit: MAX_BODY_BYTES,
            }
        } else {
            BridgeError::BadRequest {
                reason: rejection.body_text(),
            }
        }
    }
}

async fn root_openapi(State(bridge): State<Bridge>) -> Response {
    json_bytes(bridge.inner.root_document.clone())
}

/// The root document: no paths (each server has its own document), like mcpo's, with links to
/// the servers' docs in its description.
pub(super) fn root_document(servers: &[&str]) -> Value {
    let links: Vec<String> = servers
        .iter()
        .map(|s| format!("- [{s}](/{s}/docs)"))
        .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mcp-launch native bridge",
            "version": env!("CARGO_PKG_VERSION"),
            "description": format!("MCP servers, each with its own document at \
                `/<server>/openapi.json`:\n\n{}", links.join("\n")),
        },
        "paths": {},
    })
}

async fn root_docs(State(bridge): State<Bridge>) -> Response {
    let items: String = bridge
        .server_names()
        .iter()
        .map(|server| {
            let name = escape(server);
            let href = escape(&percent_encode(server));
            format!("<li><a href=\"{href}/docs\">{name}</a></li>\n")
        })
        .collect();
    html(
        format!("<h1>MCP servers</h1>\n<ul>\n{items}</ul>"),
        "MCP servers",
    )
}

/// A page with the server's tools and a link to its spec; no scripts, no external assets
/// (the stack may run offline), links relative so they work behind the front and a tunnel.
fn docs_page(served: &Served) -> Response {
    let name = escape(served.name());
    let tools: String = served
        .tools()
        .iter()
        .map(|(tool, found)| {
            let description = catalog::tool::description(&found.definition);
            format!(
                "<li><code>POST /{name}/{}</code><p>{}</p></li>\n",
                escape(tool),
                escape(description.lines().next().unwrap_or_default())
            )
        })
        .collect();
    let body = format!(
        "<h1>{name}</h1>\n<p>The OpenAPI document: <a href=\"openapi.json\">openapi.json</a>. \
         Call a tool with <code>POST</code> and its arguments as a JSON object.</p>\n\
         <ul>\n{tools}</ul>"
    );
    html(body, &name)
}

fn html(body: String, title: &str) -> Response {
    let page = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
         <body>\n{body}\n</body></html>\n"
    );
    let mut response = Response::new(Body::from(page));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Every byte but RFC 3986 unreserved characters, percent-encoded (a server name in a link).
fn percent_encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn json_bytes(bytes: Bytes) -> Response {
    let mut response = Response::new(Body::from(bytes));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn not_found(request: Request) -> BridgeError {
    BridgeError::NotFound {
        path: request.uri().path().to_string(),
    }
}

/// The root's routes (`/openapi.json`, `/docs`; axum's `get` also takes HEAD) with another
/// method.
async fn method_not_allowed(request: Request) -> BridgeError {
    BridgeError::MethodNotAllowed {
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
        allow: "GET, HEAD",
    }
}

#[cfg(test)]
mod tests {
    use axum::http::header::AUTHORIZATION;
    use axum::http::HeaderMap;

    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn only_a_bearer_with_the_key_passes() {
        assert!(has_bearer(&headers(&["Bearer k3y"]), "k3y"));
        assert!(has_bearer(&headers(&["bearer  k3y "]), "k3y"));
        assert!(!has_bearer(&headers(&["Basic x", "Bearer k3y"]), "k3y"));
        assert!(!has_bearer(&headers(&["Bearer k3"]), "k3y"));
        assert!(!has_bearer(&headers(&["k3y"]), "k3y"));
        assert!(!has_bearer(&headers(&[]), "k3y"));
        assert!(!has_bearer(&headers(&["Bearer "]), ""));
    }

    #[test]
    fn docs_text_is_escaped() {
        assert_eq!(
            escape("<a href='x'>&</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(percent_encode("a b/c"), "a%20b%2Fc");
    }
}
