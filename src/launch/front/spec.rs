//! One server's part of the merged spec, for `GET /<server>/openapi.json`.
//!
//! The controllers' own per-server documents list every tool the server has, denied ones too;
//! the merged spec already leaves those out (and applies the description overrides). So the
//! front answers this path itself, from the merged spec, and a denied tool never shows.

use axum::body::Bytes;
use serde_json::{json, Map, Value};

/// The paths of `server` in the merged `spec` (JSON), as a document of their own: paths
/// relative to `/<server>`, `servers[0].url` pointing there, the merged components kept.
pub(super) fn server_part(spec: &Bytes, server: &str) -> Bytes {
    let Ok(mut merged) = serde_json::from_slice::<Value>(spec) else {
        return Bytes::from_static(b"{}");
    };
    let prefix = format!("/{server}/");
    let paths: Map<String, Value> = merged["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(path, item)| {
            let tool = path.strip_prefix(&prefix)?;
            Some((format!("/{tool}"), item.clone()))
        })
        .collect();
    let base = merged["servers"][0]["url"]
        .as_str()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_string();
    merged["paths"] = Value::Object(paths);
    merged["servers"] = json!([{"url": format!("{base}/{server}")}]);
    if let Some(info) = merged.get_mut("info").and_then(Value::as_object_mut) {
        let title = info
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default();
        info.insert("title".into(), json!(format!("{title} — {server}")));
    }
    Bytes::from(serde_json::to_vec(&merged).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_published_paths_remain() {
        let merged = json!({
            "openapi": "3.1.0", "info": {"title": "stack a"},
            "servers": [{"url": "https://x.example/"}],
            "paths": {"/everything/echo": {"post": {}}, "/time/now": {"post": {}}},
            "components": {"schemas": {"E": {}}}
        });
        let part = server_part(&Bytes::from(merged.to_string()), "everything");
        let part: Value = serde_json::from_slice(&part).unwrap();
        assert_eq!(part["paths"], json!({"/echo": {"post": {}}}));
        assert_eq!(
            part["servers"],
            json!([{"url": "https://x.example/everything"}])
        );
        assert_eq!(part["components"], merged["components"]);
    }
}
