//! Tool definitions in the spec's shape, whatever a server sent: what a gateway lists must pass
//! strict clients (the official SDKs validate every tool of a `tools/list`, and one bad tool
//! ends their session). Pure: a definition in, the repaired definition and the list of what
//! was repaired out; a definition beyond repair (not an object, no name) is refused and the
//! caller skips it, never the whole list.
//!
//! The shapes are those of `Tool` in the MCP schema (2025-11-25 and 2026-07-28 agree on them,
//! the older revision being the stricter): `inputSchema` an object schema (`"type": "object"`,
//! `properties` an object of object schemas, `required` strings naming them), `description`
//! and `title` strings, `annotations` with the known hints typed, `outputSchema` an object
//! schema or moved under `_meta` (as budget cuts do), `icons` with a string `src`, `execution`
//! with a known `taskSupport`. Unknown members are kept.

use serde_json::{json, Map, Value};

use super::output_schema::move_output_schema_to_meta;

#[cfg(test)]
mod tests;

/// The `_meta` member that keeps an input schema the gateway had to replace (it described
/// something other than an object of arguments).
pub const INPUT_SCHEMA_META: &str = "mcp-launch/inputSchema";

/// One change made to a tool so that strict clients accept it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Repair {
    /// The member changed (`inputSchema`, `annotations.readOnlyHint`, …).
    pub field: String,
    /// What was done, in a few words.
    pub what: String,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.what)
    }
}

/// Why a tool cannot be listed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unrepairable {
    /// The entry of the `tools` array is not a JSON object.
    #[error("a tool that is not a JSON object")]
    NotAnObject,
    /// It has no name (or not a non-empty string): it could never be called.
    #[error("a tool without a name")]
    NoName,
}

/// A tool in the spec's shape and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    /// The definition to list.
    pub definition: Value,
    /// What was changed; empty when the server's definition was valid as sent.
    pub repairs: Vec<Repair>,
}

/// The repairs of one tool of a server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolRepairs {
    /// The tool's name on its server.
    pub tool: String,
    /// What was changed.
    pub repairs: Vec<Repair>,
}

/// What a server's tools needed: the tools repaired and the ones skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerRepairs {
    /// Tools listed after a repair, in the server's order.
    pub repaired: Vec<ToolRepairs>,
    /// Why each skipped tool could not be listed.
    pub skipped: Vec<Unrepairable>,
}

impl ServerRepairs {
    /// What `tools` (a server's definitions, as sent) need. A `null` is a definition that did
    /// not travel (a daemon's report counted for `list`, which keeps the definitions of the
    /// servers that need repairs): it says nothing. (Live lists never hold one: a tool
    /// without a name is dropped as it is read.)
    pub fn of(tools: &[Value]) -> ServerRepairs {
        let mut found = ServerRepairs::default();
        for tool in tools.iter().filter(|t| !t.is_null()) {
            found.add(super::tool::name(tool), &repair_tool(tool));
        }
        found
    }

    /// Records the outcome of repairing the tool named `tool`.
    pub fn add(&mut self, tool: &str, outcome: &Result<Repaired, Unrepairable>) {
        match outcome {
            Ok(repaired) if repaired.repairs.is_empty() => {}
            Ok(repaired) => self.repaired.push(ToolRepairs {
                tool: tool.to_string(),
                repairs: repaired.repairs.clone(),
            }),
            Err(why) => self.skipped.push(why.clone()),
        }
    }

    /// True when every tool was valid as sent.
    pub fn is_empty(&self) -> bool {
        self.repaired.is_empty() && self.skipped.is_empty()
    }

    /// The repairs of the tool named `tool`, if it needed any.
    pub fn of_tool(&self, tool: &str) -> Option<&[Repair]> {
        (self.repaired.iter())
            .find(|t| t.tool == tool)
            .map(|t| t.repairs.as_slice())
    }

    /// One line saying what was repaired, e.g. `9 tools repaired for strict clients
    /// (inputSchema: added "type": "object" ×9)`; `None` when nothing was.
    pub fn note(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut counts: Vec<(String, usize)> = Vec::new();
        for repair in self.repaired.iter().flat_map(|t| &t.repairs) {
            let said = repair.to_string();
            match counts.iter_mut().find(|(s, _)| *s == said) {
                Some((_, n)) => *n += 1,
                None => counts.push((said, 1)),
            }
        }
        let kinds: Vec<String> = (counts.iter().take(3))
            .map(|(said, n)| match n {
                1 => said.clone(),
                n => format!("{said} ×{n}"),
            })
            .collect();
        let more = if counts.len() > 3 { "; …" } else { "" };
        let mut note = match self.repaired.len() {
            0 => String::new(),
            1 => format!(
                "1 tool repaired for strict clients ({}{more})",
                kinds.join("; ")
            ),
            n => format!(
                "{n} tools repaired for strict clients ({}{more})",
                kinds.join("; ")
            ),
        };
        if !self.skipped.is_empty() {
            let sep = if note.is_empty() { "" } else { "; " };
            let skipped = self.skipped.len();
            note.push_str(&format!(
                "{sep}{skipped} beyond repair skipped ({})",
                self.skipped[0]
            ));
        }
        Some(note)
    }
}

/// `tool` in the spec's shape, with what was changed; an error when it cannot be listed.
pub fn repair_tool(tool: &Value) -> Result<Repaired, Unrepairable> {
    let Value::Object(fields) = tool else {
        return Err(Unrepairable::NotAnObject);
    };
    match fields.get("name") {
        Some(Value::String(name)) if !name.is_empty() => {}
        _ => return Err(Unrepairable::NoName),
    }
    let mut fields = fields.clone();
    let mut repairs = Vec::new();
    let mut said = |field: &str, what: &str| {
        repairs.push(Repair {
            field: field.to_string(),
            what: what.to_string(),
        })
    };
    meta(&mut fields, &mut said);
    input_schema(&mut fields, &mut said);
    for key in ["description", "title"] {
        only_string(&mut fields, key, &mut said);
    }
    annotations(&mut fields, &mut said);
    output_schema(&mut fields, &mut said);
    icons(&mut fields, &mut said);
    execution(&mut fields, &mut said);
    Ok(Repaired {
        definition: Value::Object(fields),
        repairs,
    })
}

type Said<'a> = dyn FnMut(&str, &str) + 'a;

/// `_meta` must be an object: anything else is dropped (it carries nothing a client reads).
fn meta(fields: &mut Map<String, Value>, said: &mut Said<'_>) {
    if fields.get("_meta").is_some_and(|m| !m.is_object()) {
        fields.shift_remove("_meta");
        said("_meta", "dropped (not an object)");
    }
}

/// The input schema as an object schema: a missing one is the empty object schema; one
/// without a type gets `"type": "object"` (what servers mean by it: arguments are always an
/// object); one describing something else is replaced by the empty object schema and kept
/// under `_meta["mcp-launch/inputSchema"]`.
fn input_schema(fields: &mut Map<String, Value>, said: &mut Said<'_>) {
    // Taken from its place and put back there: members keep their order (a cut of a long
    // definition drops the last ones).
    let taken = std::mem::take(fields.entry("inputSchema").or_insert(Value::Null));
    let mut schema = match taken {
        Value::Null | Value::Bool(true) => {
            said("inputSchema", "missing; the empty object schema listed");
            json!({"type": "object"})
        }
        Value::Object(schema) => Value::Object(schema),
        other => {
            keep_in_meta(fields, INPUT_SCHEMA_META, other);
            said(
                "inputSchema",
                "not a schema object; the empty object schema listed",
            );
            json!({"type": "object"})
        }
    };
    if let Value::Object(object) = &mut schema {
        object_type(fields, object, said);
        properties(object, said);
        required(object, said);
        if object.get("$schema").is_some_and(|s| !s.is_string()) {
            object.shift_remove("$schema");
            said("inputSchema.$schema", "dropped (not a string)");
        }
    }
    fields.insert("inputSchema".into(), schema);
}

/// `"type": "object"` at the root of an input schema.
fn object_type(
    fields: &mut Map<String, Value>,
    schema: &mut Map<String, Value>,
    said: &mut Said<'_>,
) {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None => {
            schema.insert("type".into(), json!("object"));
            said("inputSchema", "added \"type\": \"object\"");
        }
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
            schema.insert("type".into(), json!("object"));
            said("inputSchema.type", "narrowed to \"object\"");
        }
        Some(_) => {
            let original = std::mem::replace(schema, Map::new());
            keep_in_meta(fields, INPUT_SCHEMA_META, Value::Object(original));
            schema.insert("type".into(), json!("object"));
            said(
                "inputSchema",
                "not an object schema; the empty object schema listed",
            );
        }
    }
}

/// `properties`: an object whose members are schema objects (`true` is `{}`; `false`, a
/// property that can never be given, and any other value are dropped).
fn properties(schema: &mut Map<String, Value>, said: &mut Said<'_>) {
    match schema.get_mut("properties") {
        None | Some(Value::Object(_)) => {}
        Some(_) => {
            schema.shift_remove("properties");
            said("inputSchema.properties", "dropped (not an object)");
            return;
        }
    }
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    let mut dropped = Vec::new();
    properties.retain(|name, property| match property {
        Value::Object(_) => true,
        Value::Bool(true) => {
            *property = json!({});
            true
        }
        _ => {
            dropped.push(name.clone());
            false
        }
    });
    for name in dropped {
        said(
            &format!("inputSchema.properties.{name}"),
            "dropped (not a schema object)",
        );
    }
}

/// `required`: an array of strings naming properties. Non-strings and repeats are dropped,
/// and names the schema does not define when it defines its properties in `properties`
/// alone (no composition or references that could define them elsewhere).
fn required(schema: &mut Map<String, Value>, said: &mut Said<'_>) {
    let Some(required) = schema.get("required") else {
        return;
    };
    let Value::Array(names) = required else {
        schema.shift_remove("required");
        said("inputSchema.required", "dropped (not an array)");
        return;
    };
    const ELSEWHERE: [&str; 8] = [
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "if",
        "dependentSchemas",
        "patternProperties",
        "$dynamicRef",
    ];
    let defined = schema.get("properties").and_then(Value::as_object);
    let closed = defined.is_some() && !ELSEWHERE.iter().any(|k| schema.contains_key(*k));
    let mut kept: Vec<Value> = Vec::new();
    let mut dropped = Vec::new();
    for name in names {
        let known = match (name.as_str(), defined) {
            (Some(n), Some(defined)) if closed => defined.contains_key(n),
            (Some(_), _) => true,
            (None, _) => false,
        };
        if known && !kept.contains(name) {
            kept.push(name.clone());
        } else {
            dropped.push(
                name.as_str()
                    .map_or_else(|| name.to_string(), str::to_string),
            );
        }
    }
    if !dropped.is_empty() {
        schema.insert("required".into(), Value::Array(kept));
        said(
            "inputSchema.required",
            &format!("dropped {} (not a property name)", dropped.join(", ")),
        );
    }
}

/// `key` must be a string when present: a number or boolean is written out, anything else
/// dropped.
fn only_string(fields: &mut Map<String, Value>, key: &str, said: &mut Said<'_>) {
    match fields.get(key) {
        None | Some(Value::String(_)) => {}
        Some(Value::Number(n)) => {
            let text = n.to_string();
            fields.insert(key.into(), Value::String(text));
            said(key, "written as a string");
        }
        Some(Value::Bool(b)) => {
            let text = b.to_string();
            fields.insert(key.into(), Value::String(text));
            said(key, "written as a string");
        }
        Some(_) => {
            fields.shift_remove(key);
            said(key, "dropped (not a string)");
        }
    }
}

/// The known annotations with their spec types: hints booleans (`"true"`/`"false"` read as
/// such), `title` a string; other values of known keys dropped, unknown keys kept.
fn annotations(fields: &mut Map<String, Value>, said: &mut Said<'_>) {
    let Some(annotations) = fields.get_mut("annotations") else {
        return;
    };
    let Value::Object(annotations) = annotations else {
        fields.shift_remove("annotations");
        said("annotations", "dropped (not an object)");
        return;
    };
    const HINTS: [&str; 4] = [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    for hint in HINTS {
        let field = format!("annotations.{hint}");
        match annotations.get(hint) {
            None | Some(Value::Bool(_)) => {}
            Some(Value::String(s)) if s == "true" || s == "false" => {
                let value = s == "true";
                annotations.insert(hint.into(), Value::Bool(value));
                said(&field, "read as a boolean");
            }
            Some(_) => {
                annotations.shift_remove(hint);
                said(&field, "dropped (not a boolean)");
            }
        }
    }
    if annotations.get("title").is_some_and(|t| !t.is_string()) {
        annotations.shift_remove("title");
        said("annotations.title", "dropped (not a string)");
    }
}

/// `outputSchema`: an object schema with `"type": "object"`, `properties` an object of schema
/// objects and `required` strings; any other is moved under `_meta` (adding a type could change
/// what it says, and results are checked against it).
fn output_schema(fields: &mut Map<String, Value>, said: &mut Said<'_>) {
    let Some(schema) = fields.get("outputSchema") else {
        return;
    };
    if is_object_schema(schema) {
        return;
    }
    let mut definition = Value::Object(std::mem::take(fields));
    move_output_schema_to_meta(&mut definition);
    if let Value::Object(moved) = definition {
        *fields = moved;
    }
    said("outputSchema", "not an object schema; moved to _meta");
}

fn is_object_schema(schema: &Value) -> bool {
    let Some(schema) = schema.as_object() else {
        return false;
    };
    let properties_ok = match schema.get("properties") {
        None => true,
        Some(Value::Object(p)) => p.values().all(Value::is_object),
        Some(_) => false,
    };
    let required_ok = match schema.get("required") {
        None => true,
        Some(Value::Array(r)) => r.iter().all(Value::is_string),
        Some(_) => false,
    };
    schema.get("type") == Some(&json!("object"))
        && properties_ok
        && required_ok
        && schema.get("$schema").is_none_or(Value::is_string)
}

/// `icons`: an array of objects with a string `src`; bad entries dropped, bad optional members
/// of good ones dropped.
fn icons(fields: &mut Map<String, Value>, said: &mut Said<'_>) {
    let Some(icons) = fields.get_mut("icons") else {
        return;
    };
    let Value::Array(list) = icons else {
        fields.shift_remove("icons");
        said("icons", "dropped (not an array)");
        return;
    };
    let before = list.len();
    list.retain(|icon| icon.get("src").is_some_and(Value::is_string));
    if list.len() < before {
        said("icons", "dropped entries without a string src");
    }
    let mut fixed = false;
    for icon in list.iter_mut().filter_map(Value::as_object_mut) {
        let before = icon.len();
        icon.retain(|key, value| match key.as_str() {
            "mimeType" => value.is_string(),
            "sizes" => value
                .as_array()
                .is_some_and(|s| s.iter().all(Value::is_string)),
            "theme" => value == "light" || value == "dark",
            _ => true,
        });
        fixed |= icon.len() < before;
    }
    if fixed {
        said("icons", "dropped members of the wrong type");
    }
}

/// `execution`: an object whose `taskSupport` is `forbidden`, `optional` or `required`.
fn execution(fields: &mut Map<String, Value>, said: &mut Said<'_>) {
    let Some(execution) = fields.get_mut("execution") else {
        return;
    };
    let Value::Object(execution) = execution else {
        fields.shift_remove("execution");
        said("execution", "dropped (not an object)");
        return;
    };
    let known = |v: &Value| matches!(v.as_str(), Some("forbidden" | "optional" | "required"));
    if execution.get("taskSupport").is_some_and(|v| !known(v)) {
        execution.shift_remove("taskSupport");
        said(
            "execution.taskSupport",
            "dropped (not forbidden, optional or required)",
        );
    }
}

/// Keeps `value` under `_meta[key]` (a `_meta` object made when there is none).
fn keep_in_meta(fields: &mut Map<String, Value>, key: &str, value: Value) {
    let meta = fields
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(key.into(), value);
    }
}
