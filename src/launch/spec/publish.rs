//! What a stack publishes: the merged document and the gate the front enforces (one
//! [`Exposure`], so the two never disagree), assembled from the controller's per-server
//! documents and the project's overrides, with the counts and warnings its record keeps.

use std::collections::BTreeMap;
use std::fmt::Display;

use serde_json::{json, Value};

use super::{merge, MergeOptions, ServerDocument};
use crate::catalog::{Approvals, Overrides};
use crate::config::ServerEntry;
use crate::launch::state::{ServerCount, StackState};
use crate::launch::{Exposure, ServerExposure};

/// What the spec is built from, besides the documents.
pub struct Sources<'a> {
    /// The stack's name.
    pub stack: &'a str,
    /// The servers the controller serves, in order (parallel to the documents).
    pub served: &'a [ServerEntry],
    /// Their tool definitions by server, checked against `approvals`.
    pub tools: &'a BTreeMap<String, Vec<Value>>,
    /// The user's approved definitions: a changed tool is warned of, and withheld when its
    /// server is pinned strictly.
    pub approvals: &'a Approvals,
    /// Servers disabled at launch (never started).
    pub disabled: &'a [String],
    /// The project's overrides, as they are now.
    pub overrides: &'a Overrides,
    /// The URL the spec names.
    pub url: &'a str,
    /// The native bridge budgets results: `POST /read_output` is let through and documented.
    pub reads_outputs: bool,
}

/// The spec to publish and what the stack's record says about it.
pub struct Published {
    /// The merged OpenAPI document.
    pub document: Value,
    /// The gate the front enforces.
    pub exposure: Exposure,
    /// Operations in the document.
    pub operations: usize,
    /// Operations per server.
    pub servers: Vec<ServerCount>,
    /// Servers whose document could not be had, and what the merge left out.
    pub warnings: Vec<String>,
}

/// Builds the spec from one document (or the reason there is none) per served server. A
/// server disabled since the launch keeps running; the gate refuses it.
pub fn assemble<E: Display>(sources: &Sources<'_>, documents: Vec<Result<Value, E>>) -> Published {
    let mut warnings = Vec::new();
    let mut kept = Vec::new();
    let mut exposure = Exposure::new();
    exposure.set_reads_outputs(sources.reads_outputs);
    for (entry, result) in sources.served.iter().zip(documents) {
        let document = match result {
            Ok(document) => document,
            Err(e) => {
                warnings.push(e.to_string());
                continue;
            }
        };
        let server = &entry.name;
        let enabled = !sources.overrides.is_disabled(entry);
        let tools = tool_names(&document);
        exposure.insert(
            server.clone(),
            Exposure::server_from_overrides(
                sources.overrides,
                sources.stack,
                server,
                enabled,
                tools.iter().map(String::as_str),
            ),
        );
        if enabled {
            withhold_changed(sources, entry, &mut exposure, &mut warnings);
            kept.push((server.clone(), document));
        }
    }
    for server in sources.disabled {
        let never_started = ServerExposure {
            enabled: false,
            started: false,
            tools: Default::default(),
        };
        exposure.insert(server.clone(), never_started);
    }
    let inputs: Vec<ServerDocument<'_>> = kept
        .iter()
        .map(|(server, document)| ServerDocument { server, document })
        .collect();
    let options = MergeOptions::for_stack(sources.stack, sources.url.to_string());
    let merged = merge(&inputs, &exposure, &options);
    warnings.extend(merged.warnings.iter().map(ToString::to_string));
    let servers = merged
        .per_server
        .iter()
        .map(|(name, operations)| ServerCount {
            name: name.clone(),
            operations: *operations,
        })
        .collect();
    Published {
        document: merged.document,
        exposure,
        operations: merged.operations,
        servers,
        warnings,
    }
}

/// Warns of the server's tools whose definitions changed since they were approved, and
/// withholds them when the server is pinned strictly (refused by the front as `tool_withheld`,
/// left out of the spec).
fn withhold_changed(
    sources: &Sources<'_>,
    entry: &ServerEntry,
    exposure: &mut Exposure,
    warnings: &mut Vec<String>,
) {
    let tools = sources
        .tools
        .get(&entry.name)
        .map_or(&[][..], Vec::as_slice);
    let changed = sources.approvals.changed(&entry.stack, &entry.name, tools);
    let Some(first) = changed.first() else {
        return;
    };
    let server = &entry.name;
    let how = if sources.overrides.pin(&entry.stack, server).is_strict() {
        changed
            .iter()
            .for_each(|tool| exposure.withhold(server, tool));
        "withheld until approved (pin: strict)"
    } else {
        "served as changed"
    };
    warnings.push(format!(
        "server {server}: tool definitions changed since approved: {} — {how}; review them \
         (`mcp-launch inspect {server} {first}`), then `mcp-launch tool approve {server} {first}`",
        changed.join(", ")
    ));
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

/// The tool names of a per-server document: its paths without the leading slash.
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
