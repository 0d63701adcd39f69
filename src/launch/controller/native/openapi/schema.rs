//! A tool's JSON Schema made into `components.schemas` entries of an OpenAPI 3.1 document.
//!
//! OpenAPI 3.1 schema objects are JSON Schema 2020-12, so the schema is kept as the server
//! wrote it (`anyOf`/`oneOf`/`allOf`, `enum`, `const`, `default`, `format`, bounds, `pattern`,
//! `additionalProperties`, descriptions, …) except for what changes meaning once it is no
//! longer a document of its own:
//! - Local `$ref`s are JSON pointers into the schema's root (`#/$defs/X`, draft-07's
//!   `#/definitions/X`, `#` for recursion). Inside an OpenAPI document they would resolve
//!   against the document's root, where they name nothing. So the root's `$defs` and
//!   `definitions` members become components of their own, and every local reference is
//!   rewritten to the component now holding its target: the member's, or the schema's own
//!   (`#` and `#/properties/…`).
//! - `$id` is dropped: it would make its subschema a resource with a base URI of its own,
//!   against which the rewritten `#/components/…` references would then resolve — and fail.
//!   References by the root's `$id` (`<id>#/$defs/X`) are rewritten like local ones.
//! - `$schema` is dropped: MCP servers mostly declare draft-07, and a schema object that names
//!   its dialect is evaluated by that dialect's rules (`$ref` ignoring its siblings) instead
//!   of the document's 2020-12 ones this import targets; 2020-12 allows it only at a
//!   resource root anyway.
//! - Older forms 2020-12 spells differently, which its meta-schema (and so the OpenAPI
//!   validator) rejects, are translated with their meaning: draft-07's array `items` becomes
//!   `prefixItems` (its `additionalItems` then `items`), draft-04's boolean
//!   `exclusiveMinimum`/`exclusiveMaximum` takes the number of `minimum`/`maximum`.
//! - A reference that does not resolve inside the schema (a URL, another file, an `#anchor`,
//!   a missing definition) is removed and reported: that subschema then accepts anything,
//!   which keeps the document valid and the tool callable (the controller validates
//!   arguments against the original schema, not this copy).
//! - Any other keyword whose value holds a `$ref` key (a `default`, `enum`, `const` or
//!   `examples` of JSON Schema-like data; an unknown keyword) is removed and reported: the
//!   merge, the validator and most OpenAPI tools take every `$ref` key for a reference,
//!   wherever it stands, and this one resolves nowhere.
//!
//! Only keywords that hold subschemas are walked and rewritten; everything else is copied.

use serde_json::{Map, Value};

use super::names::Unique;

/// The keywords whose members a reference may name (`$defs` is 2020-12's, `definitions`
/// draft-07's).
const DEFINITIONS: [&str; 2] = ["$defs", "definitions"];

/// Keywords whose value is one subschema.
const SUBSCHEMA: [&str; 12] = [
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas (`dependencies` also holds name lists,
/// which the walk skips as non-objects).
const SUBSCHEMA_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];

/// A schema ready for `components.schemas`.
#[derive(Debug)]
pub(super) struct Imported {
    /// The schema, without its root definitions, references rewritten.
    pub(super) root: Value,
    /// The root's definitions as components: `(component name, schema)`, in schema order.
    pub(super) definitions: Vec<(String, Value)>,
    /// What was removed, in schema order.
    pub(super) issues: Vec<Issue>,
}

/// Something removed from a schema so that the document stays valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Issue {
    /// A `$ref` that resolves nowhere in the schema, as written (JSON text when not a string).
    UnresolvedReference(String),
    /// A keyword that is not a subschema but holds a `$ref` key.
    ReferenceInData(String),
}

/// Imports `schema`, which becomes the component `component`; its root definitions become
/// components named `<tool>__<member>` (taken from `names`).
pub(super) fn import(schema: &Value, component: &str, tool: &str, names: &mut Unique) -> Imported {
    let mut members = Vec::new();
    for keyword in DEFINITIONS {
        if let Some(Value::Object(definitions)) = schema.get(keyword) {
            for (member, value) in definitions {
                let name = names.allocate(&format!("{tool}__{member}"));
                members.push(Member {
                    keyword,
                    member,
                    name,
                    value,
                });
            }
        }
    }
    let mut rewriter = Rewriter {
        original: schema,
        component,
        base: schema
            .get("$id")
            .and_then(Value::as_str)
            .map(without_fragment),
        members: &members,
        issues: Vec::new(),
    };
    let mut root = schema.clone();
    if let Value::Object(map) = &mut root {
        for keyword in DEFINITIONS {
            map.shift_remove(keyword);
        }
    }
    rewriter.visit(&mut root);
    let definitions = members
        .iter()
        .map(|member| {
            let mut value = member.value.clone();
            rewriter.visit(&mut value);
            (member.name.clone(), value)
        })
        .collect();
    Imported {
        root,
        definitions,
        issues: rewriter.issues,
    }
}

/// One member of the root's definitions.
struct Member<'a> {
    /// `$defs` or `definitions`.
    keyword: &'a str,
    /// Its name there.
    member: &'a str,
    /// Its component.
    name: String,
    value: &'a Value,
}

/// Rewrites the references of one imported schema.
struct Rewriter<'a> {
    /// The schema as the server wrote it: references are resolved against it.
    original: &'a Value,
    /// The component the root becomes.
    component: &'a str,
    /// The root's `$id`, without fragment.
    base: Option<&'a str>,
    members: &'a [Member<'a>],
    issues: Vec<Issue>,
}

impl Rewriter<'_> {
    /// Rewrites one schema object and its subschemas in place.
    fn visit(&mut self, schema: &mut Value) {
        let Value::Object(map) = schema else {
            return;
        };
        map.shift_remove("$schema");
        map.shift_remove("$id");
        modernize(map);
        self.rewrite_ref(map);
        self.drop_data_references(map);
        for (keyword, child) in map.iter_mut() {
            let keyword = keyword.as_str();
            if SUBSCHEMA.contains(&keyword) {
                self.visit(child);
            } else if SUBSCHEMA_LISTS.contains(&keyword) {
                if let Value::Array(items) = child {
                    items.iter_mut().for_each(|item| self.visit(item));
                }
            } else if SUBSCHEMA_MAPS.contains(&keyword) {
                if let Value::Object(members) = child {
                    members.values_mut().for_each(|member| self.visit(member));
                }
            }
        }
    }

    /// Points the schema's `$ref` at the component holding its target, or removes it.
    fn rewrite_ref(&mut self, map: &mut Map<String, Value>) {
        let Some(reference) = map.get_mut("$ref") else {
            return;
        };
        let target = reference.as_str().and_then(|r| self.target(r));
        match target {
            Some(target) => *reference = Value::String(target),
            None => {
                let written = match reference {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                self.issues.push(Issue::UnresolvedReference(written));
                map.shift_remove("$ref");
            }
        }
    }

    /// Removes the keywords that are not subschemas but hold a `$ref` key.
    fn drop_data_references(&mut self, map: &mut Map<String, Value>) {
        let dropped: Vec<String> = (map.iter())
            .filter(|(keyword, value)| !is_schema_keyword(keyword) && holds_ref_key(value))
            .map(|(keyword, _)| keyword.clone())
            .collect();
        for keyword in dropped {
            map.shift_remove(&keyword);
            self.issues.push(Issue::ReferenceInData(keyword));
        }
    }

    /// The rewritten form of `reference`, when it points at something in the schema.
    fn target(&self, reference: &str) -> Option<String> {
        let fragment = self.local_fragment(reference)?;
        let pointer = percent_decode(fragment)?;
        self.original.pointer(&pointer)?;
        if fragment.is_empty() {
            return Some(component_ref(self.component, ""));
        }
        let path = fragment.strip_prefix('/')?;
        let (first, after) = match path.split_once('/') {
            Some((first, after)) => (token(first), Some(after)),
            None => (token(path), None),
        };
        if !DEFINITIONS.contains(&first.as_str()) {
            return Some(component_ref(self.component, fragment));
        }
        // `/$defs/<member>[/rest]`: the rest stays as written, under the member's component.
        let after = after?;
        let (member, rest) = after.split_at(after.find('/').unwrap_or(after.len()));
        let member = token(member);
        let found = self
            .members
            .iter()
            .find(|m| m.keyword == first && m.member == member)?;
        Some(component_ref(&found.name, rest))
    }

    /// The fragment of a reference to this schema: `#…` or `<root $id>#…` (or no fragment
    /// at all, which names the root).
    fn local_fragment<'r>(&self, reference: &'r str) -> Option<&'r str> {
        let (uri, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        (uri.is_empty() || self.base == Some(uri)).then_some(fragment)
    }
}

/// Whether `keyword`'s value is a reference or holds subschemas.
fn is_schema_keyword(keyword: &str) -> bool {
    keyword == "$ref"
        || SUBSCHEMA.contains(&keyword)
        || SUBSCHEMA_LISTS.contains(&keyword)
        || SUBSCHEMA_MAPS.contains(&keyword)
}

/// Whether an object anywhere in `value` has a `$ref` key.
fn holds_ref_key(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.contains_key("$ref") || map.values().any(holds_ref_key),
        Value::Array(items) => items.iter().any(holds_ref_key),
        _ => false,
    }
}

/// `#/components/schemas/<name><rest>`.
fn component_ref(name: &str, rest: &str) -> String {
    format!("#/components/schemas/{name}{rest}")
}

/// A pointer token as a name: percent-decoded (it comes from a URI fragment), then
/// JSON-pointer unescaped.
fn token(raw: &str) -> String {
    let decoded = percent_decode(raw).unwrap_or_else(|| raw.to_string());
    decoded.replace("~1", "/").replace("~0", "~")
}

/// `text` with `%XX` escapes decoded; `None` when an escape is malformed or the result is
/// not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let digit = |b: u8| char::from(b).to_digit(16);
            decoded.push(u8::try_from(digit(hex[0])? * 16 + digit(hex[1])?).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// An `$id` without its fragment (draft-07 allows an empty one: `http://x/s.json#`).
fn without_fragment(id: &str) -> &str {
    id.split_once('#').map_or(id, |(uri, _)| uri)
}

/// Translates the older forms 2020-12 spells differently, keeping their meaning.
fn modernize(map: &mut Map<String, Value>) {
    if map.get("items").is_some_and(Value::is_array) {
        // Draft-07 tuple: `items: [..]` + `additionalItems` = 2020-12 `prefixItems` + `items`.
        if let Some(tuple) = map.shift_remove("items") {
            if let Some(rest) = map.shift_remove("additionalItems") {
                map.insert("items".into(), rest);
            }
            map.insert("prefixItems".into(), tuple);
        }
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(on)) = map.get(exclusive) {
            // Draft-04: a flag on `minimum`; 2020-12: the exclusive bound itself.
            let on = *on;
            map.shift_remove(exclusive);
            if let Some(limit) = on.then(|| map.shift_remove(bound)).flatten() {
                map.insert(exclusive.into(), limit);
            }
        }
    }
}
