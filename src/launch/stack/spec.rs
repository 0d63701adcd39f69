//! The stack's published spec: rebuilt from the controller's per-server documents and the
//! current overrides, published to the front together with the gate it enforces, and rebuilt
//! again on the admin route (`mcp-launch openapi`).

use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::{json, Value};

use super::{lock, RunningStack, StackError};
use crate::catalog::Overrides;
use crate::launch::controller::mcpo;
use crate::launch::front::{ReloadError, ReloadHandler};
use crate::launch::openapi::{merge, MergeOptions, ServerDocument};
use crate::launch::state::{ServerCount, StackState};
use crate::launch::{Exposure, ServerExposure};

impl RunningStack {
    /// Rebuilds the merged spec from the controller's documents and the current overrides and
    /// publishes it; `public_url` replaces the URL in the spec. Returns the new record.
    pub async fn refresh_spec(&self, public_url: Option<String>) -> Result<StackState, StackError> {
        let inner = &self.inner;
        let names: Vec<String> = inner.served.iter().map(|e| e.name.clone()).collect();
        let results = match inner.controller.bridge() {
            // In this process: its documents as they are, no request to ourselves.
            Some(bridge) => names
                .iter()
                .map(|name| {
                    bridge
                        .document(name)
                        .ok_or_else(|| mcpo::ControllerError::Fetch {
                            server: name.clone(),
                            message: "not served by the native bridge".into(),
                        })
                })
                .collect(),
            None => {
                let (base, key) = &inner.upstream;
                mcpo::fetch_documents(&inner.client, base, key, &names).await
            }
        };
        let overrides = Overrides::load(&inner.project_dir)?;
        let mut warnings = Vec::new();
        let mut documents = Vec::new();
        let mut exposure = Exposure::new();
        for (entry, result) in inner.served.iter().zip(results) {
            let server = &entry.name;
            match result {
                Ok(document) => {
                    let tools: Vec<String> = tool_names(&document);
                    // Disabled since the launch: it keeps running, the front refuses it.
                    let enabled = !overrides.is_disabled(entry);
                    exposure.insert(
                        server.clone(),
                        Exposure::server_from_overrides(
                            &overrides,
                            &inner.name,
                            server,
                            enabled,
                            tools.iter().map(String::as_str),
                        ),
                    );
                    if enabled {
                        documents.push((server.clone(), document));
                    }
                }
                Err(e) => warnings.push(e.to_string()),
            }
        }
        for server in &inner.disabled {
            exposure.insert(
                server.clone(),
                ServerExposure {
                    enabled: false,
                    started: false,
                    tools: Default::default(),
                },
            );
        }
        let url = match public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => lock(&inner.record).public_url.clone(),
        };
        let inputs: Vec<ServerDocument<'_>> = documents
            .iter()
            .map(|(server, document)| ServerDocument { server, document })
            .collect();
        let merged = merge(
            &inputs,
            &exposure,
            &MergeOptions::for_stack(&inner.name, url.clone()),
        );
        warnings.extend(merged.warnings.iter().map(ToString::to_string));
        inner.front.publish(merged.document, exposure);
        let record = {
            let mut record = lock(&inner.record);
            record.public_url = url;
            record.operations = merged.operations;
            record.servers = merged
                .per_server
                .iter()
                .map(|(name, operations)| ServerCount {
                    name: name.clone(),
                    operations: *operations,
                })
                .collect();
            record.warnings = warnings;
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

/// The JSON the admin route answers and `openapi --json` prints for a stack.
pub fn summary_json(record: &StackState) -> Value {
    json!({
        "stack": record.name,
        "openapi_url": format!("{}/openapi.json", record.public_url),
        "public_url": record.public_url,
        "operations": record.operations,
        "servers": record.servers.iter().map(|s| json!({"name": s.name, "operations": s.operations})).collect::<Vec<_>>(),
        "warnings": record.warnings,
    })
}

/// The tool names of an mcpo per-server document: its paths without the leading slash.
fn tool_names(document: &Value) -> Vec<String> {
    document
        .get("paths")
        .and_then(Value::as_object)
        .map(|paths| {
            paths
                .keys()
                .map(|p| p.trim_start_matches('/').to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_come_from_paths() {
        let doc = json!({"paths": {"/echo": {}, "/get-sum": {}}});
        assert_eq!(tool_names(&doc), ["echo", "get-sum"]);
        assert!(tool_names(&json!({})).is_empty());
    }
}
