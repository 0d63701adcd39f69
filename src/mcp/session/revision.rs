//! The stateless revision (2026-07-28, SEP-2575) on our side: `server/discover` opens the
//! session, and every request carries our `_meta` (protocol version, capabilities, client
//! info) unless its caller put its client's.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ConnectOptions, Endpoint, ServerInfo, Session};
use crate::mcp::error::McpError;
use crate::mcp::message::{RpcError, META_PREFIX, STATELESS_PROTOCOL_VERSION, UNSUPPORTED_VERSION};

/// The `_meta` of our own requests in the stateless revision: its version, no capabilities.
pub fn own_meta() -> serde_json::Map<String, Value> {
    meta_offering(json!({}))
}

/// [`own_meta`] declaring the client capabilities `capabilities`.
pub(super) fn meta_offering(capabilities: Value) -> serde_json::Map<String, Value> {
    [
        ("protocolVersion", json!(STATELESS_PROTOCOL_VERSION)),
        ("clientCapabilities", capabilities),
        (
            "clientInfo",
            json!({"name": "mcp-launch", "version": env!("CARGO_PKG_VERSION")}),
        ),
    ]
    .into_iter()
    .map(|(key, value)| (format!("{META_PREFIX}{key}"), value))
    .collect()
}

/// Whether a refusal is "unsupported protocol version" (-32022) listing ours as supported.
fn offers_ours(error: &RpcError) -> bool {
    error.code == UNSUPPORTED_VERSION
        && error
            .data
            .as_ref()
            .and_then(|data| data.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|versions| versions.iter().any(|v| v == STATELESS_PROTOCOL_VERSION))
}

/// How long an HTTP server may take to answer `server/discover` before it is taken for a
/// server of the handshake era ([`ConnectOptions::probe_revision`]).
pub const DISCOVER_WINDOW: Duration = Duration::from_secs(3);

impl Session {
    /// [`Session::connect`], choosing the era of a Streamable HTTP server when
    /// [`ConnectOptions::probe_revision`] asks: `server/discover` within [`DISCOVER_WINDOW`],
    /// and on any answer but one listing the stateless revision (an error, a refusal, no
    /// answer), a fresh connection with the `initialize` handshake. An unreachable server is
    /// not tried twice.
    pub async fn connect_either(
        endpoint: &Endpoint,
        opts: &ConnectOptions,
    ) -> Result<Self, McpError> {
        let http = matches!(endpoint, Endpoint::StreamableHttp { .. });
        if !(http && opts.probe_revision && !opts.stateless) {
            return Session::connect(endpoint, opts).await;
        }
        let modern = ConnectOptions {
            stateless: true,
            fast_window: DISCOVER_WINDOW.min(opts.fast_window),
            slow_window: Duration::ZERO,
            ..*opts
        };
        match Session::connect(endpoint, &modern).await {
            Ok(session) => Ok(session),
            Err(unreachable @ McpError::Connect { .. }) => Err(unreachable),
            Err(refused) => {
                tracing::debug!(error = %refused, "no {STATELESS_PROTOCOL_VERSION} answer to server/discover; using the initialize handshake");
                Session::connect(endpoint, opts).await
            }
        }
    }

    /// The stateless revision's opening: `server/discover`, which must list
    /// [`STATELESS_PROTOCOL_VERSION`] among `supportedVersions` (a server of the handshake era
    /// refuses it, or answers without).
    pub(super) async fn discover(
        &mut self,
        opts: &ConnectOptions,
        started: Instant,
    ) -> Result<(), McpError> {
        let params = json!({ "_meta": self.own_meta.clone().unwrap_or_else(own_meta) });
        let asked = self
            .handshake("server/discover", params.clone(), opts)
            .await;
        // A server may refuse the version we first name and list those it speaks (SEP-2575):
        // ask once more when ours is among them.
        let (result, used_slow_window) = match asked {
            Err(McpError::Rpc { error, .. }) if offers_ours(&error) => {
                self.handshake("server/discover", params, opts).await?
            }
            other => other?,
        };
        let supported = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|versions| versions.iter().any(|v| v == STATELESS_PROTOCOL_VERSION));
        if !supported {
            return Err(McpError::Protocol(format!(
                "server/discover does not list {STATELESS_PROTOCOL_VERSION}"
            )));
        }
        let server_info = result
            .get("_meta")
            .and_then(|meta| meta.get(format!("{META_PREFIX}serverInfo")))
            .cloned()
            .unwrap_or(Value::Null);
        let version = STATELESS_PROTOCOL_VERSION;
        let told = (server_info, json!({}));
        self.info = ServerInfo::opened(version, told, &result, started, used_slow_window);
        tracing::info!(
            ms = self.info.init_time.as_millis() as u64,
            "server/discover answered: the server speaks {STATELESS_PROTOCOL_VERSION}"
        );
        Ok(())
    }

    /// `params` with our `_meta` in the stateless revision, unless the caller put its own.
    pub(super) fn stamped(&self, params: Option<Value>) -> Option<Value> {
        let Some(meta) = &self.own_meta else {
            return params;
        };
        let mut params = match params {
            Some(Value::Object(map)) => map,
            None => serde_json::Map::new(),
            other => return other,
        };
        let version = format!("{META_PREFIX}protocolVersion");
        let carried = params
            .get("_meta")
            .is_some_and(|m| m.get(&version).is_some());
        if !carried {
            let entry = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(existing) = entry.as_object_mut() {
                for (key, value) in meta {
                    existing.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
        Some(Value::Object(params))
    }
}
