//! The `$ref`s of one server's document: which components an operation reaches, and how
//! references are renamed once the components move into the merged document.
//!
//! Only local references to components (`#/components/<kind>/<name>`, optionally deeper) can
//! follow a component to its new name; anything else (another file, a URL, `#/paths/…`) has
//! no meaning once the document is merged, so an operation reaching one is left out.
//! Names are matched after undoing JSON-pointer escapes but not percent-encoding, which mcpo
//! (FastAPI) never emits: its component names are plain identifiers.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// A component of one kind: `("schemas", "echo_form_model")`.
pub(super) type ComponentKey = (String, String);

/// The component kind that is never copied: the merged document has its own security.
const SECURITY_SCHEMES: &str = "securitySchemes";

/// A local reference to a component, split into its parts.
#[derive(Debug, PartialEq, Eq)]
struct ComponentRef<'a> {
    /// `schemas`, `responses`, …
    kind: &'a str,
    /// The component's name, JSON-pointer escapes (`~0`, `~1`) undone.
    name: String,
    /// What follows the name (`/properties/x`), usually empty.
    rest: &'a str,
}

/// Splits `#/components/<kind>/<name>[/rest]`; `None` for any other reference.
fn parse(reference: &str) -> Option<ComponentRef<'_>> {
    let pointer = reference.strip_prefix("#/components/")?;
    let (kind, tail) = pointer.split_once('/')?;
    let (name, rest) = tail.split_at(tail.find('/').unwrap_or(tail.len()));
    let name = name.replace("~1", "/").replace("~0", "~");
    Some(ComponentRef { kind, name, rest })
}

/// Every string-valued `$ref` under `value`, in document order.
fn collect_refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("$ref", Value::String(reference)) => found.push(reference),
                    _ => collect_refs(child, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, found)),
        _ => {}
    }
}

/// Replaces every `$ref` under `value` that points at a renamed component.
pub(super) fn rename_refs(value: &mut Value, renamed: &HashMap<ComponentKey, String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match child {
                    Value::String(reference) if key == "$ref" => {
                        if let Some(new) = renamed_ref(reference, renamed) {
                            *reference = new;
                        }
                    }
                    _ => rename_refs(child, renamed),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rename_refs(item, renamed)),
        _ => {}
    }
}

/// `reference` pointing at the component's new name, when it was renamed.
fn renamed_ref(reference: &str, renamed: &HashMap<ComponentKey, String>) -> Option<String> {
    let target = parse(reference)?;
    let new = renamed.get(&(target.kind.to_string(), target.name))?;
    Some(format!("#/components/{}/{new}{}", target.kind, target.rest))
}

/// The components of one server's document, by kind, without its security schemes.
#[derive(Debug, Default)]
pub(super) struct Components<'a> {
    kinds: Vec<(&'a str, &'a Map<String, Value>)>,
}

impl<'a> Components<'a> {
    /// Reads `document.components`; `problems` receives a line per part that is not an object
    /// (that part is ignored).
    pub(super) fn read(document: &'a Value, problems: &mut Vec<String>) -> Self {
        let mut kinds = Vec::new();
        match document.get("components") {
            None => {}
            Some(Value::Object(components)) => {
                for (kind, members) in components {
                    match members {
                        _ if kind == SECURITY_SCHEMES => {}
                        Value::Object(members) => kinds.push((kind.as_str(), members)),
                        _ => problems.push(format!("`components.{kind}` is not an object")),
                    }
                }
            }
            Some(_) => problems.push("`components` is not an object".to_string()),
        }
        Self { kinds }
    }

    /// One component.
    fn get(&self, kind: &str, name: &str) -> Option<&'a Value> {
        let (_, members) = self.kinds.iter().find(|(k, _)| *k == kind)?;
        members.get(name)
    }

    /// Every component, kinds and names in document order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str, &'a Value)> + '_ {
        self.kinds.iter().flat_map(|(kind, members)| {
            members
                .iter()
                .map(move |(name, value)| (*kind, name.as_str(), value))
        })
    }

    /// The components `start` reaches, directly or through other components. `Err` names the
    /// first reference that does not resolve to a component of this document.
    pub(super) fn reach(&self, start: &'a Value) -> Result<HashSet<ComponentKey>, Unresolved> {
        self.walk([start], true)
    }

    /// The components of this document the `start` values reach; references to anything else
    /// are passed over.
    pub(super) fn reach_known<'s>(
        &self,
        start: impl IntoIterator<Item = &'s Value>,
    ) -> HashSet<ComponentKey>
    where
        'a: 's,
    {
        self.walk(start, false).unwrap_or_default()
    }

    fn walk<'s>(
        &self,
        start: impl IntoIterator<Item = &'s Value>,
        strict: bool,
    ) -> Result<HashSet<ComponentKey>, Unresolved>
    where
        'a: 's,
    {
        let mut reached = HashSet::new();
        let mut pending: Vec<&'s Value> = start.into_iter().collect();
        while let Some(value) = pending.pop() {
            let mut references = Vec::new();
            collect_refs(value, &mut references);
            for reference in references {
                let component = parse(reference)
                    .and_then(|target| Some((self.get(target.kind, &target.name)?, target)));
                let Some((component, target)) = component else {
                    if strict {
                        return Err(Unresolved {
                            reference: reference.to_string(),
                        });
                    }
                    continue;
                };
                if reached.insert((target.kind.to_string(), target.name)) {
                    pending.push(component);
                }
            }
        }
        Ok(reached)
    }
}

/// A `$ref` that names no component of its document: the path using it is left out of the
/// merged spec, with a warning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{reference}` names no component of its document")]
pub(super) struct Unresolved {
    /// The reference as written.
    pub reference: String,
}

impl crate::error::Actionable for Unresolved {
    fn kind(&self) -> &'static str {
        "unresolved_reference"
    }

    fn help(&self) -> String {
        "the server's OpenAPI document is incomplete: update the server, or deny the tool \
         (`mcp-launch tool deny SERVER TOOL`)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_component_references_only() {
        let r = parse("#/components/schemas/a~1b~0c/properties/x").unwrap();
        assert_eq!(
            (r.kind, r.name.as_str(), r.rest),
            ("schemas", "a/b~c", "/properties/x")
        );
        assert_eq!(parse("#/components/schemas/echo").unwrap().rest, "");
        assert_eq!(parse("other.json#/components/schemas/echo"), None);
        assert_eq!(parse("#/paths/~1echo"), None);
        assert_eq!(parse("#/components/schemas"), None);
    }

    #[test]
    fn reaches_transitively_and_stops_on_cycles() {
        let doc = json!({"components": {"schemas": {
            "a": {"properties": {"b": {"$ref": "#/components/schemas/b"}}},
            "b": {"items": {"$ref": "#/components/schemas/a"}},
            "c": {}
        }}});
        let components = Components::read(&doc, &mut Vec::new());
        let start = json!({"schema": {"anyOf": [{"$ref": "#/components/schemas/a"}]}});
        let reached = components.reach(&start).unwrap();
        let mut names: Vec<_> = reached.into_iter().map(|(_, n)| n).collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
        let missing = json!({"$ref": "#/components/schemas/zzz"});
        assert_eq!(
            components.reach(&missing).unwrap_err().reference,
            "#/components/schemas/zzz"
        );
    }

    #[test]
    fn renames_nested_references_and_keeps_the_rest() {
        let renamed: HashMap<_, _> = [(("schemas".into(), "a".into()), "s__a".to_string())].into();
        let mut value = json!([{"x": {"$ref": "#/components/schemas/a/properties/p"}},
                               {"$ref": "#/components/schemas/b"}]);
        rename_refs(&mut value, &renamed);
        assert_eq!(
            value,
            json!([{"x": {"$ref": "#/components/schemas/s__a/properties/p"}},
                   {"$ref": "#/components/schemas/b"}])
        );
    }
}
