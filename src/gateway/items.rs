//! Resources, resource templates and prompts of every server, under server-prefixed names
//! (`server__prompt`) and URIs (`server+file:///x`: a valid URI whose scheme names the
//! server), and the upstreams' own list changes followed.
//!
//! Unlike tools, these are not in the tool index: they are listed from the servers that are
//! running (so listing starts nothing) and remembered (`known`), so a server that is not
//! running is listed as last seen; clients are told (`list_changed`) when a server that offers
//! them comes up. In passthrough mode the one server is started to list them.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::mcp::Session;
use crate::pool::Upstream;

use super::error::GatewayError;
use super::names::SEPARATOR;
use super::reach::ItemReach;
use super::{Gateway, Stateless};

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

    /// The member naming an item as a client's allow-list may (`Clients::shows`).
    fn exposed_key(self) -> &'static str {
        match self {
            Kind::Resources => "uri",
            Kind::Templates => "uriTemplate",
            Kind::Prompts => "name",
        }
    }

    /// An item of this kind of `server`, exposed as `exposed`, as an allow-list names it.
    pub(super) fn names<'a>(
        self,
        server: &'a str,
        exposed: &'a str,
    ) -> crate::catalog::ItemNames<'a> {
        let kind = match self {
            Kind::Resources | Kind::Templates => crate::catalog::ItemKind::Resource,
            Kind::Prompts => crate::catalog::ItemKind::Prompt,
        };
        crate::catalog::ItemNames {
            kind,
            server,
            exposed,
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
    /// Every server's items of `kind` that `reach` shows, renamed with their server: listed
    /// from the running ones (and remembered), as last seen for the others (nothing is
    /// started to list).
    pub async fn list_items(&self, kind: Kind, reach: &ItemReach) -> Vec<Value> {
        let mut all = Vec::new();
        for upstream in self.inner.pool.servers() {
            for mut item in self.items_of(upstream, kind).await {
                self.rename(upstream.name(), kind, &mut item);
                let exposed = item.get(kind.exposed_key()).and_then(Value::as_str);
                if reach.shows(kind.names(upstream.name(), exposed.unwrap_or_default())) {
                    all.push(item);
                }
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

    pub(super) fn rename(&self, server: &str, kind: Kind, item: &mut Value) {
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
        reach: &ItemReach,
    ) -> Result<Value, GatewayError> {
        let (upstream, own) = match self.route_uri(uri) {
            Ok(routed) => routed,
            Err(unknown) => (
                self.owner_of_raw(uri).await.ok_or(unknown)?,
                uri.to_string(),
            ),
        };
        self.within(reach, Kind::Resources, upstream, &own, uri)?;
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
        reach: &ItemReach,
    ) -> Result<Value, GatewayError> {
        let (upstream, own) = self.route_name(name, "prompt")?;
        self.within(reach, Kind::Prompts, upstream, &own, name)?;
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
    pub async fn complete(
        &self,
        mut params: Value,
        reach: &ItemReach,
    ) -> Result<Value, GatewayError> {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let (upstream, key, own) = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
                let (upstream, own) = self.route_name(name, "prompt")?;
                self.within(reach, Kind::Prompts, upstream, &own, name)?;
                (upstream, "name", own)
            }
            _ => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
                let (upstream, own) = self.route_uri(uri)?;
                self.within(reach, Kind::Resources, upstream, &own, uri)?;
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

    pub(super) fn log_level(&self) -> Option<Value> {
        self.inner
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `resources/subscribe` or `resources/unsubscribe` of an exposed URI, on its server.
    pub async fn subscription(
        &self,
        method: &str,
        uri: &str,
        reach: &ItemReach,
    ) -> Result<(), GatewayError> {
        let (upstream, own) = self.route_uri(uri)?;
        self.within(reach, Kind::Resources, upstream, &own, uri)?;
        upstream
            .request(method, json!({"uri": own}), self.inner.options.call_timeout)
            .await
            .map(drop)
            .map_err(GatewayError::from_pool)
    }

    /// Whether a client of `reach` may hear of the resource `uri` (exposed form): its
    /// `notifications/resources/updated`.
    pub fn shows_resource(&self, reach: &ItemReach, uri: &str) -> bool {
        self.route_uri(uri).is_ok_and(|(upstream, own)| {
            (self.within(reach, Kind::Resources, upstream, &own, uri)).is_ok()
        })
    }

    /// Refuses, as unknown, `upstream`'s item `own` (asked for as `asked`) when `reach` does
    /// not show it.
    fn within(
        &self,
        reach: &ItemReach,
        kind: Kind,
        upstream: &Upstream,
        own: &str,
        asked: &str,
    ) -> Result<(), GatewayError> {
        let mut exposed = json!({kind.exposed_key(): own});
        self.rename(upstream.name(), kind, &mut exposed);
        let exposed = exposed[kind.exposed_key()].as_str().unwrap_or_default();
        match reach.shows(kind.names(upstream.name(), exposed)) {
            true => Ok(()),
            false => Err(GatewayError::UnknownItem {
                what: match kind {
                    Kind::Prompts => "prompt",
                    Kind::Resources | Kind::Templates => "resource",
                },
                name: asked.to_string(),
            }),
        }
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

/// A JSON object from optional arguments (`None` → `{}`).
pub fn object(arguments: Option<Map<String, Value>>) -> Value {
    Value::Object(arguments.unwrap_or_default())
}
