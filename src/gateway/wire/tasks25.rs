//! The 2025-11-25 tasks utility for session clients (the handshake era): a `tools/call` with
//! `task: {ttl}` of a tool that runs as a task becomes a gateway task (`{task}` at once), and
//! `tasks/get`, `tasks/result` (waits for the end; the answer names its task in `_meta`),
//! `tasks/list` (the client's own, paged) and `tasks/cancel` (its server's call ended too)
//! answer from the one store. rmcp drops a `tools/call`'s `task` member and answers `tasks/*`
//! only for 2026-07-28 clients holding the extension, so these requests are taken from the raw
//! message before rmcp reads it: on stdio by the transport ([`Tasks25`], which also sends
//! `notifications/tasks/status` when a task ends), over HTTP by the guard ([`over_http`], once
//! rmcp has accepted the request's session, host and origin on a `ping` with its headers).
//! A 2026-07-28 request (its `_meta` names its revision) is never taken here.

use std::time::Duration;

use axum::body::Body;
use axum::http::header::CONTENT_LENGTH;
use axum::http::request::Parts;
use axum::http::Request;
use axum::response::{IntoResponse, Response};
use memchr::memmem;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::gateway::error::INVALID_PARAMS;
use crate::gateway::tasks::{self, TaskError};
use crate::gateway::{Caller, Gateway, Reach};
use crate::outputs::ClientScope;
use crate::serving::stdio::{Intercept, Outlet};

use super::guard::{forward, Guard};

/// The `_meta` key of a 2026-07-28 request's revision.
const REVISION: &str = "io.modelcontextprotocol/protocolVersion";
/// JSON-RPC: method not found (a task of a tool that does not run as one).
const METHOD_NOT_FOUND: i64 = -32601;

/// A 2025-11-25 task request, taken from its raw message.
#[derive(Debug, PartialEq)]
pub(crate) struct Taken {
    id: Value,
    asked: Asked,
}

#[derive(Debug, PartialEq)]
enum Asked {
    Call {
        name: String,
        arguments: Value,
        ttl: Option<Duration>,
    },
    Get(String),
    Result(String),
    List(Option<String>),
    Cancel(String),
    /// A tasks request whose params are wrong: why.
    Invalid(String),
}

/// The task request `message` holds, if it is one of a handshake-era client.
pub(crate) fn take(message: &[u8]) -> Option<Taken> {
    memmem::find(message, b"\"task")?;
    let message: Value = serde_json::from_slice(message).ok()?;
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    let method = message.get("method")?.as_str()?;
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    if params
        .pointer(&format!("/_meta/{}", REVISION.replace('/', "~1")))
        .is_some()
    {
        return None;
    }
    let asked = match method {
        "tools/call" => called(&params)?,
        "tasks/get" => with_id(&params, Asked::Get),
        "tasks/result" => with_id(&params, Asked::Result),
        "tasks/cancel" => with_id(&params, Asked::Cancel),
        "tasks/list" => match params.get("cursor") {
            None | Some(Value::Null) => Asked::List(None),
            Some(Value::String(cursor)) => Asked::List(Some(cursor.clone())),
            Some(_) => Asked::Invalid("`cursor` must be a string".into()),
        },
        _ => return None,
    };
    Some(Taken {
        id: id.clone(),
        asked,
    })
}

/// A `tools/call` asking for a task (`task` an object), else `None` (rmcp answers it).
fn called(params: &Value) -> Option<Asked> {
    let task = params.get("task")?.as_object()?;
    let name = params.get("name")?.as_str()?.to_string();
    let ttl = task
        .get("ttl")
        .and_then(Value::as_u64)
        .map(Duration::from_millis);
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    Some(Asked::Call {
        name,
        arguments,
        ttl,
    })
}

fn with_id(params: &Value, asked: fn(String) -> Asked) -> Asked {
    match params.get("taskId").and_then(Value::as_str) {
        Some(id) => asked(id.to_string()),
        None => Asked::Invalid("`taskId` (a string) is required".into()),
    }
}

fn answer(id: &Value, outcome: Result<Value, Value>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

fn refused(error: &TaskError) -> Value {
    tasks::refusal(error)
}

impl Taken {
    /// The JSON-RPC answer, as the client of `scope`; and the id of a task it made.
    pub(crate) async fn answer(
        self,
        gateway: &Gateway,
        scope: ClientScope,
        reach: Reach,
    ) -> (Value, Option<String>) {
        let mut made = None;
        let outcome = match self.asked {
            Asked::Call {
                name,
                arguments,
                ttl,
            } => {
                let task = start(gateway, &name, arguments, (scope, reach), ttl).await;
                made = task.as_ref().ok().map(|t| t.id.clone());
                task.map(|t| tasks::created_2025(&t))
            }
            Asked::Get(id) => gateway
                .task(&scope, &id)
                .await
                .map(|t| tasks::task_2025(&t))
                .map_err(|e| refused(&e)),
            Asked::Cancel(id) => gateway
                .cancel_task(&scope, &id)
                .await
                .map(|t| tasks::task_2025(&t))
                .map_err(|e| refused(&e)),
            Asked::Result(id) => match gateway.ended_task(&scope, &id).await {
                Ok(task) => tasks::payload_2025(&task),
                Err(e) => Err(refused(&e)),
            },
            Asked::List(cursor) => gateway
                .task_page(&scope, cursor.as_deref())
                .await
                .map(|(page, next)| tasks::listed_2025(&page, next.as_deref()))
                .map_err(|e| refused(&e)),
            Asked::Invalid(why) => Err(json!({"code": INVALID_PARAMS, "message": why})),
        };
        (answer(&self.id, outcome), made)
    }
}

/// A task of `scope` (its client reaching `reach`) for the call of `name`, when it runs as one.
async fn start(
    gateway: &Gateway,
    name: &str,
    arguments: Value,
    (scope, reach): (ClientScope, Reach),
    ttl: Option<Duration>,
) -> Result<tasks::Snapshot, Value> {
    if !gateway.accepts_task(name).await {
        return Err(json!({
            "code": METHOD_NOT_FOUND,
            "message": format!(
                "tool `{name}` does not run as a task here (its execution.taskSupport is not \
                 \"optional\" or \"required\"): call it without `task`"
            ),
        }));
    }
    let caller = Caller {
        progress: None,
        link: None,
        cancel: CancellationToken::new(),
        scope,
        logs: None,
        stateless: None,
        reach,
        trace: None,
    };
    gateway
        .start_task(name, arguments, caller, ttl)
        .await
        .map_err(|e| refused(&e))
}

/// The stdio transport's interceptor: the one client's task requests, answered on stdout, and
/// each of its tasks' end told (`notifications/tasks/status`).
pub struct Tasks25(pub Gateway);

impl Intercept for Tasks25 {
    fn take(&self, line: &[u8], outlet: &Outlet) -> bool {
        let Some(taken) = take(line) else {
            return false;
        };
        let (gateway, outlet) = (self.0.clone(), outlet.clone());
        self.0.spawn(async move {
            let scope = ClientScope::local();
            let answered = async {
                let (answer, made) = taken.answer(&gateway, scope.clone(), Reach::ALL).await;
                outlet.send(answer).await;
                if let Some(id) = made {
                    if let Ok(task) = gateway.ended_task(&scope, &id).await {
                        outlet.send(tasks::status_2025(&task)).await;
                    }
                }
            };
            // A stopping gateway waits for no task to end.
            tokio::select! {
                () = answered => {}
                () = gateway.stopping() => {}
            }
        });
        true
    }
}

/// The answer to a POST whose body is a 2025-11-25 task request of a session client; `None`
/// for any other (rmcp answers it). The request must name its session: rmcp checks it (and the
/// host, origin and revision) on a `ping` with the same headers first, and its refusal is the
/// answer.
pub async fn over_http(guard: &Guard, parts: &Parts, body: &[u8]) -> Option<Response> {
    if !parts.headers.contains_key("mcp-session-id") {
        return None;
    }
    let taken = take(body)?;
    let ping = json!({"jsonrpc": "2.0", "id": taken.id, "method": "ping"});
    let mut request = Request::new(Body::from(ping.to_string()));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    request.headers_mut().remove(CONTENT_LENGTH);
    let checked = forward(&guard.inner, request).await;
    if !checked.status().is_success() {
        return Some(checked);
    }
    let scope = super::context::scope_from(&parts.headers, false);
    let (answer, _) = taken
        .answer(&guard.gateway, scope, Reach::of(&parts.extensions))
        .await;
    Some(axum::Json(answer).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(message: Value) -> Option<Taken> {
        take(message.to_string().as_bytes())
    }

    #[test]
    fn a_session_clients_task_requests_are_taken_and_others_left_to_rmcp() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "s__t", "arguments": {"a": 1}, "task": {"ttl": 5000}}});
        assert_eq!(
            taken(call).map(|t| t.asked),
            Some(Asked::Call {
                name: "s__t".into(),
                arguments: json!({"a": 1}),
                ttl: Some(Duration::from_millis(5000)),
            })
        );
        let get =
            json!({"jsonrpc": "2.0", "id": "g", "method": "tasks/get", "params": {"taskId": "x"}});
        assert_eq!(taken(get).map(|t| t.asked), Some(Asked::Get("x".into())));
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/list"});
        assert_eq!(taken(list).map(|t| t.asked), Some(Asked::List(None)));
        let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {}});
        assert!(matches!(
            taken(bad).map(|t| t.asked),
            Some(Asked::Invalid(_))
        ));
        // A plain call, a 2026-07-28 request, a notification: rmcp's.
        let plain = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "tasks", "arguments": {"task": 1}}});
        assert!(taken(plain).is_none());
        let stateless = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/get",
            "params": {"taskId": "x", "_meta": {REVISION: "2026-07-28"}}});
        assert!(taken(stateless).is_none());
        let notification =
            json!({"jsonrpc": "2.0", "method": "tasks/get", "params": {"taskId": "x"}});
        assert!(taken(notification).is_none());
    }
}
