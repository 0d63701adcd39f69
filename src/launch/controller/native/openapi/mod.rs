//! One server's OpenAPI 3.1 document, generated from its MCP tool definitions (the entries of
//! `tools/list`): what the native controller serves at `/<server>/openapi.json`.
//!
//! The outer shape is mcpo's, so [`merge`](crate::launch::spec::merge) takes the document
//! unchanged: `servers: [{"url": "/<server>"}]`, one `POST /<tool>` per tool (the name
//! verbatim, see [`check_tool_name`]), request body and responses as `$ref`s into
//! `components.schemas` (the merge prunes and renames by those references). Unlike mcpo's,
//! the schemas are the tools' own, changed only where an OpenAPI document needs it (see
//! `schema`): `$defs` become components, references follow them.
//!
//! Component names (all in `[A-Za-z0-9._-]`, any other character becomes `_`; a name already
//! taken gets `_2`, `_3`, … — the first comer, in `tools/list` order, keeps the plain one):
//! - `<tool>_input`: the tool's `inputSchema` (`{"type": "object"}` when it has none);
//! - `<tool>_output`: its `outputSchema`, when it has one;
//! - `<tool>__<name>`: a member of either schema's `$defs` (or draft-07 `definitions`);
//! - the error schemas of [`responses`] (`Error`, `ValidationError`, `ToolError`), with
//!   their response components: every operation documents the bridge's error answers
//!   ([`BRIDGE_STATUSES`]) with them, and the merge keeps them once for the whole stack.
//!
//! The request body is required only when the tool has required parameters: the bridge takes
//! an empty body as `{}`.
//!
//! OperationIds are `tool_<tool>` in `[A-Za-z0-9_]`, unique the same way (the merge derives
//! its own; these only make the per-server document valid and readable).
//!
//! The output depends only on the input, so an unchanged server gives a byte-identical document.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use crate::catalog::tool::required_params;
use crate::launch::spec::responses::{self, BRIDGE_STATUSES};
use crate::launch::spec::ServerDocument;

mod names;
mod schema;
#[cfg(test)]
mod tests;
mod warning;

use names::Unique;
pub use names::{check_tool_name, NameProblem};
use schema::Issue;
pub use warning::ToolWarning;

/// A server's generated document and what was left out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedDocument {
    /// The server's name: the document's `/<server>` mount and its key in the exposure.
    pub server: String,
    /// The OpenAPI 3.1 document.
    pub document: Value,
    /// The tools it serves, in `tools/list` order: exactly its paths, without the `/`.
    pub tools: Vec<String>,
    /// In the order they arose.
    pub warnings: Vec<ToolWarning>,
}

impl GeneratedDocument {
    /// The document as the merge takes it.
    pub fn source(&self) -> ServerDocument<'_> {
        ServerDocument {
            server: &self.server,
            document: &self.document,
        }
    }
}

/// Generates the document of `server` from its `tools/list` entries (each with `name`,
/// `inputSchema` and optionally `title`, `description`, `outputSchema`, `annotations`).
/// Never fails: a tool that cannot be served as `POST /<name>` is left out with a warning.
pub fn server_document(server: &str, tools: &[Value]) -> GeneratedDocument {
    let mut builder = Builder::new(server);
    for (index, tool) in tools.iter().enumerate() {
        builder.add_tool(index, tool);
    }
    builder.finish()
}

/// The document under construction.
struct Builder<'s> {
    server: &'s str,
    paths: Map<String, Value>,
    schemas: Map<String, Value>,
    component_names: Unique,
    operation_ids: Unique,
    tools: Vec<String>,
    served: HashSet<String>,
    warnings: Vec<ToolWarning>,
}

impl<'s> Builder<'s> {
    fn new(server: &'s str) -> Self {
        let mut component_names = Unique::component_names();
        let schemas = responses::schemas();
        for name in schemas.keys() {
            component_names.allocate(name);
        }
        Self {
            server,
            paths: Map::new(),
            schemas,
            component_names,
            operation_ids: Unique::operation_ids(),
            tools: Vec::new(),
            served: HashSet::new(),
            warnings: Vec::new(),
        }
    }

    fn warn(&mut self, warning: ToolWarning) {
        self.warnings.push(warning);
    }

    /// Adds `POST /<name>` for one `tools/list` entry, or says why it cannot.
    fn add_tool(&mut self, index: usize, tool: &Value) {
        let server = self.server.to_string();
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            return self.warn(ToolWarning::Nameless { server, index });
        };
        let tool_name = name.to_string();
        if let Err(problem) = check_tool_name(name) {
            return self.warn(ToolWarning::UnusableName {
                server,
                tool: tool_name,
                problem,
            });
        }
        if !self.served.insert(tool_name.clone()) {
            return self.warn(ToolWarning::DuplicateName {
                server,
                tool: tool_name,
            });
        }
        let input = self.input_component(name, tool.get("inputSchema"));
        let output = self.output_component(name, tool.get("outputSchema"));
        let operation = self.operation(name, tool, &input, output.as_deref());
        self.paths
            .insert(format!("/{name}"), json!({ "post": operation }));
        self.tools.push(tool_name);
    }

    /// Adds the tool's input schema as `<tool>_input`; returns the component's name. MCP
    /// arguments are always an object, so that is what a missing or unusable schema becomes.
    fn input_component(&mut self, tool: &str, schema: Option<&Value>) -> String {
        let any_object = json!({"type": "object"});
        let schema = match schema {
            Some(schema @ Value::Object(_)) => schema,
            None => &any_object,
            Some(_) => {
                self.warn(ToolWarning::InputSchemaReplaced {
                    server: self.server.to_string(),
                    tool: tool.to_string(),
                });
                &any_object
            }
        };
        let component = self.component_names.allocate(&format!("{tool}_input"));
        self.add_schema(tool, &component, schema);
        component
    }

    /// Adds the tool's output schema as `<tool>_output`, when it has a usable one.
    fn output_component(&mut self, tool: &str, schema: Option<&Value>) -> Option<String> {
        match schema? {
            schema @ Value::Object(_) => {
                let component = self.component_names.allocate(&format!("{tool}_output"));
                self.add_schema(tool, &component, schema);
                Some(component)
            }
            _ => {
                self.warn(ToolWarning::OutputSchemaIgnored {
                    server: self.server.to_string(),
                    tool: tool.to_string(),
                });
                None
            }
        }
    }

    /// Adds `schema` as `component`, its definitions as components of their own.
    fn add_schema(&mut self, tool: &str, component: &str, schema: &Value) {
        let imported = schema::import(schema, component, tool, &mut self.component_names);
        for issue in imported.issues {
            let (server, tool) = (self.server.to_string(), tool.to_string());
            self.warn(match issue {
                Issue::UnresolvedReference(reference) => ToolWarning::UnresolvedReference {
                    server,
                    tool,
                    reference,
                },
                Issue::ReferenceInData(keyword) => ToolWarning::ReferenceInData {
                    server,
                    tool,
                    keyword,
                },
            });
        }
        self.schemas.insert(component.to_string(), imported.root);
        self.schemas.extend(imported.definitions);
    }

    /// The `post` operation of one tool.
    fn operation(&mut self, name: &str, tool: &Value, input: &str, output: Option<&str>) -> Value {
        let mut operation = Map::new();
        operation.insert("summary".into(), Value::String(summary(name, tool)));
        // Untouched: the merge applies the project's overrides and the length limit.
        if let Some(description) = tool.get("description").and_then(Value::as_str) {
            operation.insert("description".into(), Value::String(description.to_string()));
        }
        let id = self.operation_ids.allocate(&format!("tool_{name}"));
        operation.insert("operationId".into(), Value::String(id));
        operation.insert(
            "requestBody".into(),
            json!({
                "required": !required_params(tool).is_empty(),
                "content": {"application/json": {"schema": schema_ref(input)}},
            }),
        );
        operation.insert("responses".into(), operation_responses(output));
        // MCP's hints (readOnlyHint, destructiveHint, …) for clients that read extensions.
        if let Some(annotations @ Value::Object(_)) = tool.get("annotations") {
            operation.insert("x-mcp-annotations".into(), annotations.clone());
        }
        Value::Object(operation)
    }

    fn finish(self) -> GeneratedDocument {
        // `info.version` is the generator's: the document is ours, not the server's.
        let document = json!({
            "openapi": "3.1.0",
            "info": {"title": self.server, "version": env!("CARGO_PKG_VERSION")},
            "servers": [{"url": format!("/{}", self.server)}],
            "paths": self.paths,
            "components": {
                "schemas": self.schemas,
                "responses": responses::responses(&BRIDGE_STATUSES),
            },
        });
        GeneratedDocument {
            server: self.server.to_string(),
            document,
            tools: self.tools,
            warnings: self.warnings,
        }
    }
}

/// The operation's responses: the tool's result, and every error answer of the bridge.
fn operation_responses(output: Option<&str>) -> Value {
    // Without an outputSchema the result may be any JSON (decoded text, content blocks).
    let result = output.map_or_else(|| json!({}), schema_ref);
    let mut answers = Map::new();
    answers.insert(
        "200".into(),
        json!({
            "description": "The tool's result: its structured content when it has some, \
                            otherwise its content (text decoded when it is JSON).",
            "content": {"application/json": {"schema": result}},
        }),
    );
    for code in BRIDGE_STATUSES {
        answers.insert(code.into(), responses::response_ref(code));
    }
    Value::Object(answers)
}

/// `{"$ref": "#/components/schemas/<component>"}`; component names need no escaping.
fn schema_ref(component: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{component}") })
}

/// The tool's `title` (or the older `annotations.title`), else its name made readable.
fn summary(name: &str, tool: &Value) -> String {
    let titles = [tool.get("title"), tool.pointer("/annotations/title")];
    titles
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::trim)
        .find(|title| !title.is_empty())
        .map_or_else(|| names::readable(name), str::to_string)
}
