//! The official conformance suite's client, built on mcp-launch's own client library
//! (`mcp_launch::mcp::Session`): no second implementation, so the suite judges the client
//! that `list`, `call`, the gateway and `up` use.
//!
//! The suite runs it as `conformance_client URL` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` and any
//! per-scenario input (e.g. the tool calls to make) as JSON in `MCP_CONFORMANCE_CONTEXT`.
//! `scripts/conformance.py client` builds and runs it (docs/CONFORMANCE.md).
//!
//! The `auth/*` scenarios log in first through `mcp_launch::auth::client` ([`authorizer`]),
//! with the token store in a temporary state dir.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_launch::mcp::message::STATELESS_PROTOCOL_VERSION;
use mcp_launch::mcp::{
    ConnectOptions, Endpoint, McpError, RpcError, ServerRequestHandler, Session,
};
use serde_json::{json, Map, Value};

/// The limit for each request of a scenario.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client URL (the scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    // The token store of `auth/*` logins: a state dir of this run's own, gone when it ends
    // (the file only: the suite's tokens never reach the user's OS keyring).
    let state = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("cannot make a temporary state dir: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::env::set_var("XDG_STATE_HOME", state.path());
    std::env::set_var("MCP_LAUNCH_TOKEN_STORE", "file");
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let run = Run {
        url,
        scenario,
        stateless: version == STATELESS_PROTOCOL_VERSION,
        context,
    };
    match runtime.block_on(run.go()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scenario {}: {e}", run.scenario);
            ExitCode::FAILURE
        }
    }
}

struct Run {
    url: String,
    scenario: String,
    stateless: bool,
    context: Value,
}

impl Run {
    async fn go(&self) -> Result<(), String> {
        if self.is_auth() {
            authorizer(&self.url, &self.context, None).await?;
        }
        let endpoint = Endpoint::StreamableHttp {
            url: self.url.clone(),
            headers: Vec::new(),
        };
        let opts = ConnectOptions {
            stateless: self.stateless,
            forwards_client_requests: true,
            ..ConnectOptions::default()
        };
        let session = Session::connect(&endpoint, &opts)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        session.on_server_request(answers());
        let outcome = self.exercise(&session).await;
        session.close().await;
        outcome
    }

    fn is_auth(&self) -> bool {
        self.scenario.starts_with("auth/")
    }

    /// Makes `request`; in an `auth/*` scenario, one the server refuses for want of a login
    /// (more scopes, SEP-2350, or an authorization server it moved to, SEP-2352) is
    /// authorized again through the library — with the scopes its error names — and made
    /// once more: never a loop.
    async fn authorized<T, F, Fut>(&self, what: &str, request: F) -> Result<T, String>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, McpError>>,
    {
        let failed = |e: McpError| format!("{what}: {e}");
        match request().await {
            Err(McpError::Auth(refused)) if self.is_auth() && refused.kind() == "needs_login" => {
                eprintln!("{what}: {refused}; authorizing again");
                let scope = refused.step_up_scope().map(String::from);
                authorizer(&self.url, &self.context, scope).await?;
                request().await.map_err(failed)
            }
            other => other.map_err(failed),
        }
    }

    /// What the scenario asks of a client once connected.
    async fn exercise(&self, session: &Session) -> Result<(), String> {
        let listed = self
            .authorized("tools/list", || session.list_tools(REQUEST_TIMEOUT))
            .await?;
        for warning in &listed.warnings {
            eprintln!("tools/list: {warning}");
        }
        let tools = listed.tools;
        match self.scenario.as_str() {
            "tools_call" => call(session, "add_numbers", json!({"a": 5, "b": 3})).await,
            "elicitation-sep1034-client-defaults" => {
                call(session, "test_client_elicitation_defaults", json!({})).await
            }
            "sse-retry" => call(session, "test_reconnection", json!({})).await,
            "sep-2322-client-request-state" => {
                for tool in [
                    "test_mrtr_echo_state",
                    "test_mrtr_unrelated",
                    "test_mrtr_no_state",
                    "test_mrtr_no_result_type",
                ] {
                    call(session, tool, json!({})).await?;
                }
                Ok(())
            }
            "http-standard-headers" => every_kind(session, &tools).await,
            "http-custom-headers" => self.context_calls(session).await,
            "http-invalid-tool-headers" => {
                for tool in &tools {
                    call(session, name_of(tool), example_arguments(tool)).await?;
                }
                Ok(())
            }
            "json-schema-2020-12-preservation" => echo_schema(session, &tools).await,
            // A call that needs more scopes than listing did: the step-up.
            "auth/scope-step-up" => {
                let tool = tools.first().ok_or("no tool to call")?;
                let (name, arguments) = (name_of(tool), example_arguments(tool));
                let call = || session.call_tool_answering(name, arguments.clone(), REQUEST_TIMEOUT);
                let result = self.authorized("tools/call", call).await?;
                eprintln!("tools/call {name}: {result}");
                Ok(())
            }
            // initialize, request-metadata, json-schema-ref-no-deref, auth/*: connecting and
            // listing is the whole exercise.
            _ => Ok(()),
        }
    }

    /// The calls the scenario's context lists (`toolCalls: [{name, arguments}]`).
    async fn context_calls(&self, session: &Session) -> Result<(), String> {
        let calls = self.context.get("toolCalls").and_then(Value::as_array);
        for planned in calls.into_iter().flatten() {
            let name = planned.get("name").and_then(Value::as_str).unwrap_or("");
            let arguments = planned.get("arguments").cloned().unwrap_or(json!({}));
            call(session, name, arguments).await?;
        }
        Ok(())
    }
}

/// Logs in for an `auth/*` scenario through `mcp_launch::auth::client`: discovery,
/// registration (pre-registered from the scenario's context, a Client ID Metadata Document,
/// else RFC 7591), PKCE and the code exchange; the grant goes to the token store (in a temp
/// state dir), where the library's HTTP client finds it. The suite's authorization server
/// approves at once, so the authorize step is one GET whose redirect carries the code.
async fn authorizer(url: &str, context: &Value, scope: Option<String>) -> Result<(), String> {
    use mcp_launch::auth::client::{http_client, login, store};
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(String::from);
    let registered = text("client_id").map(|client_id| login::PreRegistered {
        client_id,
        client_secret: text("client_secret"),
        scopes: None,
        origin: "the scenario's context".into(),
    });
    let request = login::LoginRequest {
        server: "conformance".into(),
        url: url.into(),
        redirect_uri: REDIRECT_URI.into(),
        registered,
        metadata_document: Some(METADATA_DOCUMENT.into()),
        scope,
        flow: login::Flow::Redirect,
        metadata_url: None,
    };
    let http = http_client();
    let pending = login::begin(&http, request)
        .await
        .map_err(|e| format!("login: {e}"))?;
    let redirected = approve(&pending.authorize_url).await?;
    let grant = pending
        .finish(&http, &redirected)
        .await
        .map_err(|e| format!("login: {e}"))?;
    store::save(grant).await.map_err(|e| format!("login: {e}"))
}

/// Where the suite's authorization server sends the code (never listened on: the redirect is
/// read from the authorize answer's `Location`).
const REDIRECT_URI: &str = "http://127.0.0.1:33418/callback";

/// The Client ID Metadata Document offered where the authorization server takes them: the
/// suite's own fixed URL, which its authorization server resolves to its own document
/// (`auth/basic-cimd` expects this client id; the suite never fetches a client's URL).
const METADATA_DOCUMENT: &str = "https://conformance-test.local/client-metadata.json";

/// The authorize step against an authorization server that approves at once: the address
/// its redirect sends the browser to.
async fn approve(authorize_url: &reqwest::Url) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("authorize: {e}"))?;
    let answer = http
        .get(authorize_url.clone())
        .send()
        .await
        .map_err(|e| format!("authorize: {e}"))?;
    answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(String::from)
        .ok_or_else(|| format!("authorize: HTTP {} without a redirect", answer.status()))
}

/// A tool call through the library, answering the server's requests for input.
async fn call(session: &Session, name: &str, arguments: Value) -> Result<(), String> {
    let result = session
        .call_tool_answering(name, arguments, REQUEST_TIMEOUT)
        .await
        .map_err(|e| format!("tools/call {name}: {e}"))?;
    eprintln!("tools/call {name}: {result}");
    Ok(())
}

/// Every kind of request with a name: each tool, the first resource, the first prompt.
async fn every_kind(session: &Session, tools: &[Value]) -> Result<(), String> {
    for tool in tools {
        call(session, name_of(tool), example_arguments(tool)).await?;
    }
    let failed = |what: &'static str| move |e: mcp_launch::mcp::McpError| format!("{what}: {e}");
    let resources = session
        .list_items("resources/list", "resources", REQUEST_TIMEOUT)
        .await
        .map_err(failed("resources/list"))?;
    if let Some(uri) = resources.first().and_then(|r| r.get("uri")) {
        let params = json!({"uri": uri});
        session
            .request("resources/read", Some(params), REQUEST_TIMEOUT)
            .await
            .map_err(failed("resources/read"))?;
    }
    let prompts = session
        .list_items("prompts/list", "prompts", REQUEST_TIMEOUT)
        .await
        .map_err(failed("prompts/list"))?;
    if let Some(name) = prompts.first().and_then(|p| p.get("name")) {
        let params = json!({"name": name, "arguments": {}});
        session
            .request("prompts/get", Some(params), REQUEST_TIMEOUT)
            .await
            .map_err(failed("prompts/get"))?;
    }
    Ok(())
}

/// Sends the focal tool's `inputSchema`, as listed, back through the echo tool.
async fn echo_schema(session: &Session, tools: &[Value]) -> Result<(), String> {
    let focal = tools
        .iter()
        .find(|tool| name_of(tool) != "json_schema_echo")
        .and_then(|tool| tool.get("inputSchema"))
        .ok_or("no tool with a schema to echo")?;
    call(session, "json_schema_echo", json!({"schema": focal})).await
}

fn name_of(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// Arguments for a tool's required parameters: a placeholder of each one's type.
fn example_arguments(tool: &Value) -> Value {
    let schema = tool.get("inputSchema");
    let properties = schema.and_then(|s| s.get("properties"));
    let required = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array);
    let mut arguments = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("us-west1"),
        };
        arguments.insert(name.to_string(), value);
    }
    Value::Object(arguments)
}

/// Answers the server's own requests as a user who accepts: an elicitation with every field's
/// default (SEP-1034), a sampling request with a fixed text, roots with none.
fn answers() -> ServerRequestHandler {
    Arc::new(|method: String, params: Option<Value>| {
        Box::pin(async move {
            match method.as_str() {
                "elicitation/create" => Ok(accept_with_defaults(params.as_ref())),
                "sampling/createMessage" => Ok(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "conformance client answer"},
                    "model": "conformance-client",
                    "stopReason": "endTurn",
                })),
                "roots/list" => Ok(json!({"roots": []})),
                _ => Err(RpcError {
                    code: -32601,
                    message: format!("the conformance client does not answer {method}"),
                    data: None,
                }),
            }
        })
    })
}

/// `accept`, with each field of the requested schema that has a `default` set to it.
fn accept_with_defaults(params: Option<&Value>) -> Value {
    let properties = params
        .and_then(|p| p.pointer("/requestedSchema/properties"))
        .and_then(Value::as_object);
    let content: Map<String, Value> = properties
        .into_iter()
        .flatten()
        .filter_map(|(field, schema)| Some((field.clone(), schema.get("default")?.clone())))
        .collect();
    json!({"action": "accept", "content": content})
}
