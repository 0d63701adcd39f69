//! The generated documents of every captured server, merged with the real merge, through the
//! real OpenAPI validator (scripts/install-test-deps.sh installs it into .deps/).

use serde_json::json;

use super::{assert_refs_resolve, captured, crafted_tool};
use crate::launch::controller::native::openapi::{server_document, GeneratedDocument};
use crate::launch::spec::validator::validate;
use crate::launch::spec::{merge, MergeOptions, MergeWarning};
use crate::launch::{Exposure, ServerExposure, ToolRule};

/// An exposure allowing every tool of every document.
fn allow_all(generated: &[GeneratedDocument]) -> Exposure {
    let mut exposure = Exposure::new();
    for document in generated {
        let allow = ToolRule {
            allowed: true,
            description: None,
        };
        let tools = document.tools.iter().map(|t| (t.clone(), allow.clone()));
        let tools = tools.collect();
        exposure.insert(
            &document.server,
            ServerExposure {
                enabled: true,
                started: true,
                tools,
            },
        );
    }
    exposure
}

#[test]
fn generated_and_merged_documents_pass_the_openapi_validator() {
    let mut generated: Vec<_> = (captured().into_iter())
        .map(|(server, tools)| server_document(&server, &tools))
        .collect();
    let odd = [
        crafted_tool(),
        json!({"name": "tree", "inputSchema": {"type": "object",
               "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}}),
        json!({"name": "tuple", "inputSchema": {"type": "object", "properties": {"p":
               {"type": "array", "items": [{"type": "string"}], "additionalItems": false}}}}),
        json!({"name": "broken", "inputSchema": {"$ref": "other.json"}, "outputSchema":
               {"$defs": {"B": true}, "$ref": "#/$defs/B"}}),
    ];
    generated.push(server_document("crafted", &odd));
    let sources: Vec<_> = generated.iter().map(GeneratedDocument::source).collect();
    let exposure = allow_all(&generated);
    let spec = merge(
        &sources,
        &exposure,
        &MergeOptions::for_stack("all", "http://x"),
    );
    let tools: usize = generated.iter().map(|g| g.tools.len()).sum();
    assert_eq!(spec.operations, tools);
    let dropped: Vec<_> = (spec.warnings.iter())
        .filter(|w| !matches!(w, MergeWarning::TooManyOperations { .. }))
        .filter(|w| !matches!(w, MergeWarning::DescriptionTrimmed { .. }))
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
    assert_refs_resolve(&spec.document);
    let tree = &spec.document["components"]["schemas"]["crafted__tree_input"];
    let child = &tree["properties"]["children"]["items"]["$ref"];
    assert_eq!(child, "#/components/schemas/crafted__tree_input");

    let mut documents = vec![("merged".to_string(), &spec.document)];
    documents.extend(generated.iter().map(|g| (g.server.clone(), &g.document)));
    validate(&documents);
}

#[test]
fn the_error_components_are_kept_once_for_every_server() {
    let generated: Vec<_> = (captured().into_iter())
        .map(|(server, tools)| server_document(&server, &tools))
        .collect();
    let sources: Vec<_> = generated.iter().map(GeneratedDocument::source).collect();
    let spec = merge(
        &sources,
        &allow_all(&generated),
        &MergeOptions::for_stack("all", "http://x"),
    );
    let components = &spec.document["components"];
    let shared = crate::launch::spec::responses::schemas();
    for (name, schema) in &shared {
        assert_eq!(&components["schemas"][name], schema);
    }
    let per_server: Vec<&String> = (components["schemas"].as_object().unwrap().keys())
        .chain(components["responses"].as_object().unwrap().keys())
        .filter(|name| name.ends_with("Error") && name.contains("__"))
        .collect();
    assert!(per_server.is_empty(), "copied per server: {per_server:?}");
    // Each operation: its result, the bridge's answers and the front's.
    for item in spec.document["paths"].as_object().unwrap().values() {
        let codes: Vec<&str> = (item["post"]["responses"].as_object().unwrap().keys())
            .map(String::as_str)
            .collect();
        let expected = [
            "200", "400", "404", "413", "422", "424", "502", "503", "504", "401", "403",
        ];
        assert_eq!(codes, expected, "{item}");
    }
    assert_refs_resolve(&spec.document);
}
