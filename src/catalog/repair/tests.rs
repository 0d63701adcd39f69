use serde_json::{json, Value};

use super::*;

fn repaired(tool: Value) -> (Value, Vec<String>) {
    let Repaired {
        definition,
        repairs,
    } = repair_tool(&tool).expect("repairable");
    (
        definition,
        repairs.iter().map(ToString::to_string).collect(),
    )
}

#[test]
fn a_valid_tool_is_listed_as_sent() {
    let tool = json!({"name": "t", "description": "d", "title": "T",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}},
        "annotations": {"readOnlyHint": true, "title": "t", "x-own": 1},
        "icons": [{"src": "https://x/i.png", "sizes": ["48x48"], "theme": "dark"}],
        "execution": {"taskSupport": "optional"}, "_meta": {"k": 1}, "x-extra": [1]});
    let (definition, repairs) = repaired(tool.clone());
    assert_eq!(definition, tool);
    assert!(repairs.is_empty(), "{repairs:?}");
}

#[test]
fn an_input_schema_without_a_type_gets_type_object() {
    // @modelcontextprotocol/server-gitlab's nine tools, as it lists them.
    let (definition, repairs) = repaired(json!({"name": "create_repository",
        "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#"}}));
    assert_eq!(
        definition["inputSchema"],
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})
    );
    assert_eq!(repairs, ["inputSchema: added \"type\": \"object\""]);
}

#[test]
fn members_keep_their_order() {
    let (definition, repairs) = repaired(json!({"name": "t", "inputSchema": {"properties": []},
        "description": 1, "annotations": "x", "outputSchema": {"type": "array"}, "x-last": 1}));
    assert_eq!(repairs.len(), 5, "{repairs:?}");
    let keys: Vec<&String> = definition.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["name", "inputSchema", "description", "x-last", "_meta"]
    );
}

#[test]
fn a_missing_input_schema_is_the_empty_object_schema() {
    let (definition, repairs) = repaired(json!({"name": "t"}));
    assert_eq!(definition["inputSchema"], json!({"type": "object"}));
    assert_eq!(repairs.len(), 1, "{repairs:?}");
}

#[test]
fn an_input_schema_of_another_type_is_replaced_and_kept_in_meta() {
    let (definition, repairs) = repaired(json!({"name": "t", "inputSchema": {"type": "string"}}));
    assert_eq!(definition["inputSchema"], json!({"type": "object"}));
    assert_eq!(
        definition["_meta"][INPUT_SCHEMA_META],
        json!({"type": "string"})
    );
    assert_eq!(repairs.len(), 1, "{repairs:?}");
    let (definition, _) = repaired(json!({"name": "t", "inputSchema": "object"}));
    assert_eq!(definition["inputSchema"], json!({"type": "object"}));
    assert_eq!(definition["_meta"][INPUT_SCHEMA_META], json!("object"));
}

#[test]
fn a_type_list_holding_object_is_narrowed_to_object() {
    let (definition, repairs) =
        repaired(json!({"name": "t", "inputSchema": {"type": ["object", "null"]}}));
    assert_eq!(definition["inputSchema"]["type"], "object");
    assert_eq!(repairs, ["inputSchema.type: narrowed to \"object\""]);
}

#[test]
fn properties_become_an_object_of_schema_objects() {
    let (definition, repairs) = repaired(json!({"name": "t", "inputSchema": {"type": "object",
        "properties": {"any": true, "never": false, "odd": 3, "ok": {}}}}));
    assert_eq!(
        definition["inputSchema"]["properties"],
        json!({"any": {}, "ok": {}})
    );
    assert_eq!(repairs.len(), 2, "{repairs:?}");
    let (definition, repairs) =
        repaired(json!({"name": "t", "inputSchema": {"type": "object", "properties": []}}));
    assert_eq!(definition["inputSchema"], json!({"type": "object"}));
    assert_eq!(repairs, ["inputSchema.properties: dropped (not an object)"]);
}

#[test]
fn required_keeps_strings_naming_properties() {
    let (definition, repairs) = repaired(json!({"name": "t", "inputSchema": {"type": "object",
        "properties": {"a": {}}, "required": ["a", 7, "ghost", "a"]}}));
    assert_eq!(definition["inputSchema"]["required"], json!(["a"]));
    assert_eq!(
        repairs,
        ["inputSchema.required: dropped 7, ghost, a (not a property name)"]
    );
    // Names a composition may define stay; a non-array goes.
    let composed = json!({"name": "t", "inputSchema": {"type": "object",
        "properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}], "required": ["b"]}});
    assert_eq!(repaired(composed.clone()).0, composed);
    let (definition, _) =
        repaired(json!({"name": "t", "inputSchema": {"type": "object", "required": "a"}}));
    assert_eq!(definition["inputSchema"], json!({"type": "object"}));
}

#[test]
fn description_and_title_are_strings() {
    let (definition, repairs) =
        repaired(json!({"name": "t", "description": 42, "title": {"en": "T"}}));
    assert_eq!(definition["description"], "42");
    assert!(definition.get("title").is_none());
    assert_eq!(
        repairs[1..],
        [
            "description: written as a string",
            "title: dropped (not a string)"
        ]
    );
}

#[test]
fn annotations_keep_their_spec_types() {
    let (definition, repairs) = repaired(json!({"name": "t", "annotations": {
        "readOnlyHint": "true", "destructiveHint": "no", "title": 1, "idempotentHint": false,
        "x-own": "kept"}}));
    assert_eq!(
        definition["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": false, "x-own": "kept"})
    );
    assert_eq!(repairs.len(), 4, "{repairs:?}");
    let (definition, _) = repaired(json!({"name": "t", "annotations": "readonly"}));
    assert!(definition.get("annotations").is_none());
}

#[test]
fn an_output_schema_that_is_not_an_object_schema_moves_to_meta() {
    for schema in [
        json!({"type": "array"}),
        json!({"properties": {"a": {}}}),
        json!({"type": "object", "properties": {"a": true}}),
        json!(true),
    ] {
        let (definition, repairs) = repaired(json!({"name": "t", "outputSchema": schema}));
        assert!(definition.get("outputSchema").is_none(), "{definition}");
        assert_eq!(
            definition["_meta"][crate::catalog::OUTPUT_SCHEMA_META],
            schema
        );
        assert_eq!(
            repairs[1..],
            ["outputSchema: not an object schema; moved to _meta"]
        );
    }
}

#[test]
fn icons_and_execution_keep_their_spec_shapes() {
    let (definition, repairs) = repaired(json!({"name": "t", "inputSchema": {"type": "object"},
        "icons": [{"src": "a.png", "theme": "blue", "sizes": "big"}, {"mimeType": "image/png"}],
        "execution": {"taskSupport": "always"}}));
    assert_eq!(definition["icons"], json!([{"src": "a.png"}]));
    assert_eq!(definition["execution"], json!({}));
    assert_eq!(repairs.len(), 3, "{repairs:?}");
    let (definition, _) = repaired(json!({"name": "t", "icons": {}, "execution": 1, "_meta": 2}));
    for gone in ["icons", "execution", "_meta"] {
        assert!(definition.get(gone).is_none(), "{definition}");
    }
}

#[test]
fn a_tool_without_a_name_is_beyond_repair() {
    assert_eq!(repair_tool(&json!(42)), Err(Unrepairable::NotAnObject));
    assert_eq!(repair_tool(&json!({"name": ""})), Err(Unrepairable::NoName));
    assert_eq!(repair_tool(&json!({"name": 3})), Err(Unrepairable::NoName));
}

#[test]
fn a_repaired_tool_needs_no_second_repair() {
    let tool = json!({"name": "t", "description": 1, "inputSchema": {"type": "string"},
        "outputSchema": {"type": "array"}, "annotations": {"readOnlyHint": "x"}});
    let (once, _) = repaired(tool);
    assert_eq!(repaired(once.clone()), (once, vec![]));
}

#[test]
fn a_server_note_counts_repairs_and_skipped_tools() {
    let gitlab = json!({"name": "a", "inputSchema": {}});
    let tools = [
        gitlab.clone(),
        json!({"name": "b", "inputSchema": {}}),
        json!(7),
        json!({"name": "ok", "inputSchema": {"type": "object"}}),
    ];
    let found = ServerRepairs::of(&tools);
    assert_eq!(found.repaired.len(), 2);
    assert_eq!(found.skipped, [Unrepairable::NotAnObject]);
    assert!(found.of_tool("a").is_some() && found.of_tool("ok").is_none());
    assert_eq!(
        found.note().as_deref(),
        Some(
            "2 tools repaired for strict clients (inputSchema: added \"type\": \"object\" ×2); \
             1 beyond repair skipped (a tool that is not a JSON object)"
        )
    );
    assert_eq!(ServerRepairs::of(&[]).note(), None);
    assert_eq!(
        ServerRepairs::of(&[Value::Null]).note(),
        None,
        "did not travel"
    );
}
