//! Sparse mode: a fixed handful of meta-tools instead of every tool. The list never varies
//! for a client (the 2026-07-28 revision forbids a tool list that changes per connection or
//! as a side effect of other requests); what is behind it is said in `search_tools`'
//! description and in the server's instructions, so a model knows when searching is worth it —
//! only what the client's [`Reach`] reaches (an OAuth client held to an allow-list or to
//! `tools:read` learns of no other server, count or tool).
//!
//! - `search_tools(query, limit?, server?)`: names, one-line descriptions, required
//!   parameters and scores, from the `search` engine;
//! - `describe_tool(name)`: the full definition;
//! - `call_tool(name, arguments)`: arguments checked against the input schema first (the
//!   violations and the expected shape come back as a tool error the model can fix);
//! - `discover(jsonpath)`: a JSONPath (RFC 9535) query over `{servers, tools}`.

use serde_json::{json, Value};

use crate::catalog::{self, tool};
use crate::search::semantic::Model;
use crate::search::{Meaning, Method, Query};

use super::catalog::{Catalog, ServerSummary};
use super::error::GatewayError;
use super::Reach;

/// The meta-tools' names.
pub const SEARCH: &str = "search_tools";
/// See the module documentation.
pub const DESCRIBE: &str = "describe_tool";
/// See the module documentation.
pub const CALL: &str = "call_tool";
/// See the module documentation.
pub const DISCOVER: &str = "discover";

/// Servers named in `search_tools`' description at most (the rest are counted).
const SERVERS_NAMED: usize = 40;

/// Results `search_tools` gives by default, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 25;

/// The meta-tools, described with what `reach` reaches of `catalog`.
pub fn tools(catalog: &Catalog, reach: &Reach) -> Vec<Value> {
    let servers = reach.servers(catalog);
    vec![
        json!({
            "name": SEARCH,
            "description": format!(
                "Search {} tools by what you want done; then call_tool. Servers: {}.",
                tool_count(&servers),
                server_line(&servers)
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "task or keywords"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    "server": {"type": "string"}
                },
                "required": ["query"]
            },
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": DESCRIBE,
            "description": "Full definition and input schema of a tool.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            },
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": CALL,
            "description": "Call a tool found by search_tools with its arguments.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object"}
                },
                "required": ["name"]
            },
            // A 2025-11-25 client may run any call as a gateway task (`wire::tasks25`).
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": DISCOVER,
            "description": "JSONPath query over {servers, tools}, e.g. $.tools[?@.server=='git'].name",
            "inputSchema": {
                "type": "object",
                "properties": {"jsonpath": {"type": "string"}},
                "required": ["jsonpath"]
            },
            "annotations": {"readOnlyHint": true}
        }),
    ]
}

/// The server's `instructions` in sparse mode: every server `reach` reaches with its tool
/// count and a hint.
pub fn instructions(catalog: &Catalog, reach: &Reach) -> String {
    let servers = reach.servers(catalog);
    let mut text = format!(
        "mcp-launch fronts {} tools on {} servers. Find a tool with search_tools (or discover), \
         read it with describe_tool, run it with call_tool.\n",
        tool_count(&servers),
        servers.len()
    );
    for server in servers.iter() {
        text.push_str(&format!(
            "- {} ({} tools): {}\n",
            server.name, server.tools, server.summary
        ));
    }
    text
}

/// The tools of `servers` (a client's [`Reach::servers`]).
pub fn tool_count(servers: &[ServerSummary]) -> usize {
    servers.iter().map(|s| s.tools).sum()
}

/// `git (12), github (40), …`: every server with tools, most first are not reordered.
fn server_line(servers: &[ServerSummary]) -> String {
    let named_servers: Vec<String> = servers
        .iter()
        .filter(|s| s.tools > 0)
        .take(SERVERS_NAMED)
        .map(|s| format!("{} ({})", s.name, s.tools))
        .collect();
    let named = named_servers.len();
    let with_tools = servers.iter().filter(|s| s.tools > 0).count();
    let mut line = named_servers.join(", ");
    if with_tools > named {
        line.push_str(&format!(" and {} more", with_tools - named));
    }
    line
}

/// Whether `name` is one of the meta-tools.
pub fn is_meta(name: &str) -> bool {
    matches!(name, SEARCH | DESCRIBE | DISCOVER)
}

/// Runs `search_tools`, `describe_tool` or `discover` (not `call_tool`: the gateway calls).
/// With a `model` and the catalog's embeddings, `search_tools` ranks by meaning and words.
pub fn run(
    catalog: &Catalog,
    model: Option<&Model>,
    name: &str,
    arguments: &Value,
    reach: &Reach,
) -> Result<Value, GatewayError> {
    match name {
        SEARCH => search(catalog, model, arguments, reach),
        DESCRIBE => describe(catalog, arguments, reach),
        _ => discover(catalog, arguments, reach),
    }
}

fn search(
    catalog: &Catalog,
    model: Option<&Model>,
    arguments: &Value,
    reach: &Reach,
) -> Result<Value, GatewayError> {
    let text = string_arg(arguments, "query", SEARCH)?;
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
    let server = arguments.get("server").and_then(Value::as_str);
    let servers = reach.servers(catalog);
    if let Some(server) = server.filter(|s| !servers.iter().any(|k| k.name == *s)) {
        let names = servers.iter().map(|s| s.name.as_str());
        let help = match catalog::similar_names(server, names, 3).as_slice() {
            [] => format!(
                "leave `server` out, or pick one of: {}",
                server_line(&servers)
            ),
            near => format!("did you mean `{}`?", near.join("`, `")),
        };
        return Err(bad_input(
            format!("{SEARCH}: no server is named `{server}`"),
            &help,
        ));
    }
    let embedded = model
        .zip(catalog.vectors())
        .map(|(model, docs)| (model.embed_query(text), docs));
    let query = Query {
        text,
        method: if embedded.is_some() {
            Method::Hybrid
        } else {
            Method::Bm25
        },
        // Hits out of reach are dropped below: a narrowed client's search ranks every tool,
        // so that its `limit` is filled with tools it reaches.
        limit: match reach.is_everything(catalog) {
            true => limit,
            false => catalog.tools().len().max(limit),
        },
        server,
    };
    let meaning = embedded
        .as_ref()
        .map(|(query, docs)| Meaning { query, docs });
    let hits = catalog
        .search_index()
        .search_with(&query, meaning)
        .map_err(|e| bad_input(e.to_string(), "use plain words"))?;
    let docs: Vec<_> = hits
        .iter()
        .filter_map(|hit| Some((hit.score, catalog.search_index().doc(hit.doc)?.into_owned())))
        .collect();
    let results: Vec<Value> = docs
        .iter()
        .filter_map(|(score, doc)| {
            let found = catalog
                .find(&doc.server, &doc.tool)
                .filter(|found| reach.allows(catalog, found))?;
            Some(json!({
                "name": found.name,
                "description": first_line(tool::description(&found.definition)),
                "required": doc.required,
                "score": (score * 100.0).round() / 100.0,
            }))
        })
        .take(limit)
        .collect();
    let hint = if results.is_empty() {
        "no tool fits; try other words, or discover to browse"
    } else {
        "describe_tool for the schema, or call_tool directly"
    };
    Ok(text_result(&json!({"results": results, "next": hint})))
}

fn describe(catalog: &Catalog, arguments: &Value, reach: &Reach) -> Result<Value, GatewayError> {
    let name = string_arg(arguments, "name", DESCRIBE)?;
    let found = catalog
        .get(name)
        .filter(|found| reach.allows(catalog, found))
        .ok_or_else(|| named_in(DESCRIBE, reach.unknown(catalog, name)))?;
    Ok(text_result(&found.definition))
}

/// The tool `call_tool` names, checked: a missing or unknown name is a bad argument (a tool
/// error the model reads and fixes), as the arguments are.
pub fn check_call(
    catalog: &Catalog,
    arguments: &Value,
    inner: &Value,
    reach: &Reach,
) -> Result<(), GatewayError> {
    let name = string_arg(arguments, "name", CALL)?;
    // Before the arguments' check, which would describe a tool the client's list leaves out.
    if catalog
        .get(name)
        .is_none_or(|tool| !reach.lists(catalog, tool))
    {
        return Err(named_in(CALL, reach.unknown(catalog, name)));
    }
    validate(catalog, name, inner).map_err(|e| named_in(CALL, e))
}

/// An unknown name given to the meta-tool `meta`: a bad argument of that call, not an
/// unknown tool of the protocol (a JSON-RPC error there makes SDK clients raise and ends an
/// agent's loop), with the nearest names or where to find them.
fn named_in(meta: &str, error: GatewayError) -> GatewayError {
    match error {
        GatewayError::UnknownTool { name, suggestions } => {
            let help = match suggestions.is_empty() {
                true => format!("{SEARCH} finds a tool by what it does; pass its `name`"),
                false => format!("did you mean `{}`?", suggestions.join("`, `")),
            };
            bad_input(format!("{meta}: no tool is named `{name}`"), &help)
        }
        other => other,
    }
}

/// A JSONPath over the servers and tools `reach` reaches.
fn discover(catalog: &Catalog, arguments: &Value, reach: &Reach) -> Result<Value, GatewayError> {
    let path = string_arg(arguments, "jsonpath", DISCOVER)?;
    let parsed = crate::outputs::read::parse_jsonpath(path).map_err(|e| {
        bad_input(
            format!("not a JSONPath: {e}"),
            "e.g. $.servers[*].name or $.tools[?@.server=='git'].name",
        )
    })?;
    let document = catalog.document(&reach.servers(catalog), |t| reach.allows(catalog, t));
    let found: Vec<&Value> = parsed.query(&document).all();
    Ok(text_result(&json!(found)))
}

/// Checks `arguments` against the tool's input schema: `Err` lists the violations.
pub fn validate(catalog: &Catalog, name: &str, arguments: &Value) -> Result<(), GatewayError> {
    let found = catalog.get(name).ok_or_else(|| unknown(catalog, name))?;
    let invalid = |violations| GatewayError::InvalidArguments {
        name: name.to_string(),
        violations,
        expected: catalog::expected_shape(&found.definition),
    };
    if !arguments.is_object() {
        return Err(invalid(vec!["arguments must be a JSON object".into()]));
    }
    let violations = catalog::argument_validator(&found.definition)
        .map(|validator| catalog::violations(&validator, arguments))
        .unwrap_or_default();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(invalid(violations))
    }
}

/// The error for a name nothing is exposed under (or that the overrides deny, or that is
/// withheld until its changed definition is approved).
pub fn unknown(catalog: &Catalog, name: &str) -> GatewayError {
    if let Some((server, tool)) = catalog.withheld(name) {
        return GatewayError::Withheld {
            server: server.clone(),
            tool: tool.clone(),
        };
    }
    match catalog.denied(name) {
        Some((server, tool)) => GatewayError::Denied {
            server: server.clone(),
            tool: tool.clone(),
        },
        None => GatewayError::UnknownTool {
            name: name.to_string(),
            suggestions: catalog.similar(name),
        },
    }
}

fn string_arg<'a>(arguments: &'a Value, key: &str, tool: &str) -> Result<&'a str, GatewayError> {
    match arguments.get(key).and_then(Value::as_str) {
        Some(value) if !value.trim().is_empty() => Ok(value),
        _ => Err(bad_input(
            format!("{tool} needs `{key}` (a non-empty string)"),
            &format!("call {tool} with {{\"{key}\": \"…\"}}"),
        )),
    }
}

fn bad_input(message: String, help: &str) -> GatewayError {
    GatewayError::BadInput {
        message,
        help: help.to_string(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// A `CallToolResult` with `value` as compact JSON text.
fn text_result(value: &Value) -> Value {
    json!({"content": [{"type": "text", "text": value.to_string()}]})
}
