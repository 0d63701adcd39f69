//! Keeping the catalog current: first checks of the servers the tool index does not know,
//! catalog rebuilds (one at a time), and the watches that trigger them — the overrides file
//! changing, an upstream's own `list_changed`.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::{build_catalog, load_overrides, modified, views, Event, Gateway};
use crate::catalog as tool_catalog;

impl Gateway {
    /// Checks the servers the tool index does not know (in parallel, each stopped after its
    /// check), rebuilds the catalog, and tells clients.
    pub(super) async fn check_unknown(self, unknown: Vec<usize>, settle: watch::Sender<bool>) {
        let checks = unknown.iter().map(|&i| self.check(i));
        futures_util::future::join_all(checks).await;
        self.rebuild().await;
        settle.send_replace(true);
    }

    /// Lists the tools of entry `i` live through the pool, records them in the tool index and
    /// the reports, and stops the server again unless it is always on (or a call took it).
    pub(super) async fn check(&self, i: usize) {
        let entry = &self.inner.entries[i];
        let Ok(upstream) = self.inner.pool.upstream(&entry.qualified) else {
            return;
        };
        let timeout = self.inner.options.connect.list_timeout;
        match upstream.list_tools(timeout).await {
            Ok((info, list)) => {
                let report = tool_catalog::record_live(entry, &info, list).await;
                self.inner.reports.lock().await[i] = report;
            }
            // Stopping: nothing to check for.
            Err(_) if self.inner.pool.is_closing() => {}
            Err(e) => {
                tracing::warn!(server = %entry.qualified, "cannot list its tools: {}", crate::pool::describe(&e));
                // Kept for the command line's `list` through a daemon: why it has no tools (a
                // login wanted is a state of its own, as in the preflight).
                let problem = views::problem_of(&e);
                let mut reports = self.inner.reports.lock().await;
                if problem.needs_login() {
                    reports[i].status = tool_catalog::Status::NeedsLogin;
                }
                reports[i].error = Some(problem);
            }
        }
        upstream.stop_unless_used().await;
    }

    /// Rebuilds the catalog from the reports and the overrides; tells clients when the tools
    /// changed.
    pub(super) async fn rebuild(&self) {
        let _one_at_a_time = self.inner.rebuilding.lock().await;
        let overrides = match load_overrides(&self.inner.options) {
            Ok(overrides) => overrides,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the overrides; the tools stay as they were");
                return;
            }
        };
        let reports = self.inner.reports.lock().await.clone();
        let passthrough = self.inner.options.passthrough;
        let outputs = &self.inner.outputs;
        let catalog = build_catalog(&reports, &overrides, passthrough, outputs).await;
        catalog.warn_repairs(Some(&self.catalog()));
        catalog.warn_changes(Some(&self.catalog()));
        let before = self.list_fingerprint();
        *self
            .inner
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
        self.embed_catalog();
        if self.list_fingerprint() != before {
            tracing::info!("the tools changed; telling clients");
            let _ = self.inner.changed.send(Event::Tools);
        }
        // The catalog it replaced is freed once the requests holding it end.
        self.release_after_answer();
    }

    /// Rebuilds the catalog now, re-reading the overrides and the tool approvals, and returns
    /// how many tools it exposes: what `tool approve` and the overrides' edits ask of every
    /// running gateway over its socket, so the next `tools/list` follows them (the file watch
    /// below catches edits made otherwise, within its poll).
    pub async fn reload(&self) -> usize {
        self.rebuild().await;
        self.catalog().tools().len()
    }

    /// What clients see of the tool list, to tell whether it changed.
    pub(super) fn list_fingerprint(&self) -> u64 {
        tool_catalog::fnv1a(self.tools_json_now().as_bytes())
    }

    /// Rebuilds when `overrides.json` changes (`tool deny` in another terminal, the TUI), or
    /// the tool approvals do (`tool approve`).
    pub(super) async fn watch_overrides(self) {
        let path = self
            .inner
            .options
            .project_dir
            .join(crate::catalog::OVERRIDES_FILE);
        let approvals = crate::catalog::Approvals::default_path();
        let modified = |path: &std::path::Path| (modified(path), modified(&approvals));
        let mut seen = modified(&path);
        loop {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
                () = self.inner.shutdown.cancelled() => return,
            }
            let now = modified(&path);
            if now != seen {
                seen = now;
                tracing::info!(path = %path.display(), "the overrides changed");
                self.rebuild().await;
            }
        }
    }

    /// Follows upstream list changes: a server's own `list_changed` re-lists its tools (and
    /// records them in the tool index); resources and prompts changes are passed on.
    pub(super) async fn watch_upstreams(self) {
        super::follow::watch_upstreams(self).await;
    }

    /// Re-lists `server`'s tools once its session is up when its report came from the tool
    /// index (listing starts nothing, so this waits for the server's first start): the server
    /// may have changed a definition since the index saw it — a rug pull the approvals must
    /// see, as the native bridge's check of the same servers does for `up`'s spec (a changed
    /// tool is then flagged, and withheld under `pin: strict`) — or the index listed its tools
    /// for a client offering less than the gateway relays (`mcp-launch list` declares no client
    /// capabilities; server-everything then leaves out the tools that need them).
    pub(super) async fn relist_if_from_index(&self, server: &str) {
        let Some(i) = self.index_of(server) else {
            return;
        };
        let from_index = self.inner.reports.lock().await[i].status == tool_catalog::Status::Cached;
        if from_index {
            tracing::debug!(
                server,
                "its tools came from the tool index; re-listing them live"
            );
            self.refresh_server(server).await;
        }
    }

    /// Re-lists `server`'s tools live and rebuilds the catalog.
    pub(super) async fn refresh_server(&self, server: &str) {
        let Some(i) = self.index_of(server) else {
            return;
        };
        let Ok(upstream) = self.inner.pool.upstream(server) else {
            return;
        };
        let timeout = self.inner.options.connect.list_timeout;
        let (info, list) = match upstream.list_tools(timeout).await {
            Ok(listed) => listed,
            // Stopping: nothing to re-list for.
            Err(_) if self.inner.pool.is_closing() => return,
            Err(e) => {
                tracing::warn!(server, error = %e, "cannot re-list the tools");
                return;
            }
        };
        self.keep_listed(i, &info, list).await;
        self.rebuild().await;
    }
}
