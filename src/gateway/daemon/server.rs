//! The gateway's side of the socket: one task per connection, one per request (answered as
//! each finishes), the peer checked to be this user, an idle exit for daemons.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::Actionable;
use crate::gateway::error::GatewayError;
use crate::gateway::Gateway;

use super::{views, MAX_LINE};
use crate::search::{Method, Query};

/// What kind of gateway listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `serve --daemon`: serves the command line, stops on `daemon stop` or when idle.
    Daemon,
    /// Serves one client over stdio.
    Stdio,
    /// Serves clients over Streamable HTTP.
    Http,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Daemon => "daemon",
            Kind::Stdio => "stdio",
            Kind::Http => "http",
        }
    }
}

/// What `status` says about a gateway besides its upstreams.
#[derive(Debug, Clone)]
pub struct Info {
    /// Daemon, stdio or HTTP.
    pub kind: Kind,
    /// The HTTP address, for an HTTP gateway.
    pub address: Option<String>,
    /// The config files it serves.
    pub configs: Vec<PathBuf>,
    /// Its working directory (where its overrides live).
    pub cwd: PathBuf,
    /// The socket it listens on (removed when it stops).
    pub socket: PathBuf,
}

struct Shared {
    gateway: Gateway,
    info: Info,
    started: SystemTime,
    /// When the last request ended (or the daemon started).
    last: Mutex<Instant>,
    /// Requests under way.
    busy: AtomicUsize,
    stop: CancellationToken,
}

/// Serves the socket until `stop` (or, for a daemon with `idle_exit`, that long without
/// requests, which cancels `stop`). Connections end with it.
pub async fn listen(
    gateway: Gateway,
    listener: UnixListener,
    info: Info,
    idle_exit: Option<Duration>,
    stop: CancellationToken,
) {
    let shared = Arc::new(Shared {
        gateway,
        info,
        started: SystemTime::now(),
        last: Mutex::new(Instant::now()),
        busy: AtomicUsize::new(0),
        stop: stop.clone(),
    });
    let tasks = TaskTracker::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = idle(&shared, idle_exit) => {
                tracing::info!("no requests for the idle time: the daemon stops");
                stop.cancel();
                break;
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if is_same_user(&stream) => {
                    tasks.spawn(connection(Arc::clone(&shared), stream));
                }
                Ok(_) => tracing::warn!("refused a connection from another user"),
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    // Removed while still bound, so no gateway started since can lose its socket to us.
    let _ = std::fs::remove_file(&shared.info.socket);
    drop(listener);
    tasks.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), tasks.wait()).await;
}

/// Completes once nothing has been asked for `limit` (never without one).
async fn idle(shared: &Shared, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    loop {
        let last = *shared.last.lock().unwrap_or_else(PoisonError::into_inner);
        tokio::time::sleep_until((last + limit).into()).await;
        let quiet = last.elapsed() >= limit;
        let unchanged = *shared.last.lock().unwrap_or_else(PoisonError::into_inner) == last;
        if quiet && unchanged && shared.busy.load(Ordering::Acquire) == 0 {
            return;
        }
    }
}

fn is_same_user(stream: &UnixStream) -> bool {
    stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == nix::unistd::geteuid().as_raw())
}

async fn connection(shared: Arc<Shared>, stream: UnixStream) {
    let (read, mut write) = stream.into_split();
    let mut lines = FramedRead::new(read, LinesCodec::new_with_max_length(MAX_LINE));
    let (answers, mut outbox) = mpsc::unbounded_channel::<String>();
    // The greeting: a client knows a live gateway answers before it sends anything.
    let _ = answers
        .send(json!({"mcp-launch": "gateway", "version": env!("CARGO_PKG_VERSION")}).to_string());
    let writer = tokio::spawn(async move {
        while let Some(mut line) = outbox.recv().await {
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let requests = TaskTracker::new();
    loop {
        let line = tokio::select! {
            () = shared.stop.cancelled() => break,
            line = lines.next() => line,
        };
        let line = match line {
            Some(Ok(line)) => line,
            Some(Err(e)) => {
                let _ = answers.send(error_line(&Value::Null, "bad_request", &e.to_string()));
                break;
            }
            None => break,
        };
        shared.busy.fetch_add(1, Ordering::AcqRel);
        let (shared, answers) = (Arc::clone(&shared), answers.clone());
        let is_use = !is_watch(&line);
        requests.spawn(async move {
            let answer = answer(&shared, &line).await;
            if is_use {
                *shared.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
            }
            shared.busy.fetch_sub(1, Ordering::AcqRel);
            let _ = answers.send(answer);
        });
    }
    requests.close();
    requests.wait().await;
    drop(answers);
    let _ = writer.await;
}

/// True for a `status`, `metrics` or `reload` request: watching a daemon (`daemon status`,
/// `top` every second) or telling it of an approval is not using it, or a watched daemon
/// would never reach its idle exit.
fn is_watch(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Op<'a> {
        op: Option<&'a str>,
    }
    // Those requests are one short line: a call's line is not read twice.
    line.len() < 256
        && serde_json::from_str::<Op>(line)
            .is_ok_and(|r| matches!(r.op, Some("status" | "metrics" | "reload")))
}

/// The answer line to one request line.
async fn answer(shared: &Shared, line: &str) -> String {
    let request: Value = match serde_json::from_str(line) {
        Ok(request) => request,
        Err(e) => return error_line(&Value::Null, "bad_request", &e.to_string()),
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let outcome = match request.get("op").and_then(Value::as_str) {
        Some("call") => call(shared, &request).await,
        Some("status") => Ok(status(shared)),
        Some("metrics") => Ok(json!({"text": crate::observe::metrics::render()})),
        // Written straight from the reports: the one answer that is not built as a `Value`.
        Some("list") => {
            let list = list(shared, &request).await;
            return format!(r#"{{"id":{id},"result":{list}}}"#);
        }
        Some("inspect") => inspect(shared, &request).await,
        Some("search") => search(shared, &request).await,
        Some("upstream") => upstream(shared, &request).await,
        Some("reload") => Ok(reload(shared).await),
        Some("stop") if shared.info.kind == Kind::Daemon => {
            // The answer goes out before the connections close.
            let stop = shared.stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                stop.cancel();
            });
            Ok(json!({"stopping": true}))
        }
        Some("stop") => {
            return error_line(&id, "not_a_daemon", "only a daemon stops on request");
        }
        _ => {
            let ops =
                "op must be call, list, inspect, search, status, metrics, upstream, reload or stop";
            return error_line(&id, "bad_request", ops);
        }
    };
    match outcome {
        Ok(result) => json!({"id": id, "result": result}).to_string(),
        Err(e) => json!({"id": id, "error": {
            "type": e.kind(),
            "message": e.to_string(),
            "help": e.help(),
            "usage": is_usage(&e),
        }})
        .to_string(),
    }
}

async fn call(shared: &Shared, request: &Value) -> Result<Value, GatewayError> {
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
    let arguments = request
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let timeout = request
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .map(Duration::from_millis);
    shared
        .gateway
        .call_server_tool(text("server"), text("tool"), arguments, timeout)
        .await
}

/// Every server's report, starting nothing, as `{"reports": […]}`. With
/// `"definitions": false` (`list` without SERVER), a report whose tools are all counted and
/// untouched by the overrides carries `null`s for its definitions: the command line exposes
/// and counts them as they are, so it needs their number only (and a report whose tools
/// needed repairs keeps them: the command line says what was repaired).
async fn list(shared: &Shared, request: &Value) -> String {
    let definitions = request.get("definitions").and_then(Value::as_bool) != Some(false);
    let overrides = (!definitions).then(|| shared.gateway.overrides()).flatten();
    let counted = |r: &crate::catalog::ServerReport| {
        overrides.as_ref().is_some_and(|o| {
            r.tool_tokens.len() == r.tools.len()
                && o.for_server(&r.stack, &r.config_name).is_none()
                && r.repairs().is_empty()
        })
    };
    shared
        .gateway
        .with_reports(|reports| views::reports_json(reports, counted))
        .await
}

/// One server's report, listed live over its (lazily started) session.
async fn inspect(shared: &Shared, request: &Value) -> Result<Value, GatewayError> {
    let server = request
        .get("server")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let report = shared.gateway.live_report(server).await?;
    Ok(json!({ "report": views::report_json(&report) }))
}

/// A search over the daemon's catalog, as `search` asks it.
async fn search(shared: &Shared, request: &Value) -> Result<Value, GatewayError> {
    let bad = |message: String| GatewayError::BadInput {
        message,
        help: "send query, method, limit, server and schema".into(),
    };
    let method = match request.get("method").and_then(Value::as_str) {
        Some(method) => method.parse::<Method>().map_err(bad)?,
        None => return Err(bad("no method".into())),
    };
    let query = Query {
        text: request
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        method,
        limit: request
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(5, |n| n.clamp(1, 1000) as usize),
        server: request.get("server").and_then(Value::as_str),
    };
    let schemas = request.get("schema").and_then(Value::as_bool) == Some(true);
    let found = shared.gateway.search_catalog(&query, schemas).await?;
    let mut answer = views::found_json(&found);
    answer["servers"] = json!(shared.gateway.server_names());
    Ok(answer)
}

/// `{"op":"upstream","server":S,"action":"stop"|"restart"}` (`mcp-launch top`'s keys): ends
/// the server's session now (the next request starts it again), and for `restart` starts it
/// at once. An always-on server, or one a request holds, is not stopped.
async fn upstream(shared: &Shared, request: &Value) -> Result<Value, GatewayError> {
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
    let (name, action) = (text("server"), text("action"));
    let Some(action) = crate::pool::UpstreamAction::parse(action) else {
        return Err(GatewayError::BadInput {
            message: format!("action `{action}` is neither stop nor restart"),
            help: "send action stop or restart".into(),
        });
    };
    let acted = shared.gateway.pool().act(name, action).await?;
    if acted.refused {
        return Err(GatewayError::BadInput {
            message: format!("server `{name}` is always on or busy with a request"),
            help: "wait for its requests to end; an always-on server is stopped with its gateway"
                .into(),
        });
    }
    Ok(acted.to_json())
}

/// `{"op":"reload"}`: the catalog rebuilt from the overrides and the tool approvals as they
/// are now (`tool approve`, `tool deny` … in any terminal), answered once it is: which
/// gateway, and how many tools it exposes.
async fn reload(shared: &Shared) -> Value {
    let tools = shared.gateway.reload().await;
    json!({
        "kind": shared.info.kind.as_str(),
        "pid": std::process::id(),
        "socket": shared.info.socket,
        "tools": tools,
    })
}

fn is_usage(error: &GatewayError) -> bool {
    matches!(
        error,
        GatewayError::UnknownTool { .. }
            | GatewayError::Denied { .. }
            | GatewayError::Withheld { .. }
            | GatewayError::InvalidArguments { .. }
            | GatewayError::BadInput { .. }
    )
}

fn error_line(id: &Value, kind: &str, message: &str) -> String {
    json!({"id": id, "error": {
        "type": kind,
        "message": message,
        "help": "send one JSON object per line with an `op` (call, list, inspect, search, status, metrics, reload or stop)",
        "usage": true,
    }})
    .to_string()
}

/// The gateway and its upstreams.
fn status(shared: &Shared) -> Value {
    let info = &shared.info;
    let started = shared
        .started
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let pool = shared.gateway.pool();
    let handshake = pool.status().into_iter().map(|s| (s, None));
    let stateless = pool.stateless_status().into_iter();
    let era = crate::mcp::message::STATELESS_PROTOCOL_VERSION;
    let upstreams: Vec<Value> = handshake
        .chain(stateless.map(|s| (s, Some(era))))
        .map(|(s, era)| {
            json!({
                "name": s.name,
                "era": era,
                "state": s.state.as_str(),
                "calls": s.calls,
                "restarts": s.restarts,
                "last_error": s.last_error,
                "idle_for_ms": s.idle_for.map(|d| d.as_millis() as u64),
                "retry_in_ms": s.next_attempt.map(|d| d.as_millis() as u64),
                "always_on": s.always_on,
            })
        })
        .collect();
    json!({
        "kind": info.kind.as_str(),
        "pid": std::process::id(),
        "version": env!("CARGO_PKG_VERSION"),
        "address": info.address,
        "configs": info.configs,
        "cwd": info.cwd,
        "socket": info.socket,
        "started_unix": started,
        "mode": if shared.gateway.is_sparse() { "sparse" } else { "full" },
        "tools": shared.gateway.catalog().tools().len(),
        "upstreams": upstreams,
    })
}
