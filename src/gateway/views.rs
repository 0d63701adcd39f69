//! What the command line reads through a daemon (`list`, `inspect`, `search`): each server's
//! report and searches over the catalog. `list` and `search` start no server: a running one is
//! read over its warm session, the others as the tool index or the gateway's own first check
//! saw them. `inspect` asks the pool for the server (started lazily, then kept warm).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::error::GatewayError;
use super::Gateway;
use crate::catalog::{
    self as tool_catalog, tool, RelayedProblem, ServerProblem, ServerReport, Status,
};
use crate::error::Actionable;
use crate::pool::PoolError;
use crate::search::{Hit, Meaning, Method, Query, ToolDoc};

/// How long `list` waits for a running server to re-list its tools (it is warm: this is
/// milliseconds; a server that takes longer keeps its report from the tool index).
const RELIST_WAIT: Duration = Duration::from_secs(2);

/// One search hit as the command line renders it.
#[derive(Debug, Clone)]
pub struct FoundTool {
    /// The hit (its `doc` indexes this catalog's search index; the caller renders `tool`).
    pub hit: Hit,
    /// The tool as search saw it.
    pub tool: ToolDoc,
    /// Its input schema, when asked for.
    pub schema: Option<Value>,
}

/// What a search found, with what `search` says besides the hits.
#[derive(Debug, Clone)]
pub struct Found {
    /// The hits, best first.
    pub hits: Vec<FoundTool>,
    /// How many tools were searched.
    pub searched: usize,
    /// Servers whose tools are unknown (their check failed, or has not finished).
    pub unavailable: Vec<String>,
    /// Tools the overrides deny, not searched.
    pub denied: usize,
}

impl Gateway {
    /// The qualified names of the servers this gateway serves, in config order (enabled ones:
    /// disabled servers are not in the pool).
    pub fn server_names(&self) -> Vec<String> {
        self.inner
            .entries
            .iter()
            .map(|e| e.qualified.clone())
            .collect()
    }

    /// Reads every server's report, in config order, starting nothing: a server the pool is running
    /// whose report came from the tool index is listed live once over its session (its report
    /// then reads `connected`, and the index is updated); the others as they are. Waits (the
    /// list wait at most) for the first checks of servers the index did not know.
    pub async fn with_reports<R>(&self, read: impl FnOnce(&[ServerReport]) -> R) -> R {
        self.wait_settled().await;
        // Running servers whose report is not live yet, with their sessions.
        let running: Vec<_> = (self.inner.reports.lock().await.iter().enumerate())
            .filter(|(_, report)| report.status != Status::Connected)
            .filter_map(|(i, report)| {
                let session = self.inner.pool.get(&report.name)?.current_session()?;
                Some((i, session))
            })
            .collect();
        let relists = running.into_iter().map(|(i, session)| async move {
            let timeout = RELIST_WAIT.min(self.inner.options.connect.list_timeout);
            match session.list_tools(timeout).await {
                Ok(list) => Some(self.keep_listed(i, session.info(), list).await),
                Err(e) => {
                    let server = &self.inner.entries[i].qualified;
                    tracing::debug!(server, error = %e, "cannot re-list; the report stays");
                    None
                }
            }
        });
        let relisted = futures_util::future::join_all(relists).await;
        if relisted.contains(&Some(true)) {
            self.rebuild().await;
        }
        let reports = self.inner.reports.lock().await;
        if !reports
            .iter()
            .any(|r| r.status == Status::Error && r.error.is_none())
        {
            return read(&reports);
        }
        // A first check still under way after the list wait: say so, not a bare error (a copy:
        // the check replaces the report when it ends).
        let mut reports = reports.clone();
        for report in reports.iter_mut().filter(|r| r.status == Status::Error) {
            report.error.get_or_insert_with(|| {
                ServerProblem::Relayed(RelayedProblem {
                    kind: "not_ready",
                    message: "its first check in the daemon has not finished".into(),
                    help: "ask again in a moment (--daemon off checks it here)".into(),
                    is_config: false,
                    scope: None,
                })
            });
        }
        read(&reports)
    }

    /// `server`'s report listed live over its session, started lazily by the pool (and kept
    /// warm for the next call). A server that cannot start is a report with its error.
    pub async fn live_report(&self, server: &str) -> Result<ServerReport, GatewayError> {
        let Some(i) = self.index_of(server) else {
            return Err(PoolError::UnknownServer {
                server: server.to_string(),
            }
            .into());
        };
        let upstream = self.inner.pool.upstream(server)?;
        let timeout = self.inner.options.connect.list_timeout;
        match upstream.list_tools(timeout).await {
            Ok((info, list)) => {
                if self.keep_listed(i, &info, list).await {
                    self.rebuild().await;
                }
                Ok(self.inner.reports.lock().await[i].clone())
            }
            Err(PoolError::ShuttingDown) => Err(PoolError::ShuttingDown.into()),
            Err(e) => {
                let entry = &self.inner.entries[i];
                let blank =
                    ServerReport::blank(entry, self.inner.reports.lock().await[i].transport);
                Ok(ServerReport {
                    error: Some(problem_of(&e)),
                    ..blank
                })
            }
        }
    }

    /// Searches the catalog as `search` does; by meaning only once the model and the tools'
    /// embeddings are in (the model is opened on first use), else [`GatewayError::NotReady`]
    /// (the command line then searches itself rather than rank differently).
    pub async fn search_catalog(
        &self,
        query: &Query<'_>,
        with_schemas: bool,
    ) -> Result<Found, GatewayError> {
        self.wait_settled().await;
        let by_meaning = matches!(query.method, Method::Semantic | Method::Hybrid);
        let catalog = if by_meaning {
            self.open_model();
            self.catalog_embedded().await
        } else {
            self.catalog()
        };
        let model = self.inner.model.get().cloned();
        let meaning = match (by_meaning, &model, catalog.vectors()) {
            (false, _, _) => None,
            (true, Some(model), Some(docs)) => {
                let model = Arc::clone(model);
                let text = query.text.to_string();
                let vector = tokio::task::spawn_blocking(move || model.embed_query(&text))
                    .await
                    .map_err(|e| not_ready(format!("the query's embedding failed: {e}")))?;
                self.release_model_later();
                Some((vector, docs))
            }
            (true, None, _) => return Err(not_ready("no embedding model is open".into())),
            (true, Some(_), None) => {
                return Err(not_ready(
                    "the tools' embeddings are not computed yet".into(),
                ))
            }
        };
        let meaning_ref = meaning
            .as_ref()
            .map(|(query, docs)| Meaning { query, docs });
        let index = catalog.search_index();
        let hits = index
            .search_with(query, meaning_ref)
            .map_err(|e| GatewayError::BadInput {
                message: e.to_string(),
                help: e.help(),
            })?;
        let hits = hits
            .into_iter()
            .filter_map(|hit| {
                let tool = index.doc(hit.doc)?.into_owned();
                let schema = with_schemas
                    .then(|| catalog.find(&tool.server, &tool.tool))
                    .flatten()
                    .map(|t| tool::input_schema(&t.definition));
                Some(FoundTool { hit, tool, schema })
            })
            .collect();
        let unavailable = self
            .inner
            .reports
            .lock()
            .await
            .iter()
            .filter(|r| r.status == Status::Error)
            .map(|r| r.name.clone())
            .collect();
        Ok(Found {
            hits,
            searched: index.len(),
            unavailable,
            denied: catalog.denied_count(query.server),
        })
    }

    /// The project's overrides as they are now (`None` when they cannot be read).
    pub fn overrides(&self) -> Option<crate::catalog::Overrides> {
        super::load_overrides(&self.inner.options).ok()
    }

    /// Opens the installed embedding model if it is not open yet (a daemon opens it for the
    /// command line's searches whatever its mode).
    pub fn open_model(&self) {
        if self.inner.model.get().is_none() {
            self.load_model();
        }
    }

    pub(super) fn index_of(&self, server: &str) -> Option<usize> {
        self.inner
            .entries
            .iter()
            .position(|e| e.qualified == server)
    }

    /// Records what entry `i` listed live (tool index and reports); true when its tools
    /// changed (the catalog needs rebuilding).
    pub(super) async fn keep_listed(
        &self,
        i: usize,
        info: &crate::mcp::ServerInfo,
        list: crate::mcp::ToolList,
    ) -> bool {
        let report = tool_catalog::record_live(&self.inner.entries[i], info, list).await;
        let mut reports = self.inner.reports.lock().await;
        let changed = reports[i].tools != report.tools;
        reports[i] = report;
        changed
    }
}

/// A pool error as a server problem in a report (the failure's own type, message and help).
pub(super) fn problem_of(error: &PoolError) -> ServerProblem {
    match error {
        PoolError::Upstream { error, .. } => ServerProblem::Mcp(error.clone()),
        PoolError::Unavailable { failure, .. } => ServerProblem::Relayed(RelayedProblem {
            kind: failure.cause,
            message: failure.message.clone(),
            help: failure.help.clone(),
            is_config: failure.is_config,
            scope: failure.scope.clone(),
        }),
        other => ServerProblem::Relayed(RelayedProblem {
            kind: other.kind(),
            message: other.to_string(),
            help: other.help(),
            is_config: false,
            scope: None,
        }),
    }
}

fn not_ready(what: String) -> GatewayError {
    GatewayError::NotReady { what }
}
