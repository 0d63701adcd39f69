//! The generated documents of every captured server, merged with the real merge, through the
//! real OpenAPI validator (scripts/install-test-deps.sh installs it into .deps/).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{assert_refs_resolve, captured, crafted_tool};
use crate::launch::native::openapi::{server_document, GeneratedDocument};
use crate::launch::openapi::{merge, MergeOptions, MergeWarning};
use crate::launch::{Exposure, ServerExposure, ToolRule};

/// Runs the real validator on `documents`, all in one run; skips with a note when it is not
/// installed.
fn validate(documents: &[(String, &Value)]) {
    let validator =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/venv-openapi/bin/openapi-spec-validator");
    if !validator.exists() {
        eprintln!(
            "skipped: {} is missing (run scripts/install-test-deps.sh)",
            validator.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (documents.iter())
        .map(|(name, document)| {
            let file = dir.path().join(format!("{name}.json"));
            std::fs::write(&file, serde_json::to_vec_pretty(document).unwrap()).unwrap();
            file
        })
        .collect();
    let output = Command::new(&validator).args(&files).output().unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

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
