//! The era of a remote server, chosen once and reused (issue 26): a Streamable HTTP server's
//! first connect asks `server/discover` and falls back to `initialize`
//! ([`Session::connect_either`]); the tool index records the protocol version it then spoke,
//! and later connects go straight to that era. Should the server have changed era since, the
//! remembered one fails and the connect probes afresh.

use crate::config::{ServerEntry, ServerSpec};
use crate::mcp::message::STATELESS_PROTOCOL_VERSION;
use crate::mcp::{ConnectOptions, Endpoint, McpError, Session};

use super::index::ToolIndex;

/// Connects to `entry` at `endpoint` in the era the index remembers, else as `opts` say.
pub(super) async fn connect(
    entry: &ServerEntry,
    endpoint: &Endpoint,
    opts: &ConnectOptions,
) -> Result<Session, McpError> {
    let Some(remembered) = remembered(entry, opts) else {
        return Session::connect_either(endpoint, opts).await;
    };
    match Session::connect(endpoint, &remembered).await {
        Err(refused) if !matches!(refused, McpError::Connect { .. }) => {
            tracing::debug!(error = %refused, "the era the index remembers failed; probing again");
            Session::connect_either(endpoint, opts).await
        }
        connected => connected,
    }
}

/// The options for the era the index recorded for an HTTP server `opts` would probe.
fn remembered(entry: &ServerEntry, opts: &ConnectOptions) -> Option<ConnectOptions> {
    let http = matches!(entry.spec, Ok(ServerSpec::Http { .. }));
    if !(http && opts.probe_revision && !opts.stateless) {
        return None;
    }
    let index = ToolIndex::open();
    let version = index.protocol_version_of(entry)?;
    Some(ConnectOptions {
        stateless: version == STATELESS_PROTOCOL_VERSION,
        probe_revision: false,
        ..*opts
    })
}
