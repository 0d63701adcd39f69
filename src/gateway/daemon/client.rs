//! The command line's side of the socket.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio_util::codec::{FramedRead, LinesCodec};

use super::{views, DaemonError, MAX_LINE};
use crate::catalog::ServerReport;
use crate::gateway::Found;
use crate::search::Method;

/// How long a gateway may take to greet a new connection.
const GREETING_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a status or stop may take to answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long stopping or restarting an upstream may take (a restart waits for both
/// handshake windows of a slow server).
const CONTROL_TIMEOUT: Duration = Duration::from_secs(60);
/// What a call's answer may take beyond the call's own timeout (the daemon bounds the call).
const CALL_MARGIN: Duration = Duration::from_secs(5);
/// How long `list` and `search` may take to answer: the daemon waits at most its list wait
/// (5 s) for first checks and starts nothing; beyond this it is stuck, and the command line
/// answers itself.
const VIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// A search as `search` asks the daemon for it.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// How to match.
    pub method: Method,
    /// Hits at most.
    pub limit: usize,
    /// Only this server's tools (qualified name).
    pub server: Option<String>,
    /// Include each hit's input schema.
    pub schemas: bool,
}

/// What the daemon's search found, and which servers it searched.
#[derive(Debug, Clone)]
pub struct SearchAnswer {
    /// The servers the daemon serves (qualified names, config order).
    pub servers: Vec<String>,
    /// The hits and what `search` says besides.
    pub found: Found,
}

/// One call: the server's qualified name, the tool's own name, its arguments.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The server (qualified name).
    pub server: String,
    /// The tool.
    pub tool: String,
    /// A JSON object.
    pub arguments: Value,
    /// How long the call may take.
    pub timeout: Duration,
}

impl CallRequest {
    fn line(&self, id: u64) -> String {
        json!({
            "id": id,
            "op": "call",
            "server": self.server,
            "tool": self.tool,
            "arguments": self.arguments,
            "timeout_ms": self.timeout.as_millis() as u64,
        })
        .to_string()
    }
}

/// Which file `path` names (device and inode), when there is one.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// A connection to a gateway's socket.
pub struct Client {
    socket: PathBuf,
    lines: FramedRead<OwnedReadHalf, LinesCodec>,
    write: OwnedWriteHalf,
    next_id: u64,
}

impl Client {
    /// Connects to `socket`; `None` when no gateway listens there (a file a dead gateway left
    /// is removed).
    pub async fn connect(socket: &Path) -> Result<Option<Client>, DaemonError> {
        let tried = file_id(socket);
        let stream = match UnixStream::connect(socket).await {
            Ok(stream) => stream,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                // Only the file that refused: a gateway that linked its socket into place
                // meanwhile keeps it.
                if tried.is_some() && file_id(socket) == tried {
                    let _ = std::fs::remove_file(socket);
                }
                return Ok(None);
            }
            Err(source) => {
                return Err(DaemonError::Io {
                    socket: socket.to_path_buf(),
                    source,
                })
            }
        };
        let (read, write) = stream.into_split();
        let mut client = Client {
            socket: socket.to_path_buf(),
            lines: FramedRead::new(read, LinesCodec::new_with_max_length(MAX_LINE)),
            write,
            next_id: 1,
        };
        // A gateway greets first; a socket that takes the connection and then drops it (its
        // gateway dying) is as good as none, and nothing was sent to it.
        match client.receive(GREETING_TIMEOUT).await {
            Ok(greeting) if greeting.get("mcp-launch").is_some() => Ok(Some(client)),
            Ok(_) => Err(client.broken("did not greet as a gateway".into())),
            Err(e) => {
                tracing::debug!(error = %e, "the socket did not greet: no gateway there");
                Ok(None)
            }
        }
    }

    /// The socket this client talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// One call, answered with the tool's `CallToolResult`.
    pub async fn call(&mut self, call: &CallRequest) -> Result<Value, DaemonError> {
        let id = self.send_call(call).await?;
        let answer = self.receive(call.timeout + CALL_MARGIN).await?;
        self.expect_id(&answer, id)?;
        result_of(answer)
    }

    /// The gateway and its upstreams.
    pub async fn status(&mut self) -> Result<Value, DaemonError> {
        self.ask("status").await
    }

    /// The gateway's metrics, as `/metrics` serves them (OpenMetrics text).
    pub async fn metrics(&mut self) -> Result<String, DaemonError> {
        let answer = self.ask("metrics").await?;
        Ok(answer["text"].as_str().unwrap_or_default().to_string())
    }

    /// Every server's report as the daemon knows it (it starts nothing for this). Without
    /// `definitions`, a report the overrides leave untouched and whose tools are all counted
    /// carries `null`s for its tools' definitions (`list` without SERVER needs their number
    /// and token counts only).
    pub async fn reports(&mut self, definitions: bool) -> Result<Vec<ServerReport>, DaemonError> {
        // Decoded from the line into reports at once: the answer holds every tool's definition,
        // and a `Value` of it first cost the command line a few milliseconds.
        let id = self.next();
        let request = json!({"id": id, "op": "list", "definitions": definitions});
        self.send(request.to_string()).await?;
        let line = self.receive_line(VIEW_TIMEOUT).await?;
        match views::reports_answer(&line) {
            Some((got, _)) if got != id => {
                Err(self.broken(format!("answered another request than {id}")))
            }
            Some((_, Ok(reports))) => Ok(reports),
            Some((_, Err(error))) => result_of(json!({ "error": error })).map(|_| Vec::new()),
            None => Err(self.broken("sent reports that do not decode".into())),
        }
    }

    /// `server`'s report listed live over the daemon's session (started lazily); `limit`
    /// bounds the wait (a first start included).
    pub async fn inspect(
        &mut self,
        server: &str,
        limit: Duration,
    ) -> Result<ServerReport, DaemonError> {
        let request = json!({"op": "inspect", "server": server});
        let mut answer = self.request(request, limit).await?;
        (answer.get_mut("report").map(Value::take))
            .and_then(views::report_from)
            .ok_or_else(|| self.broken("sent a report that does not decode".into()))
    }

    /// A search over the daemon's catalog.
    pub async fn search(&mut self, search: &SearchRequest) -> Result<SearchAnswer, DaemonError> {
        let request = json!({
            "op": "search",
            "query": search.query,
            "method": search.method.as_str(),
            "limit": search.limit,
            "server": search.server,
            "schema": search.schemas,
        });
        let answer = self.request(request, VIEW_TIMEOUT).await?;
        let servers = (answer.get("servers").and_then(Value::as_array)).and_then(|names| {
            (names.iter())
                .map(|n| n.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
        });
        match (servers, views::found_from(&answer)) {
            (Some(servers), Some(found)) => Ok(SearchAnswer { servers, found }),
            _ => Err(self.broken("sent search results that do not decode".into())),
        }
    }

    /// Stops or restarts one upstream server (`action`: `stop` or `restart`); a restart
    /// answers once the server is up again (or failed to start).
    pub async fn upstream(&mut self, server: &str, action: &str) -> Result<Value, DaemonError> {
        let request = json!({"op": "upstream", "server": server, "action": action});
        self.request(request, CONTROL_TIMEOUT).await
    }

    /// Has the gateway rebuild its catalog from the overrides and tool approvals as they are
    /// now; answers once it has (`{"kind","pid","socket","tools"}`).
    pub async fn reload(&mut self) -> Result<Value, DaemonError> {
        self.request(json!({"op": "reload"}), VIEW_TIMEOUT).await
    }

    /// Asks a daemon to stop.
    pub async fn stop(&mut self) -> Result<(), DaemonError> {
        self.ask("stop").await.map(drop)
    }

    /// Runs `calls` with up to `window` under way at once, reporting each as it finishes
    /// (by its index in `calls`).
    pub async fn batch(
        &mut self,
        calls: &[CallRequest],
        window: usize,
        mut each: impl FnMut(usize, Result<Value, DaemonError>),
    ) -> Result<(), DaemonError> {
        let mut pending: VecDeque<usize> = (0..calls.len()).collect();
        let mut under_way = std::collections::HashMap::new();
        let longest = calls.iter().map(|c| c.timeout).max().unwrap_or_default();
        loop {
            while under_way.len() < window.max(1) {
                let Some(index) = pending.pop_front() else {
                    break;
                };
                under_way.insert(self.send_call(&calls[index]).await?, index);
            }
            if under_way.is_empty() {
                return Ok(());
            }
            let answer = self.receive(longest + CALL_MARGIN).await?;
            let id = answer.get("id").and_then(Value::as_u64).unwrap_or_default();
            let index = under_way
                .remove(&id)
                .ok_or_else(|| self.broken(format!("answered an unknown id {id}")))?;
            each(index, result_of(answer));
        }
    }

    async fn ask(&mut self, op: &str) -> Result<Value, DaemonError> {
        self.request(json!({ "op": op }), ASK_TIMEOUT).await
    }

    /// Sends `request` (an object; its id is set here) and waits `limit` for its answer.
    async fn request(&mut self, mut request: Value, limit: Duration) -> Result<Value, DaemonError> {
        let id = self.next();
        request["id"] = json!(id);
        self.send(request.to_string()).await?;
        let answer = self.receive(limit).await?;
        self.expect_id(&answer, id)?;
        result_of(answer)
    }

    async fn send_call(&mut self, call: &CallRequest) -> Result<u64, DaemonError> {
        let id = self.next();
        self.send(call.line(id)).await?;
        Ok(id)
    }

    fn next(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    async fn send(&mut self, mut line: String) -> Result<(), DaemonError> {
        line.push('\n');
        self.write
            .write_all(line.as_bytes())
            .await
            .map_err(|source| DaemonError::Io {
                socket: self.socket.clone(),
                source,
            })
    }

    async fn receive(&mut self, limit: Duration) -> Result<Value, DaemonError> {
        let line = self.receive_line(limit).await?;
        serde_json::from_str(&line).map_err(|e| self.broken(format!("sent bad JSON: {e}")))
    }

    async fn receive_line(&mut self, limit: Duration) -> Result<String, DaemonError> {
        match tokio::time::timeout(limit, self.lines.next()).await {
            Err(_) => Err(self.broken(format!("did not answer within {limit:?}"))),
            Ok(None) => Err(self.broken("closed the connection".into())),
            Ok(Some(Err(e))) => Err(self.broken(e.to_string())),
            Ok(Some(Ok(line))) => Ok(line),
        }
    }

    fn expect_id(&self, answer: &Value, id: u64) -> Result<(), DaemonError> {
        match answer.get("id").and_then(Value::as_u64) {
            Some(got) if got == id => Ok(()),
            _ => Err(self.broken(format!("answered another request than {id}"))),
        }
    }

    fn broken(&self, problem: String) -> DaemonError {
        DaemonError::Protocol {
            socket: self.socket.clone(),
            problem,
        }
    }
}

/// `ask` of every gateway of this user that answers on its socket, in parallel (sockets
/// nobody answers on are cleaned away); the answers that came.
pub async fn ask_every_gateway<F, Fut>(ask: F) -> Vec<Value>
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = Option<Value>>,
{
    let Ok(dir) = super::runtime_dir() else {
        return Vec::new();
    };
    let asks = super::sockets(&dir).into_iter().map(|socket| {
        let ask = &ask;
        async move { ask(Client::connect(&socket).await.ok()??).await }
    });
    futures_util::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Has every running gateway of this user (daemons, `serve` over stdio or HTTP) rebuild its
/// catalog from the overrides and tool approvals as they are now, in parallel: what
/// `tool approve`, the TUI's approval and the overrides' edits do, so a gateway's next
/// `tools/list` follows them. Returns the answers of those that did, once they have; a
/// gateway that does not answer still follows the files within its watch's poll.
pub async fn reload_every_gateway() -> Vec<Value> {
    ask_every_gateway(|mut client| async move {
        match client.reload().await {
            Ok(answer) => Some(answer),
            Err(e) => {
                tracing::debug!(error = %e, "a gateway did not reload; its file watch follows");
                None
            }
        }
    })
    .await
}

/// The answer's `result`, or its `error` as [`DaemonError::Remote`].
fn result_of(mut answer: Value) -> Result<Value, DaemonError> {
    if let Some(error) = answer.get("error") {
        let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or_default();
        return Err(DaemonError::Remote {
            kind: text("type").to_string(),
            message: text("message").to_string(),
            help: text("help").to_string(),
            usage: error.get("usage").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    Ok(answer
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}
