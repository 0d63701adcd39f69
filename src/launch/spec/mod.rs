//! The spec a stack publishes: [`publish`] assembles it (documents + overrides → the merged
//! document, the gate, the counts), [`merge`] below does the merging, `refs` renames and
//! copies components, [`responses`] holds the shared error answers, `warning` what a merge
//! left out.
//!
//! Merges mcpo's per-server OpenAPI documents into the one OpenAPI 3.1 document a stack
//! publishes (a ChatGPT action takes exactly one).
//!
//! mcpo mounts each MCP server as a sub-application at `/<server>` with its own
//! `/<server>/openapi.json`: paths `/<tool>` (the tool name verbatim), operationIds
//! `tool_<tool>_post`, components named per tool (`echo_form_model`) next to the shared
//! `HTTPValidationError` / `ValidationError`, and an `HTTPBearer` scheme. [`merge`] turns
//! them into one document:
//! - paths become `/<server>/<tool>`, for exactly the tools the [`Exposure`] allows: a denied
//!   tool, a disabled server and a tool the exposure does not know are all left out, as the
//!   front refuses them;
//! - operationIds become `<server>_<tool>` in `[A-Za-z0-9_]` (Actions use them as function
//!   names), unique over the document;
//! - components of every kind become `<server>__<name>` (every server has its own
//!   `HTTPValidationError`), every `$ref` follows, and only what the kept operations reach is
//!   copied; mcpo's security schemes are dropped;
//! - security is the front's API key, once, instead of mcpo's per-operation bearer;
//! - every operation documents the front's error answers (401, 403, 404, 502, 503) with the
//!   one error schema; the native bridge's documents already use the same shared components
//!   (see [`responses`]), which are kept once, under their own names;
//! - descriptions take the project's overrides, then are cut to the Actions limit.
//!
//! The output depends only on the input (documents in the order given, their paths and
//! components in document order), so an unchanged stack republishes a byte-identical spec.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::exposure::{Exposure, ServerExposure, ToolRule};
use crate::catalog::{trim_description, CHATGPT_DESCRIPTION_LIMIT};

pub mod publish;
mod refs;
pub mod responses;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod validator;
mod warning;

use refs::{rename_refs, ComponentKey, Components};
pub use warning::MergeWarning;

/// ChatGPT Actions accept at most this many operations per action.
pub const CHATGPT_OPERATION_LIMIT: usize = 30;

/// The name of the merged document's one security scheme.
pub const API_KEY_SCHEME: &str = "apiKey";

/// The header the front reads the key from (it also takes `Authorization: Bearer`).
pub const API_KEY_HEADER: &str = "X-API-Key";

/// The keys of a path item that hold operations.
const HTTP_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One server's document as mcpo serves it at `/<server>/openapi.json`.
#[derive(Debug, Clone, Copy)]
pub struct ServerDocument<'a> {
    /// The server's name: its mount path under mcpo and its key in the [`Exposure`].
    pub server: &'a str,
    /// The document.
    pub document: &'a Value,
}

/// How the merged document is titled, addressed and bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOptions {
    /// `info.title`, e.g. `mcp-launch: work`.
    pub title: String,
    /// The URL clients call (the tunnel's or the front's); a trailing `/` is dropped.
    pub public_url: String,
    /// Operation descriptions longer than this many characters are cut.
    pub description_limit: usize,
    /// More operations than this yields a warning.
    pub operation_limit: usize,
}

impl MergeOptions {
    /// Options for the stack `stack` served at `public_url`, with ChatGPT's limits.
    pub fn for_stack(stack: &str, public_url: impl Into<String>) -> Self {
        Self {
            title: format!("mcp-launch: {stack}"),
            public_url: public_url.into(),
            description_limit: CHATGPT_DESCRIPTION_LIMIT,
            operation_limit: CHATGPT_OPERATION_LIMIT,
        }
    }
}

/// The merged document and what the user should know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedSpec {
    /// The OpenAPI 3.1 document.
    pub document: Value,
    /// Its operations.
    pub operations: usize,
    /// Operations per merged server (enabled and in the exposure), in input order.
    pub per_server: Vec<(String, usize)>,
    /// In the order they arose.
    pub warnings: Vec<MergeWarning>,
}

/// Merges the documents of a stack's servers into one, publishing exactly what `exposure`
/// lets through. Never fails: what cannot be merged is left out with a warning.
pub fn merge(
    servers: &[ServerDocument<'_>],
    exposure: &Exposure,
    options: &MergeOptions,
) -> MergedSpec {
    let mut merger = Merger::new(options);
    let mut seen = HashSet::new();
    for source in servers {
        if !seen.insert(source.server) {
            merger.warn(MergeWarning::DuplicateDocument {
                server: source.server.to_string(),
            });
            continue;
        }
        match exposure.server(source.server) {
            None => merger.warn(MergeWarning::UnknownServer {
                server: source.server.to_string(),
            }),
            // Disabled on purpose: absent without a word, as in every listing.
            Some(rules) if !rules.enabled => {}
            Some(rules) => merger.add_server(source, rules),
        }
    }
    for (server, rules) in exposure.servers() {
        if rules.enabled && !seen.contains(server) {
            merger.warn(MergeWarning::MissingDocument {
                server: server.to_string(),
            });
        }
    }
    if exposure.reads_outputs() {
        merger.add_read_output();
    }
    merger.finish()
}

/// A path the exposure allows, with the components it reaches.
struct KeptPath<'d> {
    path: &'d str,
    tool: &'d str,
    rule: &'d ToolRule,
    /// The path item (an object).
    item: &'d Value,
    reached: HashSet<ComponentKey>,
}

/// The merged document under construction.
struct Merger<'o> {
    options: &'o MergeOptions,
    paths: Map<String, Value>,
    /// Components by kind, kinds in order of first appearance.
    components: Vec<(String, Map<String, Value>)>,
    operation_ids: HashSet<String>,
    per_server: Vec<(String, usize)>,
    warnings: Vec<MergeWarning>,
}

impl<'o> Merger<'o> {
    fn new(options: &'o MergeOptions) -> Self {
        Self {
            options,
            paths: Map::new(),
            components: Vec::new(),
            operation_ids: HashSet::new(),
            per_server: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn warn(&mut self, warning: MergeWarning) {
        self.warnings.push(warning);
    }

    fn malformed(&mut self, server: &str, detail: String) {
        self.warn(MergeWarning::Malformed {
            server: server.to_string(),
            detail,
        });
    }

    /// Adds the allowed paths of one enabled server and the components they reach.
    fn add_server(&mut self, source: &ServerDocument<'_>, rules: &ServerExposure) {
        let server = source.server;
        let mut problems = Vec::new();
        let components = Components::read(source.document, &mut problems);
        for detail in problems {
            self.malformed(server, detail);
        }
        let kept = self.kept_paths(server, source.document, rules, &components);
        let renamed = self.add_components(server, &components, &kept);
        let mut count = 0;
        for path in &kept {
            count += self.add_path(server, path, &renamed);
        }
        self.per_server.push((server.to_string(), count));
    }

    /// The document's paths whose tools the exposure allows and whose references resolve.
    fn kept_paths<'d>(
        &mut self,
        server: &str,
        document: &'d Value,
        rules: &'d ServerExposure,
        components: &Components<'d>,
    ) -> Vec<KeptPath<'d>> {
        if !document.is_object() {
            self.malformed(server, "not a JSON object".to_string());
            return Vec::new();
        }
        let paths = match document.get("paths") {
            Some(Value::Object(paths)) if !paths.is_empty() => paths,
            None | Some(Value::Object(_)) => {
                let server = server.to_string();
                self.warn(MergeWarning::NoTools { server });
                return Vec::new();
            }
            Some(_) => {
                self.malformed(server, "`paths` is not an object".to_string());
                return Vec::new();
            }
        };
        let mut kept = Vec::new();
        for (path, item) in paths {
            // mcpo serves each tool at `/<tool>`, its name verbatim.
            let Some(tool) = path.strip_prefix('/') else {
                self.malformed(server, format!("path `{path}` does not start with `/`"));
                continue;
            };
            let rule = match rules.tools.get(tool) {
                Some(rule) if rule.allowed => rule,
                Some(_) => continue,
                None => {
                    let (server, tool) = (server.to_string(), tool.to_string());
                    self.warn(MergeWarning::UnknownTool { server, tool });
                    continue;
                }
            };
            // A path item given by `$ref` would hide its operations from the rewriting below.
            if !item.is_object() || item.get("$ref").is_some() {
                let detail = format!("path `{path}` is not an inline path item object");
                self.malformed(server, detail);
                continue;
            }
            match components.reach(item) {
                Ok(reached) => kept.push(KeptPath {
                    path,
                    tool,
                    rule,
                    item,
                    reached,
                }),
                Err(unresolved) => {
                    let (server, tool) = (server.to_string(), tool.to_string());
                    self.warn(MergeWarning::UnresolvedReference {
                        server,
                        tool,
                        reference: unresolved.reference,
                    });
                }
            }
        }
        kept
    }

    /// Copies the components the kept paths reach under per-server names; returns the
    /// renaming, for the references to them.
    fn add_components(
        &mut self,
        server: &str,
        components: &Components<'_>,
        kept: &[KeptPath<'_>],
    ) -> HashMap<ComponentKey, String> {
        let reached: HashSet<&ComponentKey> = kept.iter().flat_map(|p| &p.reached).collect();
        // Every name first, since references may point forward; in document order, so the
        // names do not depend on hashing.
        let mut renamed = HashMap::new();
        let mut copied = Vec::new();
        for (kind, name, value) in components.iter() {
            let key = (kind.to_string(), name.to_string());
            // A shared component keeps its name; `finish` adds it once.
            if !reached.contains(&key) || responses::is_shared(kind, name, value) {
                continue;
            }
            let members = self.components_of(kind);
            let new = unique(component_key(server, name), |c| members.contains_key(c));
            members.insert(new.clone(), value.clone());
            copied.push((kind, new.clone()));
            renamed.insert(key, new);
        }
        for (kind, name) in copied {
            if let Some(value) = self.components_of(kind).get_mut(&name) {
                rename_refs(value, &renamed);
            }
        }
        renamed
    }

    /// The merged document's components of one kind.
    fn components_of(&mut self, kind: &str) -> &mut Map<String, Value> {
        let index = match self.components.iter().position(|(k, _)| k == kind) {
            Some(index) => index,
            None => {
                self.components.push((kind.to_string(), Map::new()));
                self.components.len() - 1
            }
        };
        &mut self.components[index].1
    }

    /// Adds one kept path under `/<server>`; returns its number of operations.
    fn add_path(
        &mut self,
        server: &str,
        kept: &KeptPath<'_>,
        renamed: &HashMap<ComponentKey, String>,
    ) -> usize {
        let mut item = kept.item.clone();
        rename_refs(&mut item, renamed);
        let Some(fields) = item.as_object_mut() else {
            return 0;
        };
        // Server overrides would point at mcpo's sub-application, not at the front.
        fields.remove("servers");
        let methods: Vec<&str> = HTTP_METHODS
            .into_iter()
            .filter(|m| fields.get(*m).is_some_and(Value::is_object))
            .collect();
        for method in &methods {
            let qualifier = (methods.len() > 1).then_some(*method);
            if let Some(Value::Object(operation)) = fields.get_mut(*method) {
                self.finish_operation(server, kept.tool, qualifier, kept.rule, operation);
            }
        }
        self.paths.insert(format!("/{server}{}", kept.path), item);
        methods.len()
    }

    /// Gives an operation its merged id, the front's security and its final description.
    fn finish_operation(
        &mut self,
        server: &str,
        tool: &str,
        method: Option<&str>,
        rule: &ToolRule,
        operation: &mut Map<String, Value>,
    ) {
        // The document-wide API key replaces mcpo's bearer.
        operation.remove("security");
        operation.remove("servers");
        let base = function_name(&[Some(server), Some(tool), method]);
        let id = unique(base, |c| self.operation_ids.contains(c));
        self.operation_ids.insert(id.clone());
        operation.insert("operationId".into(), Value::String(id));
        add_front_responses(operation);
        if let Some(text) = &rule.description {
            operation.insert("description".into(), Value::String(text.clone()));
        }
        self.limit_description(server, tool, operation);
    }

    /// Cuts an over-long description to the limit, with a warning saying how to replace it.
    fn limit_description(&mut self, server: &str, tool: &str, operation: &mut Map<String, Value>) {
        let Some(Value::String(text)) = operation.get_mut("description") else {
            return;
        };
        let before = text.chars().count();
        if before <= self.options.description_limit {
            return;
        }
        *text = trim_description(text, self.options.description_limit);
        let after = text.chars().count();
        self.warn(MergeWarning::DescriptionTrimmed {
            server: server.to_string(),
            tool: tool.to_string(),
            before,
            after,
        });
    }

    /// Documents `POST /read_output`: more of a cut result, by its handle.
    fn add_read_output(&mut self) {
        let read = crate::outputs::read_output_tool();
        let mut responses = Map::new();
        responses.insert(
            "200".into(),
            json!({"description": "The part read: text (lines) or JSON.",
                "content": {"application/json": {"schema": {}}}}),
        );
        for code in ["404", "422"] {
            responses.insert(code.into(), responses::response_ref(code));
        }
        let mut operation = json!({
            "operationId": "read_output",
            "summary": "Read more of a cut result",
            "description": "A result over its budget ends with a handle (h_…): read on from \
                an offset (lines), with a grep regex, or a JSONPath. Handles last 24 h.",
            "requestBody": {"required": true, "content": {"application/json": {
                "schema": read["inputSchema"]}}},
            "responses": responses,
        });
        if let Some(operation) = operation.as_object_mut() {
            add_front_responses(operation);
        }
        self.paths.insert(
            crate::launch::exposure::READ_OUTPUT_PATH.to_string(),
            json!({"post": operation}),
        );
    }

    /// The finished document, with the operation count warning.
    fn finish(mut self) -> MergedSpec {
        let operations = self.per_server.iter().map(|(_, n)| n).sum();
        if operations > self.options.operation_limit {
            self.warn(MergeWarning::TooManyOperations {
                operations,
                limit: self.options.operation_limit,
                per_server: self.per_server.clone(),
            });
        }
        let security_scheme = json!({
            "type": "apiKey",
            "in": "header",
            "name": API_KEY_HEADER,
            "description": "The stack's API key; the front also accepts it as \
                            `Authorization: Bearer <key>`.",
        });
        self.add_shared_components();
        self.components_of("securitySchemes")
            .insert(API_KEY_SCHEME.to_string(), security_scheme);
        let document = json!({
            "openapi": "3.1.0",
            "info": {
                "title": self.options.title,
                "version": env!("CARGO_PKG_VERSION"),
                "description": info_description(&self.per_server),
            },
            "servers": [{"url": public_url(&self.options.public_url)}],
            "paths": self.paths,
            "components": Map::from_iter(
                (self.components.into_iter()).map(|(kind, members)| (kind, Value::Object(members)))
            ),
            "security": [{API_KEY_SCHEME: []}],
        });
        MergedSpec {
            document,
            operations,
            per_server: self.per_server,
            warnings: self.warnings,
        }
    }

    /// Adds the shared error components the operations reach, each once.
    fn add_shared_components(&mut self) {
        let shared = responses::components();
        let document = json!({ "components": shared });
        let components = Components::read(&document, &mut Vec::new());
        let mut reached: Vec<ComponentKey> = components
            .reach_known(self.paths.values())
            .into_iter()
            .collect();
        // In the shared document's order, so the output does not depend on hashing.
        let order = |(kind, name): &ComponentKey| {
            let members = shared[kind]
                .as_object()
                .map(|m| m.keys().position(|k| k == name));
            (kind.clone(), members.flatten())
        };
        reached.sort_by_key(order);
        for (kind, name) in reached {
            let value = shared[&kind][&name].clone();
            self.components_of(&kind).insert(name, value);
        }
    }
}

/// Documents the front's error answers on `operation`, where its document does not already.
fn add_front_responses(operation: &mut Map<String, Value>) {
    let documented = operation
        .entry("responses")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(documented) = documented {
        for code in responses::FRONT_STATUSES {
            if !documented.contains_key(code) {
                documented.insert(code.to_string(), responses::response_ref(code));
            }
        }
    }
}

/// `info.description`: the servers whose tools the document holds.
fn info_description(per_server: &[(String, usize)]) -> String {
    let servers: Vec<&str> = (per_server.iter())
        .filter(|(_, n)| *n > 0)
        .map(|(s, _)| s.as_str())
        .collect();
    if servers.is_empty() {
        return "MCP tools served by mcp-launch. No server exposes any.".to_string();
    }
    format!(
        "MCP tools served by mcp-launch. Servers: {}.",
        servers.join(", ")
    )
}

/// The URL without its trailing `/`s (paths start with one), `/` when nothing is left.
fn public_url(url: &str) -> &str {
    match url.trim_end_matches('/') {
        "" => "/",
        url => url,
    }
}

/// A component key (`^[a-zA-Z0-9.\-_]+$`) for `name` of `server`: `<server>__<name>`, any
/// other character replaced by `_`.
fn component_key(server: &str, name: &str) -> String {
    format!("{server}__{name}")
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect()
}

/// The parts joined by `_`, every character outside `[A-Za-z0-9_]` replaced by `_`.
fn function_name(parts: &[Option<&str>]) -> String {
    let joined: Vec<&str> = parts.iter().flatten().copied().collect();
    joined
        .join("_")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `base`, or the first of `base_2`, `base_3`, … that is not `taken`: the first comer in
/// document order keeps the plain name, so names are stable.
fn unique(base: String, taken: impl Fn(&str) -> bool) -> String {
    if !taken(&base) {
        return base;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{base}_{n}");
        if !taken(&candidate) {
            return candidate;
        }
        n += 1;
    }
}
