//! A tool's `outputSchema` against budgeted results: can `structuredContent` be cut and still
//! conform? Decided from the schema alone, once, so that what a tool is advertised with never
//! changes as a side effect of a call.
//!
//! The only cut a conforming value may get is shortening arrays (whole trailing elements
//! dropped, anywhere in the tree; object members and strings are never touched). A schema is
//! *cut-tolerant* when no such shortening can make a conforming value stop conforming: it asks
//! for no array length (`minItems` > 0), no elements (`contains`, `minContains`), no positions
//! (`prefixItems`, `items` as a tuple), no array values (`enum`/`const` holding arrays), and
//! nothing it merely tests (`not`, `if`, `oneOf` branches) depends on the contents of an
//! array. Local `$ref`s are followed; a reference it cannot follow makes it intolerant.

use std::collections::HashSet;

use serde_json::Value;

/// The `_meta` member that keeps a tool's `outputSchema` when the gateway advertises the tool
/// without it (its results may be cut in ways the schema does not allow).
pub const OUTPUT_SCHEMA_META: &str = "mcp-launch/outputSchema";

/// True when shortening arrays in a value that conforms to `schema` always leaves a value
/// that conforms (see the module's doc).
pub fn is_cut_tolerant(schema: &Value) -> bool {
    Walk {
        root: schema,
        seen: HashSet::new(),
    }
    .tolerant(schema, Context::Asserted)
}

/// Moves the definition's `outputSchema` under `_meta["mcp-launch/outputSchema"]` (so nothing
/// is lost); true when it had one.
pub fn move_output_schema_to_meta(definition: &mut Value) -> bool {
    let Some(fields) = definition.as_object_mut() else {
        return false;
    };
    let Some(schema) = fields.shift_remove("outputSchema") else {
        return false;
    };
    let meta = fields
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(OUTPUT_SCHEMA_META.into(), schema);
    }
    true
}

/// How a subschema's verdict is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Context {
    /// The value must match it: shortening must keep a match a match.
    Asserted,
    /// Whether the value matches decides something (`not`, `if`, `oneOf`): shortening must
    /// not change the verdict either way, so nothing in it may look at an array's contents.
    Tested,
}

struct Walk<'a> {
    root: &'a Value,
    /// References already followed (in a context): a cycle is judged by its first visit.
    seen: HashSet<(String, Context)>,
}

impl<'a> Walk<'a> {
    fn tolerant(&mut self, schema: &'a Value, context: Context) -> bool {
        let Value::Object(keywords) = schema else {
            // `true`, `false`: shortening changes nothing.
            return true;
        };
        keywords
            .iter()
            .all(|(keyword, value)| self.keyword(keyword, value, context))
    }

    fn keyword(&mut self, keyword: &str, value: &'a Value, context: Context) -> bool {
        use Context::{Asserted, Tested};
        match (keyword, context) {
            ("$ref", _) => self.follow(value, context),
            ("$dynamicRef" | "$recursiveRef", _) => false,
            // Lengths and elements an array must have.
            ("minItems" | "minContains", Asserted) => value.as_u64() == Some(0),
            ("contains" | "prefixItems", Asserted) => false,
            ("items", Asserted) if value.is_array() => false,
            // A tested schema may look at no array's length or contents.
            (
                "minItems" | "maxItems" | "uniqueItems" | "contains" | "minContains"
                | "maxContains" | "prefixItems" | "items" | "additionalItems" | "unevaluatedItems",
                Tested,
            ) => false,
            ("enum", _) => !value.as_array().into_iter().flatten().any(holds_array),
            ("const", _) => !holds_array(value),
            ("items" | "additionalItems" | "unevaluatedItems", Asserted)
            | ("additionalProperties" | "unevaluatedProperties", _)
            | ("then" | "else", _) => self.tolerant(value, context),
            ("properties" | "patternProperties" | "dependentSchemas", _) => value
                .as_object()
                .into_iter()
                .flatten()
                .all(|(_, sub)| self.tolerant(sub, context)),
            // Draft 7's `dependencies`: lists of names (never dropped) or schemas.
            ("dependencies", _) => value
                .as_object()
                .into_iter()
                .flatten()
                .all(|(_, sub)| sub.is_array() || self.tolerant(sub, context)),
            ("allOf" | "anyOf", _) => self.all(value, context),
            ("oneOf", _) => self.all(value, Tested),
            ("not" | "if", _) => self.tolerant(value, Tested),
            // Everything else asks nothing of arrays (types, strings, numbers, required
            // members, property names, annotations, `$defs` reached only through `$ref`).
            _ => true,
        }
    }

    fn all(&mut self, list: &'a Value, context: Context) -> bool {
        list.as_array()
            .into_iter()
            .flatten()
            .all(|sub| self.tolerant(sub, context))
    }

    /// A local reference (`#` or `#/json/pointer`), followed; any other is not.
    fn follow(&mut self, reference: &'a Value, context: Context) -> bool {
        let Some(pointer) = reference.as_str().and_then(|r| r.strip_prefix('#')) else {
            return false;
        };
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return false; // an anchor (`#name`)
        }
        if !self.seen.insert((pointer.to_string(), context)) {
            return true;
        }
        let decoded = percent_decoded(pointer);
        match self.root.pointer(&decoded) {
            Some(target) => self.tolerant(target, context),
            None => false,
        }
    }
}

/// True when the value is or contains an array.
fn holds_array(value: &Value) -> bool {
    match value {
        Value::Array(_) => true,
        Value::Object(members) => members.values().any(holds_array),
        _ => false,
    }
}

/// A URI fragment's `%XX` escapes decoded (JSON pointers in `$ref`s are URI fragments).
fn percent_decoded(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object_with(results: Value) -> Value {
        json!({"type": "object", "properties": {"results": results}, "required": ["results"]})
    }

    #[test]
    fn plain_arrays_objects_and_upper_bounds_are_tolerant() {
        for schema in [
            json!(true),
            json!({"type": "object"}),
            object_with(json!({"type": "array", "items": {"type": "string"}})),
            object_with(json!({"type": "array", "maxItems": 10, "uniqueItems": true,
                "minItems": 0, "items": {"type": "object", "required": ["id"],
                "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}}}})),
            json!({"type": "object", "additionalProperties": {"type": "array"},
                "minProperties": 1, "propertyNames": {"pattern": "^[a-z]+$"}}),
            json!({"anyOf": [{"type": "array"}, {"type": "object"}],
                "allOf": [{"required": ["a"]}]}),
            json!({"not": {"type": "string"}, "oneOf": [{"type": "object"}, {"type": "null"}]}),
            json!({"enum": ["a", {"b": 1}], "const": {"c": "d"}}),
        ] {
            assert!(is_cut_tolerant(&schema), "{schema}");
        }
    }

    #[test]
    fn what_shortening_could_break_is_intolerant_anywhere_in_the_tree() {
        for results in [
            json!({"type": "array", "minItems": 1}),
            json!({"type": "array", "contains": {"const": "x"}}),
            json!({"type": "array", "minContains": 2}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
            json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
            json!({"enum": [[1, 2, 3]]}),
            json!({"const": {"a": [1]}}),
            json!({"type": "object", "properties": {"deep": {"type": "array",
                "items": {"type": "array", "minItems": 2}}}}),
            // What is only tested must not look at arrays either.
            json!({"not": {"type": "array", "maxItems": 2}}),
            json!({"oneOf": [{"type": "array", "maxItems": 3}, {"type": "array"}]}),
            json!({"if": {"properties": {"a": {"items": {"type": "string"}}}},
                "then": {"required": ["b"]}}),
            json!({"$ref": "https://example.com/schema.json"}),
            json!({"$ref": "#anchor"}),
            json!({"$dynamicRef": "#meta"}),
        ] {
            let schema = object_with(results);
            assert!(!is_cut_tolerant(&schema), "{schema}");
        }
    }

    #[test]
    fn local_references_are_followed_including_cycles() {
        let tolerant = json!({
            "$defs": {"node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"
        });
        assert!(is_cut_tolerant(&tolerant));
        let intolerant = json!({
            "definitions": {"a~b": {"type": "array", "minItems": 1}},
            "type": "object",
            "properties": {"x": {"$ref": "#/definitions/a~0b"}}
        });
        assert!(!is_cut_tolerant(&intolerant));
        let escaped = json!({
            "$defs": {"a b": {"type": "array", "minItems": 3}},
            "properties": {"x": {"$ref": "#/$defs/a%20b"}}
        });
        assert!(!is_cut_tolerant(&escaped), "percent-escaped pointers");
        let dangling = json!({"properties": {"x": {"$ref": "#/$defs/missing"}}});
        assert!(!is_cut_tolerant(&dangling));
        // An intolerant definition nobody refers to does not count.
        let unused = json!({"$defs": {"x": {"minItems": 4}}, "type": "object"});
        assert!(is_cut_tolerant(&unused));
    }

    #[test]
    fn the_schema_moves_under_meta() {
        let mut tool = json!({"name": "t", "outputSchema": {"type": "object"},
            "_meta": {"other": 1}});
        assert!(move_output_schema_to_meta(&mut tool));
        assert_eq!(
            tool,
            json!({"name": "t", "_meta": {"other": 1,
                "mcp-launch/outputSchema": {"type": "object"}}})
        );
        assert!(!move_output_schema_to_meta(&mut tool), "once");
        let mut bare = json!({"name": "u", "outputSchema": true});
        move_output_schema_to_meta(&mut bare);
        assert_eq!(bare["_meta"][OUTPUT_SCHEMA_META], json!(true));
    }
}
