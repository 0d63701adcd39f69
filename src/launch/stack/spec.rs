//! The stack's published spec: the controller's per-server documents fetched (in process
//! for the native bridge), assembled with the current overrides by `launch::spec::publish`,
//! published to the front together with the gate it enforces, and rebuilt again on the admin
//! route (`mcp-launch openapi`).

use std::sync::Arc;

use futures_util::FutureExt;

use super::{lock, RunningStack, StackError};
use crate::catalog::{Approvals, Overrides};
use crate::launch::front::{ReloadError, ReloadHandler};
use crate::launch::spec::publish::{self, summary_json, Sources};
use crate::launch::state::StackState;

impl RunningStack {
    /// Rebuilds the merged spec from the controller's documents and the current overrides and
    /// publishes it; `public_url` replaces the URL in the spec. Returns the new record.
    pub async fn refresh_spec(&self, public_url: Option<String>) -> Result<StackState, StackError> {
        let inner = &self.inner;
        let names: Vec<String> = inner.served.iter().map(|e| e.name.clone()).collect();
        let (base, key) = &inner.upstream;
        let results = inner
            .controller
            .documents(&inner.client, (base, key), &names)
            .await;
        let overrides = Overrides::load(&inner.project_dir)?;
        let url = match public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => lock(&inner.record).public_url.clone(),
        };
        let tools = lock(&inner.tools).clone();
        let approvals = Approvals::load();
        let sources = Sources {
            stack: &inner.name,
            served: &inner.served,
            tools: &tools,
            approvals: &approvals,
            disabled: &inner.disabled,
            overrides: &overrides,
            url: &url,
            reads_outputs: inner.reads_outputs,
        };
        let published = publish::assemble(&sources, results);
        inner.front.publish(published.document, published.exposure);
        inner.front.follow_public_url(&url);
        let record = {
            let mut record = lock(&inner.record);
            record.public_url = url;
            record.operations = published.operations;
            record.servers = published.servers;
            record.warnings = published.warnings;
            record.clone()
        };
        Ok(record)
    }

    pub(super) fn reload_handler(&self) -> ReloadHandler {
        let weak = Arc::downgrade(&self.inner);
        Arc::new(move |request| {
            let weak = weak.clone();
            async move {
                let failed = |e: StackError| -> ReloadError { Arc::new(e) };
                let inner = weak.upgrade().ok_or_else(|| failed(StackError::Stopping))?;
                let stack = RunningStack { inner };
                let record = stack
                    .refresh_spec(request.public_url)
                    .await
                    .map_err(failed)?;
                stack.save_record().map_err(failed)?;
                Ok(summary_json(&record))
            }
            .boxed()
        })
    }
}
