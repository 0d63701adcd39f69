//! The lean tools server's MCP side, on rmcp (pinned exactly; with `gateway/wire/`, the only
//! modules that name it): stdio, tools only. The client's MCP roots replace the default
//! root (the working directory) when it offers them and no `--root` was given.
//!
//! Roots are deprecated in the 2026 revision (SEP-2577) but live in the 2025 era, which
//! clients still speak.
#![allow(deprecated)]

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::ErrorData;
use serde_json::{json, Value};

use crate::serving::typed;

use super::{Roots, Shared, Tools};

/// Serves `tools` over stdin/stdout until the client closes stdin (or `stop` fires).
pub async fn serve_stdio(
    tools: Tools,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt;
    let (ready, _) = tokio::sync::watch::channel(false);
    let (stdin, stdout) = crate::serving::fds::streams();
    let (transport, written) = crate::serving::stdio::transport(stdin, stdout);
    crate::serving::stdio::served(
        Wire(Arc::new(tools), Arc::new(ready)).serve_with_ct(transport, stop),
        written,
    )
    .await
}

/// The tools, and whether the roots are settled (a client with roots is asked for them
/// first: calls wait for its answer, up to [`ROOTS_WAIT`]).
#[derive(Clone)]
struct Wire(Shared, Arc<tokio::sync::watch::Sender<bool>>);

/// How long a call waits for the client's answer to `roots/list` before using ours.
const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The local directory a `file://` root names (percent-escapes decoded).
fn root_path(uri: &str) -> Option<PathBuf> {
    let path = uri.strip_prefix("file://")?;
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(byte) =
                u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16)
            {
                decoded.push(byte);
                i += 3;
                continue;
            }
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(decoded)))
}

impl Wire {
    /// Asks a client that has roots for them, and takes them (unless `--root` pinned ours).
    async fn take_client_roots(&self, context: &NotificationContext<RoleServer>) {
        let offers_roots = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if !offers_roots || self.0.is_pinned {
            self.1.send_replace(true);
            return;
        }
        let Ok(listed) = context.peer.list_roots().await else {
            self.1.send_replace(true);
            return;
        };
        let dirs: Vec<PathBuf> = listed
            .roots
            .iter()
            .filter_map(|root| root_path(&root.uri))
            .filter(|path| path.is_dir())
            .collect();
        match Roots::new(&dirs) {
            Ok(roots) => {
                tracing::info!(roots = ?roots.dirs(), "using the client's roots");
                self.0.offer_roots(roots);
            }
            Err(e) => tracing::warn!(error = %e, "the client's roots are unusable; keeping ours"),
        }
        self.1.send_replace(true);
    }
}

impl ServerHandler for Wire {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities =
            serde_json::from_value(json!({"tools": {}})).unwrap_or_default();
        let mut info = InitializeResult::new(capabilities);
        info.server_info = Implementation::new("mcp-launch-tools", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        typed(Tools::list())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut ready = self.1.subscribe();
        let _ = tokio::time::timeout(ROOTS_WAIT, ready.wait_for(|ready| *ready)).await;
        let tools = Arc::clone(&self.0);
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let name = request.name.to_string();
        let result = tokio::task::spawn_blocking(move || tools.call(&name, &arguments))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        typed(result).map(CallToolResponse::Complete)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Asked off the service loop, which must stay free to read the client's answer.
        let this = self.clone();
        tokio::spawn(async move { this.take_client_roots(&context).await });
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        let this = self.clone();
        tokio::spawn(async move { this.take_client_roots(&context).await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            root_path("file:///tmp/a%20b"),
            Some(PathBuf::from("/tmp/a b"))
        );
        assert_eq!(root_path("file:///x"), Some(PathBuf::from("/x")));
        assert_eq!(root_path("https://x"), None);
    }
}
