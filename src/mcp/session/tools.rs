//! Listing a server's tools: the first page with the params shapes servers accept in turn,
//! then `nextCursor` until it ends, repeats or hits the page cap; malformed tools skipped with
//! a warning.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use tracing::Instrument;

use super::Session;
use crate::mcp::error::McpError;
use crate::mcp::headers;
use crate::mcp::limits::TOOL_PAGES;
use crate::mcp::message::METHOD_NOT_FOUND;

/// The tools of a server, with what went wrong while listing them.
#[derive(Debug, Clone, Default)]
pub struct ToolList {
    /// Tool definitions as the server sent them (unknown fields kept).
    pub tools: Vec<Value>,
    /// Non-fatal problems: skipped malformed tools, a repeated cursor, the page cap.
    pub warnings: Vec<String>,
}

impl Session {
    /// Lists every tool: the first page with the params shapes servers accept in turn, then
    /// `nextCursor` until it ends, repeats, or hits the page cap ([`Limits::tool_pages`]).
    pub async fn list_tools(&self, timeout: Duration) -> Result<ToolList, McpError> {
        let span = self.span.clone();
        self.list_tools_in_span(timeout).instrument(span).await
    }

    async fn list_tools_in_span(&self, timeout: Duration) -> Result<ToolList, McpError> {
        let mut list = ToolList::default();
        let mut page = self.first_tools_page(timeout, &mut list).await?;
        let mut seen_cursors = HashSet::new();
        let mut pages = 1;
        loop {
            collect_tools(&page, &mut list);
            let Some(cursor) = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
            else {
                break;
            };
            if !seen_cursors.insert(cursor.clone()) {
                list.warnings.push(format!(
                    "the server repeated cursor {cursor:?}; stopped paging after {pages} pages"
                ));
                break;
            }
            if pages >= self.tool_pages {
                list.warnings.push(format!(
                    "stopped paging after {pages} pages; the server keeps sending cursors \
                     ({} raises the cap)",
                    TOOL_PAGES.name
                ));
                break;
            }
            page = self
                .request("tools/list", Some(json!({"cursor": cursor})), timeout)
                .await?;
            pages += 1;
        }
        if self.own_meta.is_some() {
            drop_unmirrorable(&mut list);
        }
        tracing::info!(tools = list.tools.len(), pages, "tools listed");
        Ok(list)
    }

    /// Every item of a paged list other than tools (`resources/list`,
    /// `resources/templates/list`, `prompts/list`): the array under `key` of each page, until
    /// `nextCursor` ends, repeats or hits the page cap.
    pub async fn list_items(
        &self,
        method: &str,
        key: &str,
        timeout: Duration,
    ) -> Result<Vec<Value>, McpError> {
        let mut items = Vec::new();
        let mut seen_cursors = HashSet::new();
        let mut params = json!({});
        for _ in 0..self.tool_pages {
            let page = self.request(method, Some(params), timeout).await?;
            if let Some(Value::Array(list)) = page.get(key) {
                items.extend(list.iter().cloned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(cursor) if !cursor.is_empty() && seen_cursors.insert(cursor.to_string()) => {
                    params = json!({"cursor": cursor});
                }
                _ => break,
            }
        }
        Ok(items)
    }

    async fn first_tools_page(
        &self,
        timeout: Duration,
        list: &mut ToolList,
    ) -> Result<Value, McpError> {
        // Servers disagree on the shape of an empty first request; some reject `{}`, some
        // reject a missing params key. Move on only when the server rejects the shape.
        let shapes = [
            Some(json!({})),
            Some(json!({"cursor": ""})),
            Some(json!({"cursor": null})),
            None,
        ];
        let mut last_rejection = None;
        for shape in shapes {
            match self.request("tools/list", shape.clone(), timeout).await {
                Ok(page) => return Ok(page),
                Err(McpError::Rpc { error, .. }) if error.code == METHOD_NOT_FOUND => {
                    list.warnings
                        .push("the server does not implement tools/list".to_string());
                    return Ok(json!({"tools": []}));
                }
                Err(rejection @ McpError::Rpc { .. }) => {
                    tracing::debug!(?shape, error = %rejection, "tools/list params shape rejected");
                    last_rejection = Some(rejection);
                }
                Err(other) => return Err(other),
            }
        }
        Err(last_rejection.unwrap_or_else(|| McpError::Protocol("tools/list failed".into())))
    }
}

/// Appends the well-formed tools of one page; a malformed tool is skipped with a warning
/// instead of losing the whole page.
pub(super) fn collect_tools(page: &Value, list: &mut ToolList) {
    let Some(tools) = page.get("tools").and_then(Value::as_array) else {
        list.warnings
            .push("a tools/list page had no \"tools\" array".to_string());
        return;
    };
    for tool in tools {
        match tool.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => list.tools.push(tool.clone()),
            _ => list.warnings.push(format!(
                "skipped a tool without a name: {}",
                truncate(&tool.to_string(), 120)
            )),
        }
    }
}

/// Leaves out the tools whose `x-mcp-header` annotations break the 2026-07-28 revision's
/// rules (their calls could not carry the headers the server relies on), with a warning each.
fn drop_unmirrorable(list: &mut ToolList) {
    let warnings = &mut list.warnings;
    list.tools
        .retain(|tool| match headers::param_headers(tool) {
            Ok(_) => true,
            Err(why) => {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                warnings.push(format!("skipped tool `{name}`: {why}"));
                false
            }
        });
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
