//! `search_tools` by meaning: the embedding model, opened once in sparse mode, and each
//! catalog's tool vectors, computed in the background (from the vector cache: only new tools
//! are embedded) while `search_tools` waits a bounded time for them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::catalog::Catalog;
use super::Gateway;
use crate::catalog as tool_catalog;
use crate::search::semantic::Model;

/// After this long without a search by meaning, the model's pages leave the resident set
/// (searches in a burst keep them: giving them back costs the next search ~7 ms).
const MODEL_QUIET: Duration = Duration::from_secs(30);

impl Gateway {
    /// Gives the model's weights back to the page cache once no search has used them for
    /// [`MODEL_QUIET`]: the gateway's resident set stays small between bursts of searches.
    pub(super) fn release_model_later(&self) {
        let Some(model) = self.inner.model.get().cloned() else {
            return;
        };
        let this_use = self.inner.model_uses.fetch_add(1, Ordering::Relaxed) + 1;
        let gateway = self.clone();
        self.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(MODEL_QUIET) => {
                    if gateway.inner.model_uses.load(Ordering::Relaxed) == this_use {
                        model.release_pages();
                    }
                }
                () = gateway.inner.shutdown.cancelled() => {}
            }
        });
    }

    /// Opens the installed embedding model for `search_tools` (none installed: words only)
    /// and embeds the catalog's tools in the background.
    pub(super) fn load_model(&self) {
        let opened = match crate::model::locate() {
            Ok(Some(dir)) => Model::open(&dir).map_err(|e| e.to_string()),
            Ok(None) => return,
            Err(e) => Err(e.to_string()),
        };
        match opened {
            Ok(model) => {
                let _ = self.inner.model.set(Arc::new(model));
                self.embed_catalog();
            }
            Err(e) => tracing::warn!(error = %e, "search_tools ranks by words only"),
        }
    }

    /// Computes the current catalog's tool embeddings on a blocking thread (from the vector
    /// cache; only new tools are embedded); until they are in, `search_tools` ranks by words.
    pub(super) fn embed_catalog(&self) {
        let Some(model) = self.inner.model.get().cloned() else {
            return;
        };
        let catalog = self.catalog();
        let gateway = self.clone();
        let task = tokio::task::spawn_blocking(move || {
            let docs = catalog.search_index().docs();
            let vectors = tool_catalog::tool_vectors(&model, docs, |n| {
                tracing::info!(tools = n, "embedding tools for search_tools");
            });
            catalog.set_vectors(vectors);
            gateway.inner.embedded.notify_waiters();
        });
        self.spawn(async move {
            let _ = task.await;
        });
    }

    /// The catalog, once its tools' embeddings are in (a bounded wait: with the vector cache
    /// warm they take milliseconds; a first embedding of thousands of tools takes minutes,
    /// and meanwhile `search_tools` ranks by words).
    pub(super) async fn catalog_embedded(&self) -> Arc<Catalog> {
        const WAIT: Duration = Duration::from_secs(3);
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            // Registered before the check, so vectors landing in between still wake us.
            let landed = self.inner.embedded.notified();
            tokio::pin!(landed);
            landed.as_mut().enable();
            let catalog = self.catalog();
            let ready = self.inner.model.get().is_none() || catalog.vectors().is_some();
            if ready || tokio::time::timeout_at(deadline, landed).await.is_err() {
                return catalog;
            }
        }
    }
}
