//! `server_document` on real tool definitions (tests/fixtures/search/tools.json, captured from
//! the servers' `tools/list`) and on handcrafted ones; [`merged`] takes them through the real
//! merge and the real OpenAPI validator.

use serde_json::{json, Value};

use super::*;

mod merged;

/// The real servers' tools, by server, in capture order.
fn captured() -> Vec<(String, Vec<Value>)> {
    let text = include_str!("../../../../../../tests/fixtures/search/tools.json");
    let servers: Map<String, Value> = serde_json::from_str(text).expect("fixture is JSON");
    let tools = |v: Value| v.as_array().cloned().expect("a list of tools");
    servers.into_iter().map(|(s, v)| (s, tools(v))).collect()
}

fn captured_tools(server: &str) -> Vec<Value> {
    let all = captured().into_iter();
    all.filter(|(s, _)| s == server)
        .flat_map(|(_, t)| t)
        .collect()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools.iter().find(|t| t["name"] == name).expect("tool")
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The `post` operation of `/<tool>`.
fn operation<'a>(generated: &'a GeneratedDocument, tool: &str) -> &'a Value {
    &generated.document["paths"][format!("/{tool}")]["post"]
}

/// The schema a `{"$ref": …}` names, within `document`.
fn deref<'a>(document: &'a Value, holder: &Value) -> &'a Value {
    let reference = holder["$ref"].as_str().expect("a $ref");
    let pointer = reference.strip_prefix('#').expect("a local $ref");
    document.pointer(pointer).expect("the $ref resolves")
}

fn input_of<'a>(generated: &'a GeneratedDocument, tool: &str) -> &'a Value {
    let body = &operation(generated, tool)["requestBody"]["content"]["application/json"];
    deref(&generated.document, &body["schema"])
}

fn result_schema<'a>(generated: &'a GeneratedDocument, tool: &str) -> &'a Value {
    &operation(generated, tool)["responses"]["200"]["content"]["application/json"]["schema"]
}

/// Every string `$ref` under `value`.
fn refs(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("$ref", Value::String(r)) => found.push(r.clone()),
                    _ => refs(child, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| refs(item, found)),
        _ => {}
    }
}

fn assert_refs_resolve(document: &Value) {
    let mut found = Vec::new();
    refs(document, &mut found);
    for reference in found {
        let pointer = reference.strip_prefix('#');
        let target = pointer.and_then(|p| document.pointer(p));
        assert!(target.is_some(), "{reference} does not resolve");
    }
}

/// `schema` without its top-level `$schema`, as the import keeps it.
fn without_dialect(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(map) = schema.as_object_mut() {
        map.shift_remove("$schema");
    }
    schema
}

fn warnings(generated: &GeneratedDocument) -> Vec<String> {
    generated.warnings.iter().map(ToString::to_string).collect()
}

#[test]
fn paths_are_exactly_the_tools_of_real_servers() {
    for server in ["everything", "filesystem", "memory", "time", "git"] {
        let tools = captured_tools(server);
        let generated = server_document(server, &tools);
        assert_eq!(generated.tools, names(&tools), "{server}");
        let paths: Vec<_> = (generated.document["paths"].as_object().unwrap().keys())
            .map(|p| p.trim_start_matches('/').to_string())
            .collect();
        assert_eq!(paths, names(&tools), "{server}");
        assert!(generated.warnings.is_empty(), "{:?}", generated.warnings);
        let document = &generated.document;
        assert_eq!(document["openapi"], "3.1.0");
        assert_eq!(document["info"]["title"], server);
        assert_eq!(document["servers"], json!([{"url": format!("/{server}")}]));
        assert_refs_resolve(document);
    }
}

#[test]
fn real_schemas_are_kept_intact() {
    for (server, tools) in captured() {
        let generated = server_document(&server, &tools);
        for tool in &tools {
            let name = tool["name"].as_str().unwrap();
            let input = input_of(&generated, name);
            assert_eq!(
                *input,
                without_dialect(&tool["inputSchema"]),
                "{server}/{name}"
            );
            let op = operation(&generated, name);
            assert_eq!(op["description"], tool["description"], "{server}/{name}");
            assert_eq!(
                op["x-mcp-annotations"], tool["annotations"],
                "{server}/{name}"
            );
        }
    }
    let everything = server_document("everything", &captured_tools("everything"));
    let message = input_of(&everything, "get-annotated-message");
    assert_eq!(
        message["properties"]["messageType"]["enum"],
        json!(["error", "success", "debug"])
    );
    assert_eq!(message["properties"]["includeImage"]["default"], false);
    let count = &input_of(&everything, "get-resource-links")["properties"]["count"];
    assert_eq!(
        (&count["minimum"], &count["maximum"]),
        (&json!(1), &json!(10))
    );
    let gzip = &input_of(&everything, "gzip-file-as-resource")["properties"]["data"];
    assert_eq!(gzip["format"], "uri");
    let git = server_document("git", &captured_tools("git"));
    let since = &input_of(&git, "git_log")["properties"]["start_timestamp"];
    assert_eq!(
        since["anyOf"],
        json!([{"type": "string"}, {"type": "null"}])
    );
    assert_eq!(since["default"], Value::Null);
    let filesystem = server_document("filesystem", &captured_tools("filesystem"));
    let edits = &input_of(&filesystem, "edit_file")["properties"]["edits"]["items"];
    assert_eq!(edits["required"], json!(["oldText", "newText"]));
}

#[test]
fn output_schemas_document_the_result() {
    let tools = captured_tools("filesystem");
    let filesystem = server_document("filesystem", &tools);
    let media = result_schema(&filesystem, "read_media_file");
    assert_eq!(media["$ref"], "#/components/schemas/read_media_file_output");
    let media = deref(&filesystem.document, media);
    let expected = tool(&tools, "read_media_file")["outputSchema"].clone();
    assert_eq!(*media, without_dialect(&expected));
    let variants = &media["properties"]["content"]["items"]["anyOf"];
    assert_eq!(variants[1]["properties"]["type"]["const"], "resource");

    let tools = captured_tools("time");
    let time = server_document("time", &tools);
    let converted = deref(&time.document, result_schema(&time, "convert_time"));
    let source = &converted["properties"]["source"]["$ref"];
    assert_eq!(source, "#/components/schemas/convert_time__TimeResult");
    assert!(converted.get("$defs").is_none());
    let defs = &tool(&tools, "convert_time")["outputSchema"]["$defs"];
    let schemas = &time.document["components"]["schemas"];
    assert_eq!(schemas["convert_time__TimeResult"], defs["TimeResult"]);

    // Without an outputSchema, any JSON.
    let everything = server_document("everything", &captured_tools("everything"));
    assert_eq!(*result_schema(&everything, "echo"), json!({}));
}

#[test]
fn every_error_answer_of_the_bridge_is_documented_with_the_shared_components() {
    let everything = server_document("everything", &captured_tools("everything"));
    let document = &everything.document;
    let responses = &operation(&everything, "echo")["responses"];
    let codes: Vec<&str> = responses
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        codes,
        ["200", "400", "404", "413", "422", "424", "502", "503", "504"]
    );
    let body_schema = |code: &str| {
        let response = deref(document, &responses[code]);
        assert!(response["description"].is_string(), "{code}: {response}");
        deref(document, &response["content"]["application/json"]["schema"]).clone()
    };
    let shared = crate::launch::spec::responses::schemas();
    assert_eq!(body_schema("422"), shared["ValidationError"]);
    assert_eq!(body_schema("424"), shared["ToolError"]);
    for code in ["400", "404", "413", "502", "503", "504"] {
        assert_eq!(body_schema(code), shared["Error"], "{code}");
    }
    // The tool's failure is told apart from the others: its type, and its `result`.
    let tool_error = &shared["ToolError"];
    assert_eq!(tool_error["required"], json!(["result"]));
    assert_eq!(
        tool_error["properties"]["error"]["properties"]["type"]["const"],
        "tool_error"
    );
    assert_refs_resolve(document);
}

#[test]
fn a_body_is_required_only_when_the_tool_has_required_parameters() {
    let everything = server_document("everything", &captured_tools("everything"));
    let required = |tool: &str| operation(&everything, tool)["requestBody"]["required"].clone();
    // The bridge takes an empty body as `{}`, which these tools accept.
    assert_eq!(required("get-tiny-image"), false);
    assert_eq!(required("get-env"), false);
    assert_eq!(required("echo"), true);
    assert_eq!(required("get-sum"), true);
    let bare = server_document("s", &[json!({"name": "bare"})]);
    assert_eq!(operation(&bare, "bare")["requestBody"]["required"], false);
}

/// A tool using what mcpo flattens: `$defs` referring to each other, a pointer into a
/// definition, draft-07 `definitions`, `oneOf`, enums, defaults, recursion through `#`, and an
/// outputSchema with definitions of the same name.
fn crafted_tool() -> Value {
    json!({
        "name": "plan.trip",
        "title": "Plan a trip",
        "description": "  Plans a trip.  ",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.com/trip.json",
            "type": "object",
            "properties": {
                "from": {"$ref": "#/$defs/Place"},
                "to": {"$ref": "https://example.com/trip.json#/$defs/Place"},
                "mode": {"type": "string", "enum": ["car", "train"], "default": "train"},
                "budget": {"oneOf": [{"type": "integer", "minimum": 0}, {"const": "unlimited"}]},
                "zip": {"$ref": "#/$defs/Place/properties/zip"},
                "legacy": {"$ref": "#/definitions/Legacy"},
                "next": {"$ref": "#"},
                "again": {"$ref": "#/properties/mode"},
                "note": {"default": {"$ref": "#/not/a/schema"}, "description": "JSON Schema-like data"},
            },
            "required": ["from", "to"],
            "additionalProperties": false,
            "$defs": {
                "Place": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "pattern": "^[A-Z]"},
                        "zip": {"type": "string", "format": "postal"},
                        "near": {"items": {"$ref": "#/$defs/Place"}, "type": "array"},
                    },
                },
            },
            "definitions": {"Legacy": {"type": "string", "description": "draft-07 style"}},
        },
        "outputSchema": {
            "type": "object",
            "properties": {"stops": {"type": "array", "items": {"$ref": "#/$defs/Place"}}},
            "$defs": {"Place": {"type": "string"}},
        },
        "annotations": {"readOnlyHint": true},
    })
}

#[test]
fn definitions_are_hoisted_and_references_follow() {
    let generated = server_document("travel", &[crafted_tool()]);
    assert_eq!(
        warnings(&generated),
        [
            "travel/plan.trip: a `default` in its schema holds a `$ref` key, which OpenAPI tools \
          take for a reference; the spec leaves that `default` out"
        ]
    );
    let schemas = generated.document["components"]["schemas"]
        .as_object()
        .unwrap();
    let keys: Vec<_> = schemas.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "Error",
            "ValidationError",
            "ToolError",
            "plan.trip_input",
            "plan.trip__Place",
            "plan.trip__Legacy",
            "plan.trip_output",
            "plan.trip__Place_2",
        ]
    );
    let c = |name: &str| format!("#/components/schemas/{name}");
    let input = &schemas["plan.trip_input"];
    assert!(["$schema", "$id", "$defs", "definitions"]
        .iter()
        .all(|k| input.get(k).is_none()));
    let properties = &input["properties"];
    assert_eq!(properties["from"]["$ref"], c("plan.trip__Place"));
    assert_eq!(properties["to"]["$ref"], c("plan.trip__Place"));
    let zip = c("plan.trip__Place/properties/zip");
    assert_eq!(properties["zip"]["$ref"], zip);
    assert_eq!(properties["legacy"]["$ref"], c("plan.trip__Legacy"));
    assert_eq!(properties["next"]["$ref"], c("plan.trip_input"));
    assert_eq!(
        properties["again"]["$ref"],
        c("plan.trip_input/properties/mode")
    );
    // Data is not a schema, but a `$ref` key in it would read as a reference.
    assert_eq!(
        properties["note"],
        json!({"description": "JSON Schema-like data"})
    );
    // Everything else as written.
    assert_eq!(
        properties["mode"],
        crafted_tool()["inputSchema"]["properties"]["mode"]
    );
    assert_eq!(
        properties["budget"],
        crafted_tool()["inputSchema"]["properties"]["budget"]
    );
    assert_eq!(input["additionalProperties"], false);
    assert_eq!(input["required"], json!(["from", "to"]));
    let place = &schemas["plan.trip__Place"];
    let near = &place["properties"]["near"]["items"]["$ref"];
    assert_eq!(near, &c("plan.trip__Place"));
    assert_eq!(place["properties"]["name"]["pattern"], "^[A-Z]");
    // The output's `Place` is another schema than the input's.
    assert_eq!(schemas["plan.trip__Place_2"], json!({"type": "string"}));
    let stops = &schemas["plan.trip_output"]["properties"]["stops"]["items"]["$ref"];
    assert_eq!(stops, &c("plan.trip__Place_2"));
    assert_refs_resolve(&generated.document);

    let op = operation(&generated, "plan.trip");
    assert_eq!(op["summary"], "Plan a trip");
    assert_eq!(op["description"], "  Plans a trip.  ");
    assert_eq!(op["operationId"], "tool_plan_trip");
    assert_eq!(op["x-mcp-annotations"], json!({"readOnlyHint": true}));
    assert_eq!(op["requestBody"]["required"], true);
}

#[test]
fn older_forms_are_translated_to_2020_12() {
    let tool = json!({"name": "old", "inputSchema": {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}],
                     "additionalItems": false},
            "above": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
            "below": {"type": "number", "maximum": 9, "exclusiveMaximum": false},
        },
    }});
    let generated = server_document("s", &[tool]);
    let properties = &input_of(&generated, "old")["properties"];
    assert_eq!(
        properties["pair"],
        json!({"type": "array", "items": false,
               "prefixItems": [{"type": "string"}, {"type": "number"}]})
    );
    assert_eq!(
        properties["above"],
        json!({"type": "number", "exclusiveMinimum": 0})
    );
    assert_eq!(properties["below"], json!({"type": "number", "maximum": 9}));
}

#[test]
fn unresolvable_references_are_removed_with_a_warning() {
    let tool = json!({"name": "t", "inputSchema": {
        "type": "object",
        "properties": {
            "url": {"$ref": "https://example.com/other.json#/X", "description": "kept"},
            "anchor": {"$ref": "#thing"},
            "missing": {"$ref": "#/$defs/Missing"},
            "whole": {"$ref": "#/$defs"},
            "number": {"$ref": 5},
        },
        "$defs": {"Present": {"type": "string"}},
    }});
    let generated = server_document("s", &[tool]);
    let properties = &input_of(&generated, "t")["properties"];
    assert_eq!(properties["url"], json!({"description": "kept"}));
    assert_eq!(properties["anchor"], json!({}));
    assert_refs_resolve(&generated.document);
    let references: Vec<_> = (generated.warnings.iter())
        .map(|w| match w {
            ToolWarning::UnresolvedReference { reference, .. } => reference.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        references,
        [
            "https://example.com/other.json#/X",
            "#thing",
            "#/$defs/Missing",
            "#/$defs",
            "5"
        ]
    );
    assert_eq!(
        generated.warnings[1].to_string(),
        "s/t: its schema refers to `#thing`, which it does not define; the spec documents that \
         part as any value"
    );
}

#[test]
fn odd_tools_are_left_out_with_warnings() {
    let tools = [
        json!("not a tool"),
        json!({"description": "no name"}),
        json!({"name": "read file", "inputSchema": {"type": "object"}}),
        json!({"name": "a/b"}),
        json!({"name": "docs"}),
        json!({"name": "ok", "description": 7, "inputSchema": ["x"], "outputSchema": true,
               "annotations": "readOnly"}),
        json!({"name": "ok", "description": "second"}),
        json!({"name": "bare"}),
    ];
    let generated = server_document("s", &tools);
    assert_eq!(generated.tools, ["ok", "bare"]);
    assert_eq!(
        warnings(&generated),
        [
            "s: entry 0 of its tools/list has no name; left out of the spec",
            "s: entry 1 of its tools/list has no name; left out of the spec",
            "s/read file: left out of the spec, the name cannot be a URL path segment as is (a \
             URL path cannot hold whitespace unencoded)",
            "s/a/b: left out of the spec, the name cannot be a URL path segment as is (`/` \
             would split it into two path segments)",
            "s/docs: left out of the spec, the name cannot be a URL path segment as is (the \
             server's own page has that path)",
            "s/ok: its inputSchema is not a JSON object; the spec documents the arguments as any \
             object",
            "s/ok: its outputSchema is not a JSON object; the spec documents the result as any \
             JSON",
            "s/ok: tools/list has this name twice; only the first is served",
        ]
    );
    let ok = operation(&generated, "ok");
    assert_eq!(*input_of(&generated, "ok"), json!({"type": "object"}));
    assert_eq!(*result_schema(&generated, "ok"), json!({}));
    assert!(ok.get("description").is_none() && ok.get("x-mcp-annotations").is_none());
    assert_eq!(ok["summary"], "Ok");
    assert_eq!(*input_of(&generated, "bare"), json!({"type": "object"}));
    assert_eq!(server_document("s", &[]).document["paths"], json!({}));
}

#[test]
fn names_stay_unique_and_valid() {
    let tools = [
        json!({"name": "a.b", "annotations": {"title": "Old-style title"}}),
        json!({"name": "a-b", "title": "  "}),
        json!({"name": "a:b"}),
        json!({"name": "ValidationError"}),
    ];
    let generated = server_document("s", &tools);
    let ids: Vec<_> = ["a.b", "a-b", "a:b", "ValidationError"]
        .iter()
        .map(|t| operation(&generated, t)["operationId"].clone())
        .collect();
    assert_eq!(
        ids,
        [
            "tool_a_b",
            "tool_a_b_2",
            "tool_a_b_3",
            "tool_ValidationError"
        ]
    );
    let summaries: Vec<_> = ["a.b", "a-b"]
        .iter()
        .map(|t| operation(&generated, t)["summary"].clone())
        .collect();
    assert_eq!(summaries, ["Old-style title", "A b"]);
    let schemas = generated.document["components"]["schemas"]
        .as_object()
        .unwrap();
    let keys: Vec<_> = schemas.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "Error",
            "ValidationError",
            "ToolError",
            "a.b_input",
            "a-b_input",
            "a_b_input",
            "ValidationError_input"
        ]
    );
}

#[test]
fn the_same_tools_give_byte_identical_documents() {
    let tools = captured_tools("everything");
    let first = serde_json::to_string(&server_document("e", &tools).document).unwrap();
    for _ in 0..3 {
        let again = serde_json::to_string(&server_document("e", &tools).document).unwrap();
        assert_eq!(again, first);
    }
}
