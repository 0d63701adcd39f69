//! The upstreams followed as their sessions come up: their tool list changes re-list their
//! tools, their resources and prompts changes (and their arrival, when they offer them) and
//! resource updates are passed on to clients.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{json, Value};

use crate::backoff::Backoff;
use crate::mcp::Session;
use crate::pool::Upstream;

use super::items::Kind;
use super::{Event, Gateway};

/// Follows every session as it comes up: its `tools/list_changed` re-lists its tools; its
/// resources and prompts changes (and its arrival, when it offers them) are passed on.
pub(super) async fn watch_upstreams(gateway: Gateway) {
    let mut changes = gateway.inner.pool.changes();
    let mut watched = Followed::default();
    loop {
        let pool = &gateway.inner.pool;
        for upstream in pool.servers().iter().chain(pool.stateless_servers()) {
            let Some(session) = upstream.current_session() else {
                continue;
            };
            if !watched.first_sight(&session) {
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

/// The sessions already followed, known by identity. Each is held by a weak reference, which
/// keeps its allocation from being reused while it is listed: known by address alone, a
/// session that ended could leave its address to a new one, never followed then (its listen
/// stream never opened, its list changes never heard). The ended are let go at each look.
struct Followed<T>(Vec<Weak<T>>);

impl<T> Default for Followed<T> {
    fn default() -> Self {
        Followed(Vec::new())
    }
}

impl<T> Followed<T> {
    /// Whether `session` is seen for the first time (it is followed from now on).
    fn first_sight(&mut self, session: &Arc<T>) -> bool {
        self.0.retain(|known| known.strong_count() > 0);
        if self
            .0
            .iter()
            .any(|known| known.as_ptr() == Arc::as_ptr(session))
        {
            return false;
        }
        self.0.push(Arc::downgrade(session));
        true
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

/// How soon a `subscriptions/listen` stream the server ended is opened again: 1 s, doubling
/// while the server keeps ending it soon after it opened, up to a minute.
const RELISTEN: Backoff =
    Backoff::new(Duration::from_secs(1), Duration::from_secs(60)).stable_after(STABLE_LISTEN);

/// A listen stream that stayed open this long was not ended for being opened.
const STABLE_LISTEN: Duration = Duration::from_secs(60);

/// The notification that opens every listen stream.
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// A server's tools changed.
const TOOLS_CHANGED: &str = "notifications/tools/list_changed";

/// The list changes a listen stream asks for (and what a stream opened again stands for).
const LIST_CHANGES: [&str; 3] = [
    TOOLS_CHANGED,
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
];

/// Asks a stateless-revision session for its list changes (`subscriptions/listen`): that
/// server process has its own state, and the clients calling it should hear of them. A
/// stream the server ends while the session lives is opened again ([`RELISTEN`]); what it
/// announced meanwhile is not replayed, so [`follow`] takes the new stream's acknowledgement
/// as a change of every list.
fn listen(gateway: &Gateway, session: &Arc<Session>) {
    let weak = Arc::downgrade(session);
    let stopping = gateway.inner.shutdown.clone();
    gateway.spawn(async move {
        let mut backoff = RELISTEN;
        while let Some(stream) = open_listen(&weak) {
            backoff.started();
            stream.await;
            if weak.upgrade().is_none_or(|session| session.is_closed()) {
                return;
            }
            let (delay, attempt) = backoff.next_delay();
            tracing::debug!(
                ?delay,
                attempt,
                "the server ended its listen stream; listening again"
            );
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = stopping.cancelled() => return,
            }
        }
    });
}

/// The listen request on `session`, while it is open; its future ends with the stream.
fn open_listen(session: &Weak<Session>) -> Option<impl std::future::Future<Output = ()>> {
    let session = session.upgrade().filter(|session| !session.is_closed())?;
    let params = json!({
        "notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourcesListChanged": true},
        "_meta": crate::mcp::own_meta(),
    });
    Some(session.open_stream("subscriptions/listen", params))
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
    let heard = Heard {
        gateway: &gateway,
        server: &server,
        session: &weak,
        era,
    };
    let mut acknowledged = 0_u32;
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
        if notice.method == ACKNOWLEDGED {
            acknowledged += 1;
            heard.acknowledged(acknowledged).await;
            continue;
        }
        heard.pass_on(&notice.method, notice.params).await;
    }
}

/// Where what one followed session announces goes.
struct Heard<'a> {
    gateway: &'a Gateway,
    server: &'a str,
    session: &'a Weak<Session>,
    era: Era,
}

impl Heard<'_> {
    /// The server acknowledged the session's listen stream (the `count`th time). What it
    /// announced before is not replayed: after a stream it ended, every list is taken as
    /// changed; before the first, an HTTP server's tools are listed again (the catalog's list
    /// came from the tool index or a list made before the stream opened; clients hear only if
    /// it differs).
    async fn acknowledged(&self, count: u32) {
        if count > 1 {
            for method in LIST_CHANGES {
                self.pass_on(method, None).await;
            }
        } else if self.era == Era::SameServer {
            self.pass_on(TOOLS_CHANGED, None).await;
        }
    }

    /// Passes on the notification `method` (with `params`) the server sent.
    async fn pass_on(&self, method: &str, params: Option<Value>) {
        let (gateway, server) = (self.gateway, self.server);
        match method {
            "notifications/tools/list_changed" if self.era == Era::OwnProcess => {
                let _ = gateway.inner.changed.send(Event::Tools);
            }
            "notifications/tools/list_changed" if self.era == Era::SameServer => {
                if let Some(session) = self.session.upgrade() {
                    let timeout = gateway.inner.options.connect.list_timeout;
                    let _ = session.list_tools(timeout).await;
                }
                gateway.refresh_server(server).await;
            }
            "notifications/tools/list_changed" => gateway.refresh_server(server).await,
            "notifications/resources/list_changed" => {
                let _ = gateway.inner.changed.send(Event::Resources);
            }
            "notifications/prompts/list_changed" => {
                let _ = gateway.inner.changed.send(Event::Prompts);
            }
            // During a call, its own relay passes the server's messages to the caller.
            "notifications/message" if gateway.inner.callers.is_calling(server) => {}
            "notifications/message" => {
                let _ = gateway
                    .inner
                    .changed
                    .send(Event::Log(params.unwrap_or_default()));
            }
            "notifications/resources/updated" => {
                let mut params = params.unwrap_or_default();
                gateway.rename(server, Kind::Resources, &mut params);
                let _ = gateway.inner.changed.send(Event::ResourceUpdated(params));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Followed;

    #[test]
    fn a_session_is_new_once_and_one_ended_leaves_no_trace_on_its_successor() {
        let mut followed = Followed::default();
        let first = Arc::new([0_u64; 8]);
        assert!(followed.first_sight(&first));
        assert!(!followed.first_sight(&Arc::clone(&first)));
        let address = Arc::as_ptr(&first);
        drop(first);
        // The allocator may well hand the ended session's memory to the next one; it is new
        // all the same.
        let reused = (0..64)
            .map(|_| Arc::new([1_u64; 8]))
            .find(|next| Arc::as_ptr(next) == address);
        let next = reused.unwrap_or_else(|| Arc::new([2_u64; 8]));
        assert!(followed.first_sight(&next));
        assert!(!followed.first_sight(&next));
    }
}
