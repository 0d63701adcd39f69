//! The upstreams followed as their sessions come up: their tool list changes re-list their
//! tools, their resources and prompts changes (and their arrival, when they offer them) and
//! resource updates are passed on to clients.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;

use crate::mcp::Session;
use crate::pool::Upstream;

use super::items::Kind;
use super::{Event, Gateway};

/// Follows every session as it comes up: its `tools/list_changed` re-lists its tools; its
/// resources and prompts changes (and its arrival, when it offers them) are passed on.
pub(super) async fn watch_upstreams(gateway: Gateway) {
    let mut changes = gateway.inner.pool.changes();
    let mut watched: HashSet<usize> = HashSet::new();
    loop {
        let pool = &gateway.inner.pool;
        for upstream in pool.servers().iter().chain(pool.stateless_servers()) {
            let Some(session) = upstream.current_session() else {
                continue;
            };
            let key = Arc::as_ptr(&session) as usize;
            if !watched.insert(key) {
                continue;
            }
            if upstream.is_stateless() {
                listen(&gateway, &session);
            } else {
                announce(&gateway, &session);
                let (gateway, server) = (gateway.clone(), upstream.name().to_string());
                gateway
                    .clone()
                    .spawn(async move { gateway.relist_if_from_index(&server).await });
            }
            let era = Era::of(upstream);
            let server = upstream.name().to_string();
            gateway.spawn(follow(gateway.clone(), server, session, era));
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            () = gateway.inner.shutdown.cancelled() => return,
        }
    }
}

/// Tells clients that a new session's resources and prompts are now listed, and passes it
/// the log level a client chose.
fn announce(gateway: &Gateway, session: &Arc<Session>) {
    let capabilities = &session.info().capabilities;
    let level = gateway.log_level();
    if let (Some(level), Some(_)) = (level, capabilities.get("logging")) {
        let session = Arc::clone(session);
        let timeout = gateway.inner.options.connect.list_timeout;
        gateway.spawn(async move {
            let _ = session
                .request("logging/setLevel", Some(json!({"level": level})), timeout)
                .await;
        });
    }
    if capabilities.get("resources").is_some() {
        let _ = gateway.inner.changed.send(Event::Resources);
    }
    if capabilities.get("prompts").is_some() {
        let _ = gateway.inner.changed.send(Event::Prompts);
    }
}

/// Asks a stateless-revision session for its list changes (`subscriptions/listen`): that
/// server process has its own state, and the clients calling it should hear of them.
fn listen(gateway: &Gateway, session: &Arc<Session>) {
    let params = json!({
        "notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourcesListChanged": true},
        "_meta": crate::mcp::own_meta(),
    });
    gateway.spawn(session.open_stream("subscriptions/listen", params));
}

/// Which session of its server a followed session is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Era {
    /// The handshake era's: the catalog lists its tools.
    Handshake,
    /// A stateless-revision process of a stdio server: its state is its own.
    OwnProcess,
    /// A stateless-revision session of an HTTP server: the same server the catalog lists.
    SameServer,
}

impl Era {
    fn of(upstream: &Upstream) -> Era {
        match (upstream.is_stateless(), upstream.is_remote()) {
            (false, _) => Era::Handshake,
            (true, false) => Era::OwnProcess,
            (true, true) => Era::SameServer,
        }
    }
}

/// Passes on what `server`'s `session` announces. A stateless-revision process's tool changes
/// are told to clients as they are (the catalog lists the handshake process's tools, which
/// did not change); an HTTP server's re-list its tools, whichever session heard of them (and
/// the stateless session learns its tools' `Mcp-Param-*` headers again).
async fn follow(gateway: Gateway, server: String, session: Arc<Session>, era: Era) {
    let mut notices = session.notifications();
    let closed = session.closed();
    // Only a weak one kept: a strong one would hold the session for its whole life, and the
    // pool never stops a session a request (any strong holder) holds.
    let weak = Arc::downgrade(&session);
    drop(session);
    tokio::pin!(closed);
    loop {
        let notice = tokio::select! {
            notice = notices.recv() => notice,
            () = &mut closed => return,
        };
        let notice = match notice {
            Ok(notice) => notice,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(_) => return,
        };
        match notice.method.as_str() {
            "notifications/tools/list_changed" if era == Era::OwnProcess => {
                let _ = gateway.inner.changed.send(Event::Tools);
            }
            "notifications/tools/list_changed" if era == Era::SameServer => {
                if let Some(session) = weak.upgrade() {
                    let timeout = gateway.inner.options.connect.list_timeout;
                    let _ = session.list_tools(timeout).await;
                }
                gateway.refresh_server(&server).await;
            }
            "notifications/tools/list_changed" => gateway.refresh_server(&server).await,
            "notifications/resources/list_changed" => {
                let _ = gateway.inner.changed.send(Event::Resources);
            }
            "notifications/prompts/list_changed" => {
                let _ = gateway.inner.changed.send(Event::Prompts);
            }
            // During a call, its own relay passes the server's messages to the caller.
            "notifications/message" if gateway.inner.callers.is_calling(&server) => {}
            "notifications/message" => {
                let _ = gateway
                    .inner
                    .changed
                    .send(Event::Log(notice.params.unwrap_or_default()));
            }
            "notifications/resources/updated" => {
                let mut params = notice.params.unwrap_or_default();
                gateway.rename(&server, Kind::Resources, &mut params);
                let _ = gateway.inner.changed.send(Event::ResourceUpdated(params));
            }
            _ => {}
        }
    }
}
