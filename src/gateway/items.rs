//! Resources, resource templates and prompts of every server, under server-prefixed names
//! (`server__prompt`) and URIs (`server+file:///x`: a valid URI whose scheme names the
//! server), and the upstreams' own list changes followed.
//!
//! Unlike tools, these are not in the tool index: they are listed from the servers that are
//! running (so listing starts nothing) and remembered (`known`), so a server that is not
//! running is listed as last seen; clients are told (`list_changed`) when a server that offers
//! them comes up. In passthrough mode the one server is started to list them.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::mcp::Session;
use crate::pool::Upstream;

use super::error::GatewayError;
use super::names::SEPARATOR;
use super::{Event, Gateway, Stateless};

/// Pages of one list followed per server at most.
const MAX_PAGES: usize = 20;

/// One kind of listed item.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `resources/list`
    Resources,
    /// `resources/templates/list`
    Templates,
    /// `prompts/list`
    Prompts,
}

impl Kind {
    fn method(self) -> &'static str {
        match self {
            Kind::Resources => "resources/list",
            Kind::Templates => "resources/templates/list",
            Kind::Prompts => "prompts/list",
        }
    }

    /// The result's array key.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
            Kind::Prompts => "prompts",
        }
    }

    fn capability(self) -> &'static str {
        match self {
            Kind::Resources | Kind::Templates => "resources",
            Kind::Prompts => "prompts",
        }
    }
}

impl Gateway {
    /// Every server's items of `kind`, renamed with their server: listed from the running
    /// ones (and remembered), as last seen for the others (nothing is started to list).
    pub async fn list_items(&self, kind: Kind) -> Vec<Value> {
        let mut all = Vec::new();
        for upstream in self.inner.pool.servers() {
            for mut item in self.items_of(upstream, kind).await {
                self.rename(upstream.name(), kind, &mut item);
                all.push(item);
            }
        }
        all
    }

    /// `upstream`'s items of `kind` under their own names: listed when it runs (and
    /// remembered), else as last seen.
    async fn items_of(&self, upstream: &Arc<Upstream>, kind: Kind) -> Vec<Value> {
        match self.listing_session(upstream).await {
            Some(session) if session.info().capabilities.get(kind.capability()).is_none() => {
                Vec::new()
            }
            Some(session) => {
                let listed = self.list_pages(upstream, &session, kind).await;
                self.inner.known.remember(upstream.name(), kind, &listed);
                listed
            }
            None => self.inner.known.items(upstream.name(), kind),
        }
    }

    /// The session to list from: a running one; in passthrough mode, the one server started.
    async fn listing_session(&self, upstream: &Arc<Upstream>) -> Option<Arc<Session>> {
        if self.inner.options.passthrough {
            return upstream.session().await.ok();
        }
        upstream.current_session()
    }

    async fn list_pages(
        &self,
        upstream: &Arc<Upstream>,
        session: &Arc<Session>,
        kind: Kind,
    ) -> Vec<Value> {
        let timeout = self.inner.options.connect.list_timeout;
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor
                .take()
                .map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let page = match upstream
                .request_on(session, kind.method(), params, timeout)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(server = upstream.name(), method = kind.method(), error = %e, "cannot list");
                    break;
                }
            };
            if let Some(Value::Array(list)) = page.get(kind.key()) {
                items.extend(list.iter().cloned());
            }
            match page.get("nextCursor") {
                Some(next @ Value::String(_)) => cursor = Some(next.clone()),
                _ => break,
            }
        }
        items
    }

    fn rename(&self, server: &str, kind: Kind, item: &mut Value) {
        if self.inner.options.passthrough {
            return;
        }
        match kind {
            Kind::Prompts => prefix_field(item, "name", &format!("{server}{SEPARATOR}")),
            Kind::Resources => {
                prefix_field(item, "uri", &scheme_prefix(server));
                prefix_field(item, "name", &format!("{server}{SEPARATOR}"));
            }
            Kind::Templates => {
                prefix_field(item, "uriTemplate", &scheme_prefix(server));
                prefix_field(item, "name", &format!("{server}{SEPARATOR}"));
            }
        }
    }

    /// `resources/read` of an exposed URI on its server; the contents' URIs come back renamed.
    pub async fn read_resource(
        &self,
        uri: &str,
        stateless: Option<&Stateless>,
    ) -> Result<Value, GatewayError> {
        let (upstream, own) = match self.route_uri(uri) {
            Ok(routed) => routed,
            Err(unknown) => (
                self.owner_of_raw(uri).await.ok_or(unknown)?,
                uri.to_string(),
            ),
        };
        let mut params = json!({"uri": own});
        let upstream = self.stamped(upstream, stateless, &mut params).await?;
        let mut result = upstream
            .request("resources/read", params, self.inner.options.call_timeout)
            .await
            .map_err(GatewayError::from_pool)?;
        if let Some(Value::Array(contents)) = result.get_mut("contents") {
            for content in contents {
                self.rename(upstream.name(), Kind::Resources, content);
            }
        }
        Ok(result)
    }

    /// `prompts/get` of an exposed prompt name on its server.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Value>,
        stateless: Option<&Stateless>,
    ) -> Result<Value, GatewayError> {
        let (upstream, own) = self.route_name(name, "prompt")?;
        let mut params = json!({"name": own});
        if let Some(arguments) = arguments {
            params["arguments"] = arguments;
        }
        let upstream = self.stamped(upstream, stateless, &mut params).await?;
        let mut result = upstream
            .request("prompts/get", params, self.inner.options.call_timeout)
            .await
            .map_err(GatewayError::from_pool)?;
        if let Some(Value::Array(messages)) = result.get_mut("messages") {
            for message in messages {
                if let Some(content) = message.get_mut("content") {
                    self.link_content(upstream.name(), content);
                }
            }
        }
        Ok(result)
    }

    /// A tool result's content items as the client can follow them: the URIs of resource
    /// links and embedded resources in the form `resources/read` takes (`server+uri`).
    pub(super) fn link_result(&self, server: &str, result: &mut Value) {
        if let Some(Value::Array(content)) = result.get_mut("content") {
            for item in content {
                self.link_content(server, item);
            }
        }
    }

    /// One content item's URI (a `resource_link`'s, an embedded `resource`'s) renamed.
    fn link_content(&self, server: &str, item: &mut Value) {
        if self.inner.options.passthrough {
            return;
        }
        let target = match item.get("type").and_then(Value::as_str) {
            Some("resource_link") => Some(item),
            Some("resource") => item.get_mut("resource"),
            _ => None,
        };
        if let Some(target) = target {
            prefix_field(target, "uri", &scheme_prefix(server));
        }
    }

    /// The upstream a request of `stateless` reaches on `upstream`'s server (`era_upstream`),
    /// with `params` stamped for it when it speaks the stateless revision.
    async fn stamped(
        &self,
        upstream: &Arc<Upstream>,
        stateless: Option<&Stateless>,
        params: &mut Value,
    ) -> Result<Arc<Upstream>, GatewayError> {
        let upstream = self.era_upstream(upstream, stateless).await?;
        if let Some(call) = stateless.filter(|_| upstream.is_stateless()) {
            call.stamp(params);
        }
        Ok(upstream)
    }

    /// `completion/complete`, routed by its `ref` (a prompt name or a resource URI).
    pub async fn complete(&self, mut params: Value) -> Result<Value, GatewayError> {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let (upstream, key, own) = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
                let (upstream, own) = self.route_name(name, "prompt")?;
                (upstream, "name", own)
            }
            _ => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
                let (upstream, own) = self.route_uri(uri)?;
                (upstream, "uri", own)
            }
        };
        params["ref"][key] = Value::String(own);
        upstream
            .request(
                "completion/complete",
                params,
                self.inner.options.call_timeout,
            )
            .await
            .map_err(GatewayError::from_pool)
    }

    /// `logging/setLevel`: kept for servers that start later, and passed to every running
    /// server that logs.
    pub async fn set_log_level(&self, level: Value) {
        *self
            .inner
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(level.clone());
        let timeout = self.inner.options.connect.list_timeout;
        for upstream in self.inner.pool.servers() {
            let Some(session) = upstream.current_session() else {
                continue;
            };
            if session.info().capabilities.get("logging").is_none() {
                continue;
            }
            let params = json!({"level": level});
            if let Err(e) = upstream
                .request_on(&session, "logging/setLevel", params, timeout)
                .await
            {
                tracing::debug!(server = upstream.name(), error = %e, "logging/setLevel refused");
            }
        }
    }

    fn log_level(&self) -> Option<Value> {
        self.inner
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `resources/subscribe` or `resources/unsubscribe` of an exposed URI, on its server.
    pub async fn subscription(&self, method: &str, uri: &str) -> Result<(), GatewayError> {
        let (upstream, own) = self.route_uri(uri)?;
        upstream
            .request(method, json!({"uri": own}), self.inner.options.call_timeout)
            .await
            .map(drop)
            .map_err(GatewayError::from_pool)
    }

    /// The server and own name behind an exposed prompt name.
    fn route_name(
        &self,
        name: &str,
        what: &'static str,
    ) -> Result<(&Arc<Upstream>, String), GatewayError> {
        let servers = self.inner.pool.servers();
        if self.inner.options.passthrough {
            if let Some(only) = servers.first() {
                return Ok((only, name.to_string()));
            }
        }
        servers
            .iter()
            .find_map(|u| {
                let own = name.strip_prefix(u.name())?.strip_prefix(SEPARATOR)?;
                Some((u, own.to_string()))
            })
            .ok_or_else(|| GatewayError::UnknownItem {
                what,
                name: name.to_string(),
            })
    }

    /// The server and own URI behind an exposed URI.
    fn route_uri(&self, uri: &str) -> Result<(&Arc<Upstream>, String), GatewayError> {
        let servers = self.inner.pool.servers();
        if self.inner.options.passthrough {
            if let Some(only) = servers.first() {
                return Ok((only, uri.to_string()));
            }
        }
        servers
            .iter()
            .find_map(|u| Some((u, uri.strip_prefix(&scheme_prefix(u.name()))?.to_string())))
            .ok_or_else(|| GatewayError::UnknownItem {
                what: "resource",
                name: uri.to_string(),
            })
    }
}

impl Gateway {
    /// The one server a URI not in the gateway's form belongs to (a link a result carried
    /// before links were renamed, or one a client kept): the server whose resources or
    /// templates name it, else whose resources share its scheme. `None` when no server or
    /// several do.
    async fn owner_of_raw(&self, uri: &str) -> Option<&Arc<Upstream>> {
        let mut named = Vec::new();
        let mut same_scheme = Vec::new();
        let scheme = uri.split_once(':').map(|(scheme, _)| scheme)?;
        for upstream in self.inner.pool.servers() {
            let mut own = self.items_of(upstream, Kind::Resources).await;
            own.extend(self.items_of(upstream, Kind::Templates).await);
            let uris: Vec<&str> = own
                .iter()
                .filter_map(|item| item.get("uri").or_else(|| item.get("uriTemplate")))
                .filter_map(Value::as_str)
                .collect();
            if uris.iter().any(|own| names_uri(own, uri)) {
                named.push(upstream);
            } else if uris
                .iter()
                .any(|own| own.split_once(':').map(|(s, _)| s) == Some(scheme))
            {
                same_scheme.push(upstream);
            }
        }
        match (named.as_slice(), same_scheme.as_slice()) {
            ([one], _) | ([], [one]) => Some(*one),
            _ => None,
        }
    }
}

/// Whether a resource URI or template (`demo://r/{id}`) names `uri`: equal, or its fixed
/// start (up to the first `{`) starts it.
fn names_uri(own: &str, uri: &str) -> bool {
    match own.split_once('{') {
        Some((fixed, _)) => !fixed.is_empty() && uri.starts_with(fixed),
        None => own == uri,
    }
}

/// `github+`: the server's name as URI scheme characters, and the joining `+`.
fn scheme_prefix(server: &str) -> String {
    let cleaned: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = if cleaned.starts_with(|c: char| c.is_ascii_alphabetic()) {
        cleaned
    } else {
        format!("s{cleaned}")
    };
    format!("{cleaned}+")
}

fn prefix_field(item: &mut Value, key: &str, prefix: &str) {
    if let Some(Value::String(value)) = item.get_mut(key) {
        *value = format!("{prefix}{value}");
    }
}

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
            let server = upstream.name().to_string();
            let stateless = upstream.is_stateless();
            gateway.spawn(follow(gateway.clone(), server, session, stateless));
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

/// Passes on what `server`'s `session` announces. A stateless-revision session's tool changes
/// are told to clients as they are (the catalog lists the handshake process's tools, which
/// did not change).
async fn follow(gateway: Gateway, server: String, session: Arc<Session>, stateless: bool) {
    let mut notices = session.notifications();
    let closed = session.closed();
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
            "notifications/tools/list_changed" if stateless => {
                let _ = gateway.inner.changed.send(Event::Tools);
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

/// A JSON object from optional arguments (`None` → `{}`).
pub fn object(arguments: Option<Map<String, Value>>) -> Value {
    Value::Object(arguments.unwrap_or_default())
}
