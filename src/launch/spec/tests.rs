//! `merge` against real mcpo documents (tests/fixtures/mcpo, captured from mcpo 0.0.20).

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Value};

use super::*;

fn fixture(server: &str) -> Value {
    let text = match server {
        "everything" => include_str!("../../../tests/fixtures/mcpo/everything.json"),
        "time" => include_str!("../../../tests/fixtures/mcpo/time.json"),
        "filesystem" => include_str!("../../../tests/fixtures/mcpo/filesystem.json"),
        "memory" => include_str!("../../../tests/fixtures/mcpo/memory.json"),
        "broken" => include_str!("../../../tests/fixtures/mcpo/broken.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixtures are JSON")
}

/// The tool names of a document, in path order.
fn tools_of(document: &Value) -> Vec<String> {
    let paths = document["paths"].as_object().into_iter().flatten();
    paths
        .map(|(p, _)| p.trim_start_matches('/').to_string())
        .collect()
}

const ALLOW: ToolRule = ToolRule {
    allowed: true,
    description: None,
};

/// Servers with their documents and an exposure that allows every tool.
struct Stack {
    documents: Vec<(String, Value)>,
    exposure: Exposure,
}

impl Stack {
    fn of(servers: &[&str]) -> Self {
        let documents: Vec<_> = servers
            .iter()
            .map(|s| (s.to_string(), fixture(s)))
            .collect();
        let mut exposure = Exposure::new();
        for (server, document) in &documents {
            let tools = tools_of(document).into_iter().map(|t| (t, ALLOW)).collect();
            exposure.insert(
                server.clone(),
                ServerExposure {
                    enabled: true,
                    started: true,
                    tools,
                },
            );
        }
        Self {
            documents,
            exposure,
        }
    }

    fn set_rule(&mut self, server: &str, tool: &str, rule: ToolRule) {
        let mut exposure = self.exposure.server(server).expect("server").clone();
        exposure.tools.insert(tool.to_string(), rule);
        self.exposure.insert(server, exposure);
    }

    fn deny(&mut self, server: &str, tool: &str) {
        let rule = ToolRule {
            allowed: false,
            description: None,
        };
        self.set_rule(server, tool, rule);
    }

    fn merge(&self) -> MergedSpec {
        let sources: Vec<_> = (self.documents.iter())
            .map(|(server, document)| ServerDocument { server, document })
            .collect();
        merge(
            &sources,
            &self.exposure,
            &MergeOptions::for_stack("test", "https://x.test/"),
        )
    }
}

fn paths(spec: &MergedSpec) -> Vec<&str> {
    spec.document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn schemas(spec: &MergedSpec) -> Vec<&str> {
    let schemas = spec.document["components"]["schemas"].as_object();
    schemas
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .collect()
}

fn operation<'a>(spec: &'a MergedSpec, path: &str) -> &'a Value {
    &spec.document["paths"][path]["post"]
}

fn all_refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| match v {
            Value::String(r) if k == "$ref" => found.push(r),
            _ => all_refs(v, found),
        }),
        Value::Array(items) => items.iter().for_each(|v| all_refs(v, found)),
        _ => {}
    }
}

fn warnings(spec: &MergedSpec) -> Vec<String> {
    spec.warnings.iter().map(ToString::to_string).collect()
}

#[test]
fn read_output_is_documented_only_when_the_exposure_reads_outputs() {
    let mut stack = Stack::of(&["time"]);
    assert!(!paths(&stack.merge()).contains(&"/read_output"));
    stack.exposure.set_reads_outputs(true);
    let spec = stack.merge();
    assert_eq!(
        paths(&spec),
        [
            "/time/get_current_time",
            "/time/convert_time",
            "/read_output"
        ]
    );
    let operation = &spec.document["paths"]["/read_output"]["post"];
    assert_eq!(operation["operationId"], "read_output");
    let body = &operation["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["required"], json!(["handle"]));
    // The error answers it names are in the document.
    for code in ["401", "404", "422"] {
        let reference = operation["responses"][code]["$ref"].as_str().unwrap();
        let name = reference.rsplit('/').next().unwrap();
        assert!(
            spec.document["components"]["responses"].get(name).is_some(),
            "{code}: {reference}"
        );
    }
    assert_eq!(spec.operations, 2, "tools only");
}

#[test]
fn paths_are_exactly_the_allowed_tools_under_their_server() {
    let mut stack = Stack::of(&["everything", "time"]);
    stack.deny("everything", "get-env");
    let spec = stack.merge();
    let mut expected: Vec<String> = tools_of(&fixture("everything"))
        .into_iter()
        .filter(|t| t != "get-env")
        .map(|t| format!("/everything/{t}"))
        .collect();
    expected.extend(["/time/get_current_time".into(), "/time/convert_time".into()]);
    assert_eq!(paths(&spec), expected);
    assert_eq!(spec.operations, 14);
    assert_eq!(
        spec.per_server,
        [("everything".into(), 12), ("time".into(), 2)]
    );
    assert!(spec.warnings.is_empty(), "{:?}", warnings(&spec));
}

#[test]
fn a_denied_tools_components_go_and_shared_ones_stay() {
    let mut stack = Stack::of(&["memory"]);
    let before = stack.merge();
    stack.deny("memory", "create_entities");
    let after = stack.merge();
    let gone: Vec<_> = (schemas(&before).into_iter())
        .filter(|s| !schemas(&after).contains(s))
        .collect();
    assert_eq!(
        gone,
        [
            "memory__create_entities_form_model",
            "memory__create_entities_form_model_entities_item_model",
            "memory__create_entities_response_model",
            "memory__create_entities_response_model_entities_item_model",
        ]
    );
    assert!(schemas(&after).contains(&"memory__HTTPValidationError"));
    assert!(schemas(&after).contains(&"memory__ValidationError"));
}

#[test]
fn every_ref_resolves_and_every_component_name_is_valid() {
    let spec = Stack::of(&["everything", "time", "filesystem", "memory"]).merge();
    let mut refs = Vec::new();
    all_refs(&spec.document, &mut refs);
    assert!(refs.len() > 50, "the fixtures are full of refs");
    for reference in refs {
        let pointer = reference.strip_prefix('#').expect("local ref");
        assert!(
            spec.document.pointer(pointer).is_some(),
            "{reference} resolves"
        );
    }
    let name = regex::Regex::new(r"^[a-zA-Z0-9\.\-_]+$").unwrap();
    for (kind, members) in spec.document["components"].as_object().unwrap() {
        for key in members.as_object().unwrap().keys() {
            assert!(name.is_match(key), "{kind}/{key}");
        }
    }
    // Every server keeps all its components here: every tool is allowed.
    let everything = fixture("everything");
    let expected: Vec<String> = (everything["components"]["schemas"].as_object().unwrap())
        .keys()
        .map(|k| format!("everything__{k}"))
        .collect();
    let prefixed: Vec<&str> = (schemas(&spec).into_iter())
        .filter(|s| s.starts_with("everything__"))
        .collect();
    assert_eq!(prefixed, expected);
}

#[test]
fn operation_ids_are_unique_function_names() {
    let spec = Stack::of(&["everything", "time", "filesystem", "memory"]).merge();
    let ids: Vec<&str> = (spec.document["paths"].as_object().unwrap().values())
        .map(|item| item["post"]["operationId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 38);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    assert!(ids
        .iter()
        .all(|id| id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')));
    assert_eq!(
        operation(&spec, "/everything/get-sum")["operationId"],
        "everything_get_sum"
    );
    assert_eq!(
        operation(&spec, "/time/convert_time")["operationId"],
        "time_convert_time"
    );
}

#[test]
fn operation_id_collisions_are_numbered_in_path_order() {
    let document = json!({"paths": {
        "/get-sum": {"post": {"responses": {}}},
        "/get_sum": {"post": {"responses": {}}},
        "/both": {"get": {"responses": {}}, "post": {"responses": {}}},
    }});
    let tools = ["get-sum", "get_sum", "both"]
        .map(|t| (t.to_string(), ALLOW))
        .into();
    let mut exposure = Exposure::new();
    exposure.insert(
        "a",
        ServerExposure {
            enabled: true,
            started: true,
            tools,
        },
    );
    let sources = [ServerDocument {
        server: "a",
        document: &document,
    }];
    let spec = merge(
        &sources,
        &exposure,
        &MergeOptions::for_stack("t", "http://h"),
    );
    let id = |path: &str, method: &str| spec.document["paths"][path][method]["operationId"].clone();
    assert_eq!(id("/a/get-sum", "post"), "a_get_sum");
    assert_eq!(id("/a/get_sum", "post"), "a_get_sum_2");
    assert_eq!(id("/a/both", "get"), "a_both_get");
    assert_eq!(id("/a/both", "post"), "a_both_post");
    assert_eq!(spec.operations, 4);
}

#[test]
fn a_description_override_replaces_the_description_and_keeps_the_summary() {
    let mut stack = Stack::of(&["everything"]);
    let rule = ToolRule {
        allowed: true,
        description: Some("Adds a and b.".into()),
    };
    stack.set_rule("everything", "get-sum", rule);
    let spec = stack.merge();
    let op = operation(&spec, "/everything/get-sum");
    assert_eq!(op["description"], "Adds a and b.");
    assert_eq!(op["summary"], "Get-Sum");
}

#[test]
fn long_descriptions_are_trimmed_with_a_warning_naming_the_fix() {
    let mut stack = Stack::of(&["filesystem"]);
    let long = "word ".repeat(100);
    let rule = ToolRule {
        allowed: true,
        description: Some(long),
    };
    stack.set_rule("filesystem", "read_file", rule);
    let spec = stack.merge();
    let limit = CHATGPT_DESCRIPTION_LIMIT;
    for item in spec.document["paths"].as_object().unwrap().values() {
        let description = item["post"]["description"].as_str().unwrap();
        assert!(description.chars().count() <= limit, "{description}");
    }
    let original = fixture("filesystem")["paths"]["/read_text_file"]["post"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    let trimmed = operation(&spec, "/filesystem/read_text_file")["description"].clone();
    assert_eq!(trimmed, trim_description(&original, limit));
    let before = original.chars().count();
    let after = trimmed.as_str().unwrap().chars().count();
    let expected = MergeWarning::DescriptionTrimmed {
        server: "filesystem".into(),
        tool: "read_text_file".into(),
        before,
        after,
    };
    assert!(spec.warnings.contains(&expected));
    assert_eq!(
        expected.to_string(),
        format!(
            "filesystem/read_text_file: description cut from {before} to {after} characters; set \
             a shorter one with `mcp-launch tool describe filesystem read_text_file --text \"…\"`"
        )
    );
    assert!(warnings(&spec)
        .iter()
        .any(|w| w.starts_with("filesystem/read_file: description cut from 500")));
}

#[test]
fn more_operations_than_the_limit_warn_with_the_counts_and_the_ways_out() {
    let spec = Stack::of(&["everything", "filesystem", "memory"]).merge();
    assert_eq!(spec.operations, 13 + 14 + 9);
    let too_many: Vec<_> = (warnings(&spec).into_iter())
        .filter(|w| w.starts_with("the spec has"))
        .collect();
    assert_eq!(
        too_many,
        [
            "the spec has 36 operations (everything 13, filesystem 14, memory 9), over the limit \
          of 30 per ChatGPT action: deny tools (`mcp-launch tool deny SERVER TOOL…`), disable \
          servers (`mcp-launch server disable SERVER`) or split the servers across config files \
          (one stack per `--config`)"
        ]
    );
    assert!(!warnings(&Stack::of(&["everything", "filesystem"]).merge())
        .iter()
        .any(|w| w.starts_with("the spec has")));
}

#[test]
fn a_server_mcpo_could_not_start_and_a_missing_document_warn() {
    let mut stack = Stack::of(&["time", "broken"]);
    let tools = BTreeMap::from([("x".to_string(), ALLOW)]);
    stack.exposure.insert(
        "ghost",
        ServerExposure {
            enabled: true,
            started: true,
            tools,
        },
    );
    let spec = stack.merge();
    assert_eq!(
        paths(&spec),
        ["/time/get_current_time", "/time/convert_time"]
    );
    assert_eq!(spec.per_server, [("time".into(), 2), ("broken".into(), 0)]);
    assert_eq!(
        warnings(&spec),
        [
            "broken: mcpo serves no tools for it (it could not start the server); see why with \
             `mcp-launch list broken` or `mcp-launch up -v`",
            "ghost: mcpo gave no OpenAPI document for it, so its tools are not in the spec; see \
             why with `mcp-launch list ghost` or `mcp-launch up -v`",
        ]
    );
    assert_eq!(
        spec.document["info"]["description"],
        "MCP tools served by mcp-launch. Servers: time."
    );
}

#[test]
fn a_disabled_server_is_absent_without_a_warning() {
    let mut stack = Stack::of(&["everything", "time"]);
    let mut time = stack.exposure.server("time").unwrap().clone();
    time.enabled = false;
    stack.exposure.insert("time", time);
    let spec = stack.merge();
    assert!(paths(&spec).iter().all(|p| p.starts_with("/everything/")));
    let mut copied = schemas(&spec)
        .into_iter()
        .filter(|s| *s != responses::ERROR);
    assert!(copied.all(|s| s.starts_with("everything__")));
    assert_eq!(spec.per_server, [("everything".into(), 13)]);
    assert!(spec.warnings.is_empty());
}

#[test]
fn a_tool_the_exposure_does_not_know_is_left_out() {
    let mut stack = Stack::of(&["time"]);
    stack.exposure.insert(
        "time",
        ServerExposure {
            enabled: true,
            started: true,
            tools: BTreeMap::from([("get_current_time".to_string(), ALLOW)]),
        },
    );
    let spec = stack.merge();
    assert_eq!(paths(&spec), ["/time/get_current_time"]);
    assert!(!schemas(&spec).iter().any(|s| s.contains("convert_time")));
    assert_eq!(
        warnings(&spec),
        [
            "time/convert_time: left out of the spec, the tool index does not know this tool; \
          refresh it with `mcp-launch list time --refresh` and restart the stack"
        ]
    );
}

#[test]
fn security_is_one_api_key_for_the_whole_document() {
    let spec = Stack::of(&["everything", "memory"]).merge();
    let text = serde_json::to_string(&spec.document).unwrap();
    assert!(!text.contains("HTTPBearer"));
    assert_eq!(spec.document["security"], json!([{"apiKey": []}]));
    let schemes = spec.document["components"]["securitySchemes"]
        .as_object()
        .unwrap();
    assert_eq!(schemes.keys().collect::<Vec<_>>(), ["apiKey"]);
    assert_eq!(schemes["apiKey"]["type"], "apiKey");
    assert_eq!(schemes["apiKey"]["in"], "header");
    assert_eq!(schemes["apiKey"]["name"], "X-API-Key");
    let ops = spec.document["paths"].as_object().unwrap().values();
    assert!(ops
        .into_iter()
        .all(|item| item["post"].get("security").is_none()));
}

#[test]
fn the_header_names_the_stack_version_and_public_url() {
    let spec = Stack::of(&["time"]).merge();
    assert_eq!(spec.document["openapi"], "3.1.0");
    assert_eq!(spec.document["info"]["title"], "mcp-launch: test");
    assert_eq!(spec.document["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(spec.document["servers"], json!([{"url": "https://x.test"}]));
}

#[test]
fn odd_documents_are_skipped_with_warnings_not_panics() {
    let odd = json!({
        "paths": {
            "/ok": {"post": {"responses": {"200": {"description": "ok", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/a b"}}}}}}},
            "/missing": {"post": {"requestBody": {"$ref": "#/components/requestBodies/nope"}}},
            "/external": {"post": {"responses": {"$ref": "other.json#/x"}}},
            "/scalar": 7,
            "no-slash": {},
        },
        "components": {"schemas": {"a b": {"type": "string"}}, "parameters": 3},
    });
    let not_an_object = json!([1, 2]);
    let no_paths = json!({"paths": "none"});
    let tools = ["ok", "missing", "external", "scalar"]
        .map(|t| (t.to_string(), ALLOW))
        .into();
    let mut exposure = Exposure::new();
    exposure.insert(
        "odd",
        ServerExposure {
            enabled: true,
            started: true,
            tools,
        },
    );
    for server in ["array", "str"] {
        exposure.insert(
            server,
            ServerExposure {
                enabled: true,
                started: true,
                tools: BTreeMap::new(),
            },
        );
    }
    let sources = [
        ServerDocument {
            server: "odd",
            document: &odd,
        },
        ServerDocument {
            server: "odd",
            document: &odd,
        },
        ServerDocument {
            server: "array",
            document: &not_an_object,
        },
        ServerDocument {
            server: "str",
            document: &no_paths,
        },
        ServerDocument {
            server: "stranger",
            document: &odd,
        },
    ];
    let spec = merge(&sources, &exposure, &MergeOptions::for_stack("t", ""));
    assert_eq!(paths(&spec), ["/odd/ok"]);
    assert_eq!(schemas(&spec), ["odd__a_b", "Error"]);
    let schema = &operation(&spec, "/odd/ok")["responses"]["200"]["content"]["application/json"];
    assert_eq!(schema["schema"]["$ref"], "#/components/schemas/odd__a_b");
    assert_eq!(spec.document["servers"], json!([{"url": "/"}]));
    assert_eq!(
        warnings(&spec),
        [
            "odd: mcpo's OpenAPI document is malformed (`components.parameters` is not an \
             object); that part is left out",
            "odd/missing: left out of the spec, it refers to `#/components/requestBodies/nope`, \
             which mcpo's document does not define",
            "odd/external: left out of the spec, it refers to `other.json#/x`, which mcpo's \
             document does not define",
            "odd: mcpo's OpenAPI document is malformed (path `/scalar` is not an inline path \
             item object); that part is left out",
            "odd: mcpo's OpenAPI document is malformed (path `no-slash` does not start with \
             `/`); that part is left out",
            "odd: a second OpenAPI document for this server is ignored",
            "array: mcpo's OpenAPI document is malformed (not a JSON object); that part is left \
             out",
            "str: mcpo's OpenAPI document is malformed (`paths` is not an object); that part is \
             left out",
            "stranger: not a server of this stack, its OpenAPI document is ignored",
        ]
    );
}

#[test]
fn the_same_input_gives_byte_identical_output() {
    let stack = Stack::of(&["everything", "time", "filesystem", "memory", "broken"]);
    let first = serde_json::to_string_pretty(&stack.merge().document).unwrap();
    for _ in 0..3 {
        assert_eq!(
            serde_json::to_string_pretty(&stack.merge().document).unwrap(),
            first
        );
    }
}

/// The real validator (scripts/install-test-deps.sh installs it into .deps/).
#[test]
fn openapi_spec_validator_accepts_the_merged_document() {
    let mut stack = Stack::of(&["everything", "time", "filesystem", "memory", "broken"]);
    stack.deny("memory", "create_entities");
    let spec = stack.merge();
    super::validator::validate(&[("openapi".to_string(), &spec.document)]);
}

#[test]
fn every_operation_documents_the_fronts_error_answers() {
    let spec = Stack::of(&["everything", "time"]).merge();
    for (path, item) in spec.document["paths"].as_object().unwrap() {
        let answers = &item["post"]["responses"];
        assert_eq!(answers["200"]["description"], "Successful Response");
        for code in responses::FRONT_STATUSES {
            assert_eq!(answers[code], responses::response_ref(code), "{path}");
        }
    }
    // mcpo's own answers stay as they are.
    let fastapi_422 = &operation(&spec, "/time/get_current_time")["responses"]["422"];
    let schema = &fastapi_422["content"]["application/json"]["schema"]["$ref"];
    assert_eq!(schema, "#/components/schemas/time__HTTPValidationError");
    // Only the shared components the operations reach, each once.
    let components = &spec.document["components"];
    let shared: Vec<&String> = components["responses"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        shared,
        [
            "Unauthorized",
            "ToolDenied",
            "NotFound",
            "ServerUnavailable",
            "StackUnavailable"
        ]
    );
    assert_eq!(
        components["schemas"]["Error"],
        responses::schemas()[responses::ERROR]
    );
    assert!(components["schemas"].get(responses::TOOL_ERROR).is_none());
}

#[test]
fn a_component_named_like_a_shared_one_but_different_is_copied_per_server() {
    let stack = Stack::of(&["time"]);
    // FastAPI's own `ValidationError`, reached by mcpo's 422: not ours, so renamed.
    assert!(stack.documents[0].1["components"]["schemas"]["ValidationError"].is_object());
    let spec = stack.merge();
    let names = schemas(&spec);
    assert!(names.contains(&"time__ValidationError"), "{names:?}");
    assert!(!names.contains(&responses::VALIDATION_ERROR), "{names:?}");
}
