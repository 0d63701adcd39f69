//! Read-only views of a tool definition (kept as the server's raw JSON).

use serde_json::Value;

/// The tool's name.
pub fn name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The tool's description, or `""`.
pub fn description(tool: &Value) -> &str {
    tool.get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The tool's input schema, or an empty object schema.
pub fn input_schema(tool: &Value) -> Value {
    tool.get("inputSchema")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object"}))
}

/// The tool's output schema, when it declares one.
pub fn output_schema(tool: &Value) -> Option<&Value> {
    tool.get("outputSchema")
}

/// Names of the required parameters, in schema order.
pub fn required_params(tool: &Value) -> Vec<String> {
    tool.pointer("/inputSchema/required")
        .and_then(Value::as_array)
        .map(|req| {
            req.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A ready-to-run arguments object: every required parameter (and, when there are none, the
/// first optional one) with a placeholder of its type (its default, first enum value or
/// example when the schema gives one).
pub fn example_arguments(tool: &Value) -> Value {
    let schema = input_schema(tool);
    let props = schema.get("properties").and_then(Value::as_object);
    let required = required_params(tool);
    let mut args = serde_json::Map::new();
    let Some(props) = props else {
        return Value::Object(args);
    };
    let chosen: Vec<&String> = if required.is_empty() {
        props.keys().take(1).collect()
    } else {
        required.iter().collect()
    };
    for name in chosen {
        if let Some(prop) = props.get(name.as_str()) {
            args.insert(name.clone(), placeholder(name, prop, &schema));
        }
    }
    Value::Object(args)
}

fn placeholder(name: &str, prop: &Value, root: &Value) -> Value {
    let prop = resolve_ref(prop, root);
    if let Some(v) = prop.get("default").or_else(|| prop.get("const")) {
        return v.clone();
    }
    if let Some(v) = prop
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return v.clone();
    }
    if let Some(v) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return v.clone();
    }
    if let Some(first) = ["anyOf", "oneOf"].iter().find_map(|k| {
        prop.get(*k)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
    }) {
        return placeholder(name, first, root);
    }
    let ty = match prop.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        Some(Value::String(t)) => Some(t.as_str()),
        _ => None,
    };
    match ty {
        Some("integer") => prop.get("minimum").cloned().unwrap_or(Value::from(1)),
        Some("number") => prop.get("minimum").cloned().unwrap_or(Value::from(1.0)),
        Some("boolean") => Value::Bool(true),
        Some("array") => Value::Array(vec![]),
        Some("object") => Value::Object(Default::default()),
        _ => Value::String(format!("<{name}>")),
    }
}

fn resolve_ref<'a>(prop: &'a Value, root: &'a Value) -> &'a Value {
    prop.get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(prop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn example_fills_required_params_by_type() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object",
            "properties": {
                "path": {"type": "string"},
                "count": {"type": "integer", "minimum": 5},
                "mode": {"enum": ["fast", "slow"]},
                "deep": {"type": "boolean"},
                "opt": {"type": "string"}},
            "required": ["path", "count", "mode", "deep"]}});
        assert_eq!(
            example_arguments(&tool),
            json!({"path": "<path>", "count": 5, "mode": "fast", "deep": true})
        );
        assert_eq!(
            required_params(&tool),
            vec!["path", "count", "mode", "deep"]
        );
    }

    #[test]
    fn example_uses_defaults_refs_and_first_optional() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object",
            "$defs": {"Kind": {"type": "string", "enum": ["a", "b"]}},
            "properties": {"kind": {"$ref": "#/$defs/Kind"}}}});
        assert_eq!(example_arguments(&tool), json!({"kind": "a"}));
        assert_eq!(example_arguments(&json!({"name": "x"})), json!({}));
    }
}
